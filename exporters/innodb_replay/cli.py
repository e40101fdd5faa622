"""Replay an incident's metrics: export them off a Prometheus, record them where none runs, import them;
and measure what a settings change did.

``innodb-replay export | record | import | stop | impact``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile

from innodb_bundle import limits
from innodb_bundle.bundle import BundleError
from innodb_bundle.manifest import iso
from innodb_bundle.terminal import printable
from innodb_exporter import config
from innodb_exporter.scraping.connection import ConnectionSettings

from . import __version__, links
from .endpoints import Endpoint, EndpointError
from .export import DEFAULT_SELECTOR, ExportError, export, parse_time
from .impact import ImpactError
from .importer import (ReplayImportError, backfill_rules, import_bundle, metric_names, missing_rule_runs, read_rules,
                       serves, sparse_samples_note, wait_ready, write_rules)
from .links import DashboardIndexError, dashboard_urls, find_index, prometheus_graph_url, rate_panels
from .processes import Process
from .record import RecordError, Target, record

DEFAULT_REPLAY_DIR = os.path.join(".stack", "replay")
HOME_SUFFIX = ".prometheus"  # the replay Prometheus' pid file and log: a directory of its own beside the data
HOME_FILES = {"prometheus.pid", "prometheus.log"}
# The stack's recording rules, those the bundle lacks computed for its window: from the checkout this runs
# from (as the dashboards' index), not from the working directory.
DEFAULT_RULES = tuple(os.path.join(links.CHECKOUT, "alerts", "rules", name)
                      for name in ("recording.yml", "bottleneck.yml"))


def _positive(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="innodb-replay", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"innodb-replay {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser("export", help="a time window of a Prometheus into a bundle")
    e.add_argument("--prometheus", default="http://127.0.0.1:9090",
                   help="Prometheus URL; user:password@ in it is sent as basic auth, never stored")
    e.add_argument("--start", required=True, help="now-30m, unix seconds, or 2026-11-21T06:40:00Z")
    e.add_argument("--end", default="now", help="as --start (default now)")
    e.add_argument("--selector", default=DEFAULT_SELECTOR, help=f"series to export (default {DEFAULT_SELECTOR})")
    e.add_argument("--chunk-samples", type=int, default=50_000,
                   help="samples per chunk: what bounds memory (default 50000)")
    e.add_argument("--captures", metavar="URL",
                   help="also keep the evidence captures an exporter took in the window: its base URL, e.g. "
                        "http://127.0.0.1:9207 (user:password@ for basic auth, or --captures-password-file)")
    e.add_argument("--captures-password-file", metavar="FILE", help="the password for the --captures user")
    e.add_argument("--out", required=True, help="the bundle file to write")
    e.add_argument("--quiet", action="store_true", help="no progress")

    r = sub.add_parser("record", help="scrape exporters into a bundle where no Prometheus runs; Ctrl-C ends it")
    r.add_argument("--target", action="append", required=True, metavar="JOB=URL",
                   help="an exporter to scrape, e.g. innodb=http://127.0.0.1:9207/metrics (repeatable); "
                        "http://user:password@host/… or http://user@host/… with --target-password-file "
                        "scrapes with basic auth")
    r.add_argument("--target-password-file", metavar="FILE",
                   help="the basic auth password for targets whose URL has a user but no password (first line)")
    r.add_argument("--instance", required=True, help="the server's address: the instance label the dashboards select")
    r.add_argument("--interval", type=_positive, default=5.0, help="seconds between scrapes (default 5)")
    r.add_argument("--duration", type=_positive, help="seconds to record (default: until Ctrl-C)")
    r.add_argument("--out", required=True)
    r.add_argument("--texts", action="store_true",
                   help="also keep raw SHOW ENGINE INNODB STATUS / MUTEX texts (they can hold query text)")
    r.add_argument("--texts-interval", type=_positive, default=60.0, help="seconds between texts (default 60)")
    r.add_argument("--mysqld.address", dest="mysqld_address", help="server for --texts (HOST:PORT or unix:///path)")
    r.add_argument("--mysqld.username", dest="mysqld_username")
    r.add_argument("--config.my-cnf", dest="config_my_cnf", default=config.DEFAULT_MY_CNF)

    i = sub.add_parser("import", help="a bundle into a fresh Prometheus data directory, and serve it")
    i.add_argument("bundle")
    i.add_argument("--data-dir", default=os.path.join(DEFAULT_REPLAY_DIR, "data"),
                   help=f"a new or empty directory (default {DEFAULT_REPLAY_DIR}/data); the replay Prometheus "
                        f"keeps its pid file and log in DATA_DIR{HOME_SUFFIX}/")
    i.add_argument("--port", type=int, default=9099, help="the replay Prometheus' port (default 9099)")
    i.add_argument("--no-start", action="store_true",
                   help="only write the blocks (e.g. for the compose profile `replay`); with nothing started, the "
                        "recording rules the bundle lacks are not computed")
    i.add_argument("--rules", action="append", metavar="FILE",
                   help="a rule file whose recording rules are computed where the bundle lacks their series "
                        "(repeatable; default: alerts/rules/recording.yml and bottleneck.yml of the checkout)")
    i.add_argument("--grafana", default="http://localhost:3000", help="Grafana URL for the printed links")
    i.add_argument("--dashboards-index", metavar="FILE",
                   help="dashboards/index.json naming the dashboards to link (default: the checkout's)")
    i.add_argument("--promtool-timeout", type=_positive, default=limits.PROMTOOL_TIMEOUT_S,
                   help=f"seconds one promtool run may take before it is killed (default {limits.PROMTOOL_TIMEOUT_S:g})")

    s = sub.add_parser("stop", help="stop the replay Prometheus that import started")
    s.add_argument("--data-dir", default=os.path.join(DEFAULT_REPLAY_DIR, "data"))

    m = sub.add_parser("impact", help="what a settings change did: each headline figure before and after it, "
                                      "against the noise band")
    m.add_argument("--prometheus", default="http://127.0.0.1:9090",
                   help="a Prometheus HTTP API: the stack's, a Thanos Query, or an imported bundle's replay "
                        "Prometheus (http://127.0.0.1:9099); user:password@ in it is sent as basic auth")
    which = m.add_mutually_exclusive_group(required=True)
    which.add_argument("--setting", metavar="NAME", help="the latest change of this setting the exporter marked")
    which.add_argument("--at", metavar="TIME", help="a moment instead: unix seconds, 2026-11-21T06:40:00Z or now-30m")
    m.add_argument("--instance", help="the server (HOST:PORT, its instance label); needed when the Prometheus "
                                      "watches more than one")
    m.add_argument("--window", type=duration_arg, default=600.0, help="length of each window (default 10m)")
    m.add_argument("--settle", type=duration_arg, default=60.0,
                   help="time after the change before the after window starts (default 1m)")
    m.add_argument("--end", default="now", help="with --setting: the latest change before this time (default now; "
                                                "for a bundle older than 31 days, its window's end)")
    m.add_argument("--across-restart", action="store_true",
                   help="compare even when the server restarted inside or between the windows (the table says so)")
    m.add_argument("--json", action="store_true", help="the result as JSON")
    return p


def duration_arg(text: str) -> float:
    """``90s``, ``10m``, ``1h`` or seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        seconds = float(text[:-1]) * units[text[-1]] if text[-1:] in units else float(text)
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError("a duration: 90s, 10m, 1h") from None
    if not 0 <= seconds < 31 * 86400:
        raise argparse.ArgumentTypeError("between 0 and 31 days")
    return seconds


