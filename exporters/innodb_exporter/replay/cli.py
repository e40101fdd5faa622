"""Replay an incident's metrics: export them off a Prometheus, record them where none runs, import them.

``innodb-replay export | record | import | stop``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from .. import __version__, config
from ..connection import ConnectionSettings
from ..processes import Process
from .bundle import BundleError
from .export import DEFAULT_SELECTOR, ExportError, export, parse_time
from .importer import (
    ReplayImportError,
    backfill_rules,
    dashboard_urls,
    import_bundle,
    needs_recording_rules,
    prometheus_url_for,
    wait_ready,
)
from .record import RecordError, Target, record

DEFAULT_REPLAY_DIR = os.path.join(".stack", "replay")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="innodb-replay", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"innodb-replay {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser("export", help="a time window of a Prometheus into a bundle")
    e.add_argument("--prometheus", default="http://127.0.0.1:9090", help="Prometheus URL")
    e.add_argument("--start", required=True, help="now-30m, unix seconds, or 2026-11-21T06:40:00Z")
    e.add_argument("--end", default="now")
    e.add_argument("--selector", default=DEFAULT_SELECTOR, help=f"series to export (default {DEFAULT_SELECTOR})")
    e.add_argument("--chunk-samples", type=int, default=50_000,
                   help="samples per chunk: what bounds memory (default 50000)")
    e.add_argument("--out", required=True, help="the bundle file to write")
    e.add_argument("--quiet", action="store_true", help="no progress")

    r = sub.add_parser("record", help="scrape exporters into a bundle where no Prometheus runs; Ctrl-C ends it")
    r.add_argument("--target", action="append", required=True, metavar="JOB=URL",
                   help="an exporter to scrape, e.g. innodb=http://127.0.0.1:9207/metrics (repeatable)")
    r.add_argument("--instance", required=True, help="the server's address: the instance label the dashboards select")
    r.add_argument("--interval", type=float, default=5.0, help="seconds between scrapes (default 5)")
    r.add_argument("--duration", type=float, help="seconds to record (default: until Ctrl-C)")
    r.add_argument("--out", required=True)
    r.add_argument("--texts", action="store_true",
                   help="also keep raw SHOW ENGINE INNODB STATUS / MUTEX texts (they can hold query text)")
    r.add_argument("--texts-interval", type=float, default=60.0, help="seconds between texts (default 60)")
    r.add_argument("--mysqld.address", dest="mysqld_address", help="server for --texts (HOST:PORT or unix:///path)")
    r.add_argument("--mysqld.username", dest="mysqld_username")
    r.add_argument("--config.my-cnf", dest="config_my_cnf", default=config.DEFAULT_MY_CNF)

    i = sub.add_parser("import", help="a bundle into a fresh Prometheus data directory, and serve it")
    i.add_argument("bundle")
    i.add_argument("--data-dir", default=os.path.join(DEFAULT_REPLAY_DIR, "data"),
                   help=f"a new or empty directory (default {DEFAULT_REPLAY_DIR}/data)")
    i.add_argument("--port", type=int, default=9099, help="the replay Prometheus' port (default 9099)")
    i.add_argument("--no-start", action="store_true",
                   help="only write the blocks (e.g. for the compose profile `replay`)")
    i.add_argument("--rules", default=os.path.join("alerts", "rules", "recording.yml"),
                   help="recording rules to compute for recorded bundles")
    i.add_argument("--grafana", default="http://localhost:3000", help="Grafana URL for the printed links")

    s = sub.add_parser("stop", help="stop the replay Prometheus that import started")
    s.add_argument("--data-dir", default=os.path.join(DEFAULT_REPLAY_DIR, "data"))
    return p


def _prometheus_process(data_dir: str) -> Process:
    """The replay Prometheus beside its data directory: .stack/replay/prometheus.pid for the default, which
    ./innodb-stack down stops too."""
    home = os.path.dirname(os.path.abspath(data_dir))
    return Process(os.path.join(home, "prometheus.pid"), os.path.join(home, "prometheus.log"))


def start_replay_prometheus(data_dir: str, port: int) -> str:
    """A Prometheus serving ``data_dir`` only (no scraping), in the background; returns its URL."""
    binary = shutil.which("prometheus")
    if not binary:
        raise ReplayImportError("prometheus is not installed (apt-get install prometheus)")
    config_file = os.path.join(os.path.dirname(os.path.abspath(data_dir)), "prometheus.yml")
    with open(config_file, "w") as f:
        f.write("# The replay Prometheus: it serves imported blocks and scrapes nothing.\nglobal: {}\n")
    _prometheus_process(data_dir).start(
        [binary, f"--config.file={config_file}", f"--storage.tsdb.path={data_dir}",
         "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"])
    url = f"http://127.0.0.1:{port}"
    wait_ready(url)
    return url


def stop_replay_prometheus(data_dir: str) -> bool:
    return _prometheus_process(data_dir).stop(timeout=30)


def _texts_settings(args) -> ConnectionSettings:
    problems: list[str] = []
    cnf = os.path.expanduser(args.config_my_cnf)
    section = config.read_my_cnf(cnf).get("client", {}) if os.path.exists(cnf) else {}
    settings = config.connection_from(section, args.mysqld_address, args.mysqld_username,
                                      os.environ.get(config.PASSWORD_ENV), problems, f"[client] of {cnf}")
    if problems:
        raise RecordError("--texts: " + "; ".join(problems))
    return settings


def _print_import(result, prometheus_url: str | None, grafana: str) -> None:
    m = result.manifest
    print(f"imported {m.samples} samples of {m.series} series ({m.kind} bundle, {m.window_start_ms / 1000:.0f}–"
          f"{m.window_end_ms / 1000:.0f}) into {result.data_dir} in {result.seconds:.1f}s")
    if prometheus_url:
        print(f"replay Prometheus: {prometheus_url}  (graph: {prometheus_url_for(prometheus_url, m)})")
    print("dashboards on the bundle's window (Grafana's 'Replay' data source):")
    for url in dashboard_urls(grafana, m, result.instances[0] if result.instances else None):
        print(f"  {url}")


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "export":
            result = export(args.prometheus, parse_time(args.start), parse_time(args.end), args.out,
                            args.selector, args.chunk_samples, progress=not args.quiet)
            m = result.manifest
            print(f"exported {m.samples} samples of {m.series} series in {result.seconds:.1f}s "
                  f"({m.samples / max(result.seconds, 1e-9):,.0f} samples/s) to {args.out}")
        elif args.command == "record":
            targets = [Target.parse(t) for t in args.target]
            texts = _texts_settings(args) if args.texts else None
            print(f"recording {', '.join(t.job for t in targets)} every {args.interval:g}s into {args.out}; "
                  "Ctrl-C ends the recording", file=sys.stderr)
            m = record(targets, args.instance, args.out, args.interval, args.duration, texts, args.texts_interval)
            print(f"recorded {m.samples} samples of {m.series} series "
                  f"({(m.window_end_ms - m.window_start_ms) / 1000:.0f}s) to {args.out}")
        elif args.command == "import":
            result = import_bundle(args.bundle, args.data_dir)
            url = None
            if not args.no_start:
                url = start_replay_prometheus(args.data_dir, args.port)
                if needs_recording_rules(result.manifest) and os.path.exists(args.rules):
                    if backfill_rules(url, args.rules, result.manifest, args.data_dir):
                        stop_replay_prometheus(args.data_dir)  # it loads the new blocks on start
                        url = start_replay_prometheus(args.data_dir, args.port)
            else:
                for root, dirs, files in os.walk(args.data_dir):  # the compose service runs as another user
                    for name in dirs + files:
                        os.chmod(os.path.join(root, name), 0o777 if name in dirs else 0o666)
            _print_import(result, url, args.grafana)
        else:
            print("stopped" if stop_replay_prometheus(args.data_dir) else "no replay Prometheus was running")
    except (ExportError, RecordError, ReplayImportError, BundleError) as exc:
        print(f"innodb-replay {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"innodb-replay {args.command}: interrupted; nothing written", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
