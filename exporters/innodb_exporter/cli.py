"""Command line: ``innodb-exporter [flags]`` serves metrics; ``innodb-exporter parse FILE`` reads a saved text.

Flags and the environment follow mysqld_exporter's, so that the two run side by side with one my.cnf.
This module only parses flags; config.py validates them.
"""

from __future__ import annotations

import argparse
import logging
import sys

from . import __version__, config, offline, sources
from .replay import bundle
from .http import Targets, make_app, serve
from .logs import setup as setup_logging

log = logging.getLogger("innodb_exporter")

DEFAULT_LISTEN = ":9207"


def server_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="innodb-exporter",
        description="Prometheus exporter for the inside of InnoDB. Also: 'innodb-exporter parse FILE'.",
        epilog=f"The password comes from {config.PASSWORD_ENV} or the my.cnf; it is never printed.",
    )
    p.add_argument("--web.listen-address", dest="web_listen_address", default=DEFAULT_LISTEN,
                   help=f"address to listen on (default {DEFAULT_LISTEN})")
    p.add_argument("--web.telemetry-path", dest="web_telemetry_path", default="/metrics",
                   help="path of the metrics of the default server (default /metrics)")
    p.add_argument("--web.config.file", dest="web_config_file", default="",
                   help="exporter-toolkit web config (TLS, basic auth)")
    p.add_argument("--config.my-cnf", dest="config_my_cnf", default=config.DEFAULT_MY_CNF,
                   help="my.cnf with [client] credentials, and [client.NAME] sections for /probe auth_module "
                        "(default ~/.my.cnf)")
    p.add_argument("--mysqld.address", dest="mysqld_address", default=None,
                   help="default server, HOST:PORT or unix:///path/to/socket (default: the my.cnf's, else localhost:3306)")
    p.add_argument("--mysqld.username", dest="mysqld_username", default=None, help="user to connect as")
    p.add_argument("--timeout-offset", dest="timeout_offset", type=float, default=0.25,
                   help="seconds taken off Prometheus' scrape timeout to answer in time (default 0.25)")
    p.add_argument("--scrape.timeout", dest="scrape_timeout", type=float, default=10.0,
                   help="deadline of a scrape when the scraper sends no timeout header (default 10)")
    for source in sources.ALL:
        p.add_argument(f"--collect.{source.NAME}", dest=f"collect_{source.NAME}", default=True,
                       action=argparse.BooleanOptionalAction, help=f"read {source.NAME} (default on)")
    p.add_argument("--collect.latches.top", dest="top", type=int, default=20,
                   help="series kept per latch family before the rest is summed as 'other' (default 20)")
    p.add_argument("--innodb_metrics.enable", dest="enable_counters", action="store_true",
                   help="enable the INNODB_METRICS counters this exporter uses that are off "
                        "(needs SUPER or SYSTEM_VARIABLES_ADMIN)")
    p.add_argument("--log.level", dest="log_level", default="info", choices=["debug", "info", "warn", "error"])
    p.add_argument("--log.format", dest="log_format", default="logfmt", choices=["logfmt", "json"])
    p.add_argument("--version", action="version", version=f"innodb-exporter {__version__}")
    return p


def parse_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="innodb-exporter parse",
        description="Print the metrics a saved SHOW ENGINE INNODB STATUS text yields, in the Prometheus text "
                    "format, with the live exporter's names. With several outputs in the file, the last complete one.",
    )
    p.add_argument("file", help="the saved text, a bundle of innodb-replay record --texts, or - for standard input")
    p.add_argument("--openmetrics", action="store_true", help="print OpenMetrics instead of the text format")
    p.add_argument("--collect.latches.top", dest="top", type=int, default=20)
    return p


def run_parse(argv: list[str]) -> int:
    args = parse_parser().parse_args(argv)
    try:
        if args.file == "-":
            text = sys.stdin.buffer.read().decode("utf-8", "replace")
        elif bundle.is_bundle(args.file):
            text = _bundle_texts(args.file)
        else:
            with open(args.file, "rb") as f:
                text = f.read().decode("utf-8", "replace")
    except OSError as exc:
        print(f"innodb-exporter parse: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 1
    except bundle.BundleError as exc:
        print(f"innodb-exporter parse: {exc}", file=sys.stderr)
        return 1
    result = offline.parse_text(text, args.top)
    for problem in result.status.problems:
        print(f"innodb-exporter parse: {problem}", file=sys.stderr)
    if result.status.sections_found == 0:
        print(f"innodb-exporter parse: {args.file} holds no SHOW ENGINE INNODB STATUS output", file=sys.stderr)
        return 1
    if result.outputs_found > 1:
        print(f"innodb-exporter parse: {result.outputs_found} monitor outputs found; metrics of the last complete one",
              file=sys.stderr)
    sys.stdout.buffer.write(offline.render(result, args.openmetrics))
    return 0


def _bundle_texts(path: str) -> str:
    """The status texts a recorded bundle keeps, in time order, as one text of several outputs."""
    reader = bundle.BundleReader(path)
    try:
        reader.verify()
        texts = [text for name, text in reader.texts() if name.endswith("engine-innodb-status.txt")]
    finally:
        reader.close()
    if not texts:
        raise bundle.BundleError(f"{path} holds no status texts (innodb-replay record keeps them with --texts)")
    return "\n".join(texts)


def run_server(argv: list[str]) -> int:
    args = server_parser().parse_args(argv)
    args.disabled_sources = {s.NAME for s in sources.ALL if not getattr(args, f"collect_{s.NAME}")}
    setup_logging(args.log_level, args.log_format)
    cfg, problems = config.load(args)
    if problems:
        for problem in problems:
            print(f"innodb-exporter: {problem}", file=sys.stderr)
        return 2
    targets = Targets(cfg)
    if targets.default is None:
        log.warning("no default server configured: /metrics has only the exporter's own metrics; use /probe")
    else:
        log.info("default server %s as %s", cfg.connection.address, cfg.connection.user)
    try:
        serve(cfg, make_app(cfg, targets))
    except OSError as exc:
        print(f"innodb-exporter: cannot listen on {args.web_listen_address}: {exc.strerror}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "parse":
        return run_parse(argv[1:])
    return run_server(argv)