def prometheus_home(data_dir: str) -> str:
    """The replay Prometheus' own directory: .stack/replay/data.prometheus for the default data directory,
    where ./innodb-stack down finds its pid file too."""
    return os.path.abspath(data_dir) + HOME_SUFFIX


def _prometheus_process(data_dir: str) -> Process:
    home = prometheus_home(data_dir)
    return Process(os.path.join(home, "prometheus.pid"), os.path.join(home, "prometheus.log"))


def _check_home(data_dir: str) -> None:
    """The replay Prometheus writes only into a directory of its own, which holds nothing it did not create."""
    home = prometheus_home(data_dir)
    if os.path.lexists(home) and (not os.path.isdir(home) or os.path.islink(home)
                                  or set(os.listdir(home)) - HOME_FILES):
        raise ReplayImportError(f"{home} exists and holds what innodb-replay did not put there: "
                                "give another --data-dir")
    if _prometheus_process(data_dir).pid():
        raise ReplayImportError(f"a replay Prometheus already serves {data_dir}: innodb-replay stop --data-dir "
                                f"{data_dir} first")


def start_replay_prometheus(data_dir: str, port: int) -> str:
    """A Prometheus serving ``data_dir`` only (an empty configuration: no scraping), in the background;
    returns its URL."""
    binary = shutil.which("prometheus")
    if not binary:
        raise ReplayImportError("prometheus is not installed (apt-get install prometheus)")
    _check_home(data_dir)
    _check_port(port)
    os.makedirs(prometheus_home(data_dir), mode=0o755, exist_ok=True)
    process = _prometheus_process(data_dir)
    process.start(
        [binary, f"--config.file={os.devnull}", f"--storage.tsdb.path={os.path.abspath(data_dir)}",
         "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"])
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, alive=lambda: process.pid() is not None)
    if not serves(url, data_dir):
        process.stop()
        raise ReplayImportError(f"the Prometheus answering at {url} does not serve {data_dir}: give --port")
    return url


