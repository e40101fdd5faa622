"""Command line: ``innodb-exporter [flags]`` serves metrics; ``innodb-exporter parse FILE`` reads a saved text.

Flags and the environment follow mysqld_exporter's, so that the two run side by side with one my.cnf.
This module only parses flags; config.py validates them.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys

from innodb_bundle import bundle

from . import __version__, config, moment, offline, sources
from .app import make_app
from .logs import setup as setup_logging
from .scraping.targets import Targets
from .web import server as webserver

log = logging.getLogger("innodb_exporter")

DEFAULT_LISTEN = ":9207"


def seconds(text: str) -> float:
    """A flag's number of seconds: float() also takes nan and inf, which no duration is."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


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
    p.add_argument("--timeout-offset", dest="timeout_offset", type=seconds, default=0.25,
                   help="seconds taken off Prometheus' scrape timeout to answer in time (default 0.25)")
    p.add_argument("--scrape.timeout", dest="scrape_timeout", type=seconds, default=10.0,
                   help="deadline of a scrape when the scraper sends no timeout header (default 10)")
    for name in sources.NAMES:
        p.add_argument(f"--collect.{name}", dest=f"collect_{name}", default=True,
                       action=argparse.BooleanOptionalAction, help=f"read {name} (default on)")
    p.add_argument("--collect.latches.top", dest="top", type=int, default=None,
                   help="deprecated and ignored: every latch instrument is exported, so that no series flaps")
    probe = p.add_argument_group("/probe", "which servers /probe may connect to, and how many connections it keeps")
    probe.add_argument("--probe.allow", dest="probe_allow", action="append", default=[], metavar="PATTERN",
                       help="a server /probe may connect to with [client]'s credentials or those of a section "
                            "that names no server: HOST:PORT, HOST (any port), a CIDR range, unix:///path, or * for "
                            "any (repeatable). Without this flag or --probe.targets-file, only the server of "
                            "--mysqld.address or [client]. A [client.NAME] section with a host= or socket= of its "
                            "own is for that server only, and that server only for it (auth_module=client.NAME)")
    probe.add_argument("--probe.targets-file", dest="probe_targets_files", action="append", default=[],
                       metavar="FILE", help="a Prometheus file_sd file whose targets /probe may connect to; re-read "
                                            "when it changes (repeatable)")
    probe.add_argument("--probe.max-connections", dest="max_connections", type=int, default=256,
                       help="connections to servers kept open in all (default 256)")
    probe.add_argument("--probe.max-connections-per-server", dest="max_connections_per_server", type=int, default=2,
                       help="connections kept open to one server address, whatever the credentials (default 2)")
    probe.add_argument("--probe.idle-timeout", dest="idle_timeout", type=seconds, default=300.0,
                       help="seconds after which a connection nothing scraped is closed (default 300)")
    p.add_argument("--innodb_metrics.enable", dest="enable_counters", action="store_true",
                   help="enable the INNODB_METRICS counters this exporter uses that are off "
                        "(needs SUPER or SYSTEM_VARIABLES_ADMIN)")
    capture = p.add_argument_group("evidence captures", "raw texts taken when Alertmanager posts a firing alert to "
                                                         "/capture (off without --capture.dir)")
    capture.add_argument("--capture.dir", dest="capture_dir", default="", metavar="DIR",
                         help="where captures are kept; captures are off without it")
    capture.add_argument("--capture.snapshots", dest="capture_snapshots", type=int, default=3,
                         help="snapshots per capture (default 3)")
    capture.add_argument("--capture.interval", dest="capture_interval", type=seconds, default=10.0,
                         help="seconds between snapshots (default 10)")
    capture.add_argument("--capture.deadline", dest="capture_deadline", type=seconds, default=60.0,
                         help="seconds a capture may take in all (default 60)")
    capture.add_argument("--capture.cooldown", dest="capture_cooldown", type=seconds, default=600.0,
                         help="seconds before the same server is captured again; alerts that arrive meanwhile "
                              "are captured when they are over (default 600)")
    capture.add_argument("--capture.max-size", dest="capture_max_size", default="200MiB",
                         help="the most the captures may take on disk; the oldest go first (default 200MiB)")
    capture.add_argument("--capture.query-text", dest="capture_query_text", action="store_true",
                         help="keep statements in the texts (off: each statement and row value becomes its digest "
                              "and length)")
    p.add_argument("--log.level", dest="log_level", default="info", choices=["debug", "info", "warn", "error"])
    p.add_argument("--log.format", dest="log_format", default="logfmt", choices=["logfmt", "json"])
    p.add_argument("--version", action="version", version=f"innodb-exporter {__version__}")
    return p