def _check_port(port: int) -> None:
    """What answers on a taken port would be another Prometheus, with other data."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As Prometheus binds: a port whose last connections still wait out TIME_WAIT is free to it.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            raise ReplayImportError(f"127.0.0.1:{port} is in use (another replay Prometheus?): give --port, or "
                                    "stop what listens there") from None


def stop_replay_prometheus(data_dir: str) -> bool:
    return _prometheus_process(data_dir).stop(timeout=30)


def _texts_settings(args) -> ConnectionSettings:
    problems: list[str] = []
    cnf = os.path.expanduser(args.config_my_cnf)
    try:
        section = config.read_my_cnf(cnf).get("client", {}) if os.path.exists(cnf) else {}
    except (config.MyCnfError, OSError, UnicodeDecodeError) as exc:  # their messages quote no line of it
        raise RecordError(f"--texts: cannot read {cnf}: {getattr(exc, 'strerror', None) or exc}") from None
    settings = config.connection_from(section, args.mysqld_address, args.mysqld_username,
                                      os.environ.get(config.PASSWORD_ENV), problems, f"[client] of {cnf}")
    if problems:
        raise RecordError("--texts: " + "; ".join(problems))
    return settings


def _print_import(result, prometheus_url: str | None, args, index) -> None:
    m, c = result.manifest, result.contents
    print(f"imported {c.samples} samples of {c.series} series ({m.kind} bundle, {iso(m.window_start_ms)} to "
          f"{iso(m.window_end_ms)}) into {result.data_dir} in {result.seconds:.1f}s")
    if note := sparse_samples_note(c.spacing_s, rate_panels(index.path) if index else None):
        print(f"innodb-replay import: {note}", file=sys.stderr)
    if prometheus_url:
        print(f"replay Prometheus: {prometheus_url}  (graph: {prometheus_graph_url(prometheus_url, m)})")
    else:
        print(f"serve it: REPLAY_DATA_DIR={os.path.abspath(args.data_dir)} REPLAY_USER={os.getuid()}:{os.getgid()} "
              "docker compose --profile replay up -d replay-prometheus")
        print("innodb-replay import: --no-start computes no recording rules: where the bundle lacks their series "
              "(an export has no bottleneck series), the bottleneck panels stay empty", file=sys.stderr)
    if index is None:
        print("no dashboard links: no dashboards/index.json in the checkout this runs from; "
              "give --dashboards-index FILE")
        return
    print(f"dashboards on the bundle's window (Grafana's data source {index.replay_datasource!r}):")
    for title, url in dashboard_urls(args.grafana, index, m, c.instances[0] if c.instances else None):
        print(f"  {title}: {url}")


def _import(args) -> None:
    index = find_index(args.dashboards_index)
    rules = []
    if not args.no_start:
        _check_home(args.data_dir)
        _check_port(args.port)
        files = args.rules or [f for f in DEFAULT_RULES if os.path.exists(f)]
        if not files:
            print("innodb-replay import: no recording rules to compute (no checkout's alerts/rules/ here): give "
                  "--rules, or the bottleneck timeline stays empty where the bundle lacks its series", file=sys.stderr)
        rules = read_rules(files)  # before the import: a rule file that cannot be read stops it
    result = import_bundle(args.bundle, args.data_dir, args.promtool_timeout, progress=True)
    url = None
    if not args.no_start:
        url = start_replay_prometheus(args.data_dir, args.port)
        with tempfile.TemporaryDirectory(prefix="innodb-replay-rules-") as scratch:
            runs = missing_rule_runs(rules, metric_names(url))
            for number, run in enumerate(runs, start=1):
                path = write_rules(run, os.path.join(scratch, f"run{number}.yml"))
                blocks = backfill_rules(url, path, result.manifest, args.data_dir, args.promtool_timeout)
                names = ", ".join(sorted({r["record"] for r in run}))
                print(f"recording rules the bundle lacks, run {number} of {len(runs)}: {names} "
                      f"(TSDB blocks written: {blocks})", file=sys.stderr)
                if blocks:
                    stop_replay_prometheus(args.data_dir)  # it loads the new blocks on start
                    url = start_replay_prometheus(args.data_dir, args.port)
    _print_import(result, url, args, index)


def _record(args) -> int:
    targets = [Target.parse(t, args.target_password_file) for t in args.target]
    if args.interval > 3600:
        raise RecordError("--interval: at most 3600 seconds")
    texts = _texts_settings(args) if args.texts else None
    print(f"recording {', '.join(printable(t.job, 40) for t in targets)} every {args.interval:g}s into {args.out}; "
          "Ctrl-C ends the recording", file=sys.stderr)
    result = record(targets, args.instance, args.out, args.interval, args.duration, texts, args.texts_interval)
    m = result.manifest
    print(f"recorded {m.samples} samples of {m.series} series "
          f"({(m.window_end_ms - m.window_start_ms) / 1000:.0f}s) to {args.out}")
    if result.left_out:
        print(f"innodb-replay record: {result.left_out} series left out: names or labels longer than a bundle takes",
              file=sys.stderr)
    for job, why in result.silent.items():
        print(f"innodb-replay record: every scrape of {printable(job, 40)} failed ({printable(why)}): "
              "the bundle has no data of it", file=sys.stderr)
    return 1 if result.silent else 0


def _impact(args) -> None:
    import json
    import time

    from . import impact
    from .readings import PrometheusReadings, Queries

    queries = Queries()
    readings = PrometheusReadings(args.prometheus, queries)
    now = time.time()
    end = parse_time(args.end) / 1000
    instance = args.instance or _only_instance(readings, end)
    if args.setting:
        mark = readings.latest_change(instance, args.setting, end, impact.LOOKBACK)
        if mark is None:
            raise ImpactError(f"no change of {args.setting} marked on {instance} in the 31 days before "
                              f"{impact.stamp(end)} (innodb_setting_last_change_timestamp_seconds): check the name "
                              "(docs/metrics.md, 'Settings'), give --end for an older bundle, or --at for a moment")
        at = mark.at
    else:
        mark, at = None, parse_time(args.at) / 1000
    result = impact.measure(readings, queries, instance, mark, at, args.window, args.settle, now, args.across_restart)
    print(json.dumps(impact.document(result), indent=1) if args.json else impact.table(result), end="\n" if args.json else "")


def _only_instance(readings, end: float) -> str:
    found = readings.instances(end - 31 * 86400, end)
    if len(found) == 1:
        return found[0]
    if not found:
        raise ImpactError("no server's innodb_up in the 31 days before the end: is this the stack's Prometheus?")
    raise ImpactError(f"{len(found)} servers: give --instance, one of {', '.join(printable(i, 80) for i in found[:20])}")


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "export":
            captures = (Endpoint.parse(args.captures.rstrip("/"), args.captures_password_file, "--captures-password-file")
                        if args.captures else None)
            result = export(args.prometheus, parse_time(args.start), parse_time(args.end), args.out,
                            args.selector, args.chunk_samples, progress=not args.quiet, captures=captures)
            m = result.manifest
            kept = f", and {result.captures} evidence captures" if captures else ""
            print(f"exported {m.samples} samples of {m.series} series{kept} in {result.seconds:.1f}s "
                  f"({m.samples / max(result.seconds, 1e-9):,.0f} samples/s) to {args.out}")
            if result.left_out:
                print(f"innodb-replay export: {result.left_out} series left out: names or labels longer than a "
                      "bundle takes", file=sys.stderr)
            if result.captures_gone:
                print(f"innodb-replay export: {result.captures_gone} captures left out: the exporter removed them "
                      "(its --capture.max-size) before they were read", file=sys.stderr)
        elif args.command == "record":
            return _record(args)
        elif args.command == "import":
            _import(args)
        elif args.command == "impact":
            _impact(args)
        else:
            print("stopped" if stop_replay_prometheus(args.data_dir) else "no replay Prometheus was running")
    except (ExportError, RecordError, ReplayImportError, BundleError, DashboardIndexError, EndpointError,
            ImpactError) as exc:
        print(f"innodb-replay {args.command}: {printable(exc, 1000)}", file=sys.stderr)
        return 1
    except OSError as exc:  # a file or directory the command was given: its name, not a traceback
        where = f" ({printable(exc.filename, 200)})" if exc.filename else ""
        print(f"innodb-replay {args.command}: {printable(exc.strerror or exc, 200)}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"innodb-replay {args.command}: interrupted; nothing written", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