def parse_parser() -> argparse.ArgumentParser:
    limit = f"{offline.READ_LIMIT_MIB} MiB"
    p = argparse.ArgumentParser(
        prog="innodb-exporter parse",
        description="Print the metrics a saved SHOW ENGINE INNODB STATUS text yields, in the Prometheus text "
                    "format, with the live exporter's names. A file is one output: one holding more than one "
                    "monitor output header is refused, since statement text can forge a header.",
    )
    p.add_argument("file", help="the saved text, a bundle of innodb-replay record --texts or export --captures, "
                                "or - for standard input")
    p.add_argument("--error-log", action="store_true",
                   help="the file is an error log holding several outputs: they are cut at their header lines, "
                        "which statement text can forge, and the last complete one is read; of a file larger "
                        f"than {limit}, its last {limit} (without this flag such a file is refused)")
    p.add_argument("--openmetrics", action="store_true", help="print OpenMetrics instead of the text format")
    return p


def run_parse(argv: list[str]) -> int:
    args = parse_parser().parse_args(argv)
    try:
        texts = None if args.file == "-" else _bundle_texts(args.file)
        if texts is None:  # not a bundle: a saved text, one output or (--error-log) several
            texts, note = offline.load(args.file, args.error_log)
            if note:
                print(f"innodb-exporter parse: {note}", file=sys.stderr)
    except OSError as exc:
        print(f"innodb-exporter parse: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a bundle that cannot be trusted (BundleError), or a text refused (offline.Refused)
        print(f"innodb-exporter parse: {exc}", file=sys.stderr)
        return 1
    result = offline.parse_texts(texts)
    for problem in result.status.problems:
        print(f"innodb-exporter parse: {problem}", file=sys.stderr)
    if result.status.sections_found == 0:
        print(f"innodb-exporter parse: {args.file} holds no SHOW ENGINE INNODB STATUS output", file=sys.stderr)
        return 1
    if result.outputs_found > 1:
        print(f"innodb-exporter parse: {result.outputs_found} monitor outputs found; metrics of the last complete one",
              file=sys.stderr)
    sys.stdout.buffer.write(offline.render(result, args.openmetrics))
    sys.stdout.buffer.flush()
    # On standard error, after the metrics: standard output stays valid exposition text.
    sys.stderr.write(moment.render(moment.assess(result.status)))
    return 0


def _bundle_texts(path: str) -> list[str] | None:
    """The status texts a bundle keeps (recorded, or captured when an alert fired), in time order, each on its
    own, so that no statement text can pass for the start of another output; None when ``path`` is no
    bundle."""
    if not bundle.is_bundle(path):
        return None
    texts = bundle.read_texts(path)
    if not texts:
        raise bundle.BundleError(f"{path} holds no status texts (innodb-replay record keeps them with --texts, "
                                 "export with --captures)")
    return texts


def run_server(argv: list[str]) -> int:
    args = server_parser().parse_args(argv)
    args.disabled_sources = {name for name in sources.NAMES if not getattr(args, f"collect_{name}")}
    setup_logging(args.log_level, args.log_format)
    if args.top is not None:
        log.warning("--collect.latches.top is deprecated and ignored: every latch instrument is exported")
    cfg, problems = config.load(args)
    if problems:
        for problem in problems:
            print(f"innodb-exporter: {problem}", file=sys.stderr)
        return 2
    targets = Targets(cfg.connection, cfg.options, cfg.limits)
    targets.start_janitor()
    if targets.default is None:
        log.warning("no default server configured: /metrics has only the exporter's own metrics; use /probe")
    else:
        log.info("default server %s as %s", cfg.connection.address, cfg.connection.user)
    try:  # until SIGTERM or SIGINT, which end it gracefully
        webserver.serve(make_app(cfg, targets), host=cfg.listen_host, port=cfg.listen_port, web=cfg.web)
    except OSError as exc:
        print(f"innodb-exporter: cannot listen on {args.web_listen_address}: {exc.strerror}", file=sys.stderr)
        return 1
    finally:
        targets.close()  # every database connection ends with COM_QUIT, not a reset
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "parse":
        return run_parse(argv[1:])
    return run_server(argv)
