"""``innodb-replay report``: from a bundle, or straight from a Prometheus, one HTML file that tells what
happened in the window.

A bundle holds raw samples. The report reads them the way the dashboards would after ``import``: the
families the charts and the rules read (and no other) go through the importer's checks into a scratch
Prometheus of its own, the bottleneck classes the bundle lacks are computed into it by promtool from the
stack's recording rules (as ``import`` computes them), and the same queries then run as against a live
Prometheus. The classes are never evaluated again in Python: their one declaration stays the rules'.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

from innodb_bundle import limits
from innodb_bundle.bundle import BundleError, BundleReader
from innodb_bundle.terminal import printable
from signals import bottleneck as b

from .. import TOOL, links, replay_prometheus
from ..endpoints import Endpoint
from ..export import Prometheus, capture_texts, list_captures, parse_time
from ..importer import import_families, metric_names, read_alerting_rules, read_rules
from . import ReportError, charts, evidence, page, runbooks
from .incident import CAPTURES, SETTING_CHANGES, Incident, expression_names, gather

# The stack's rule files: the bottleneck classes (and the records the alerts read), the alerting rules.
DEFAULT_RULES_DIR = os.path.join(links.CHECKOUT, "alerts", "rules")
TEXTS_BYTES = 64 * limits.MiB  # the newest raw texts of a bundle read for the evidence
ALWAYS = {"innodb_up", "up", "ALERTS", b.STATE, b.WINNER, CAPTURES.name, SETTING_CHANGES.name}


def default_rules() -> list[str]:
    try:
        return sorted(os.path.join(DEFAULT_RULES_DIR, n) for n in os.listdir(DEFAULT_RULES_DIR) if n.endswith(".yml"))
    except OSError:
        return []


def run(args) -> int:
    """The command: the report written to ``args.out``, or ReportError and nothing written."""
    started = time.monotonic()
    if bool(args.bundle) == bool(args.prometheus):
        raise ReportError("give a bundle, or --prometheus URL with --start (and --end)")
    if os.path.isdir(args.out):
        raise ReportError(f"--out {args.out} is a directory: name the report's file")
    files = args.rules or default_rules()
    if not files:
        print("innodb-replay report: no rule files (no checkout's alerts/rules/ here; give --rules): no classes "
              "are computed, and alerts only from the source's ALERTS", file=sys.stderr)
    recording, alerting = read_rules(files), read_alerting_rules(files)
    with _terminated_cleanly():
        if args.bundle:
            incident, texts, meta = _from_bundle(args, files, recording, alerting)
        else:
            incident, texts, meta = _from_prometheus(args, alerting)
    meta.styles = class_styles()
    meta.attach_bytes = int(args.attach * limits.MiB)
    captures = evidence.read(texts)
    if texts:
        print(f"read {len(captures)} evidence capture{'s' if len(captures) != 1 else ''} from {len(texts)} texts",
              file=sys.stderr, flush=True)
    html = page.render(incident, captures, runbooks.load(), meta)
    _write(args.out, html)
    fired = sum(len(s.alerts) for s in incident.servers)
    print(f"wrote {args.out} ({len(html.encode()) / 1e6:.2f} MB) in {time.monotonic() - started:.1f}s: "
          f"{_count(len(incident.servers), 'server')}, {_count(fired, 'alert')} fired, {_count(len(captures), 'capture')}")
    return 0


@contextlib.contextmanager
def _terminated_cleanly():
    """SIGTERM ends the report as Ctrl-C does: the scratch Prometheus is stopped and its directory removed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(*_):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _window(args, start_ms: int | None = None, end_ms: int | None = None) -> tuple[int, int]:
    """--start and --end, within the bundle's window when there is one."""
    start = parse_time(args.start) if args.start else start_ms
    end = parse_time(args.end) if args.end else end_ms
    if start is None:
        raise ReportError("--prometheus needs --start (now-6h, unix seconds or 2026-11-21T06:40:00Z)")
    end = int(time.time() * 1000) if end is None else end
    if start_ms is not None:
        start, end = max(start, start_ms), min(end, end_ms)
    if end <= start:
        raise ReportError("the window is empty: --end must be after --start" + (
            " (and the window inside the bundle's)" if start_ms is not None else ""))
    if end - start > limits.WINDOW_MS:
        raise ReportError(f"the window is longer than {limits.WINDOW_MS // limits.HOUR_MS} hours: report it in parts")
    return start, end


def _from_bundle(args, files: list[str], recording: list[dict], alerting: list[dict]):
    try:
        with BundleReader(args.bundle) as reader:
            manifest = reader.manifest
            texts = [(name[len("texts/"):], text) for name, text in reader.texts("", TEXTS_BYTES)]
    except BundleError as exc:
        raise ReportError(str(exc)) from None
    start, end = _window(args, manifest.window_start_ms, manifest.window_end_ms)
    names = charts.names() | ALWAYS
    for rule in recording + alerting:
        names |= expression_names(rule["expr"])
    scratch = tempfile.mkdtemp(prefix="innodb-replay-report-")
    data = os.path.join(scratch, "data")
    try:
        print(f"reading {args.bundle}: the {len(names)} metrics the report reads", file=sys.stderr, flush=True)
        import_families(args.bundle, data, names, args.promtool_timeout, progress=True)
        port = replay_prometheus.free_port()
        url = replay_prometheus.start(data, port)
        present = metric_names(url)
        # The classes, and the records the alerting rules read where the bundle has no ALERTS to say what fired
        # (not the healthy state: nothing here reads it, and it costs a promtool run of its own).
        wanted = [r for r in recording if (r.get("labels") or {}).get("class") != b.HEALTHY_CLASS.key
                  and (r["record"] in (b.STATE, b.WINNER) or "ALERTS" not in present)]
        classes_how = _classes_how(present, [f for f in files if read_rules([f])])
        url = replay_prometheus.compute_missing_rules(url, wanted, manifest, data, port, args.promtool_timeout)
        incident = gather(Prometheus(url), start, end, alerting, args.instance)
    finally:
        replay_prometheus.stop(data)
        shutil.rmtree(scratch, ignore_errors=True)
    source = f"the bundle {os.path.basename(args.bundle)} ({manifest.kind} of {_source(manifest.source)})"
    return incident, texts, page.Meta(source, TOOL, classes_how)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _classes_how(present: set[str], files: list[str]) -> str:
    if b.WINNER in present:
        return "the bundle's own series of the bottleneck rules (instance:innodb_bottleneck:class)"
    shown = ", ".join(os.path.relpath(f, links.CHECKOUT) if f.startswith(links.CHECKOUT) else f for f in files)
    return (f"computed over the bundle's samples by promtool from the recording rules of {shown or 'no rule file'}, "
            "every 15 s, as innodb-replay import computes them for the dashboards")


def _source(source) -> str:
    return printable(source if isinstance(source, str) else ", ".join(source), 300)


def _from_prometheus(args, alerting: list[dict]):
    start, end = _window(args)
    prometheus = Prometheus(args.prometheus)
    texts: list[tuple[str, str]] = []
    if args.captures:
        exporter = Endpoint.parse(args.captures.rstrip("/"), args.captures_password_file, "--captures-password-file")
        for capture_id, files in capture_texts(exporter, list_captures(exporter, start, end)):
            texts += [(f"{capture_id}-{name}", text) for name, text in files or ()]
    print(f"reading {prometheus.url} from {start / 1000:.0f} to {end / 1000:.0f}", file=sys.stderr, flush=True)
    incident: Incident = gather(prometheus, start, end, alerting, args.instance)
    how = ("the Prometheus's recording rules (instance:innodb_bottleneck:class)" if incident.classes_found else
           "the Prometheus holds no instance:innodb_bottleneck:class in the window: load the stack's "
           "alerts/rules/bottleneck.yml into it, or export the window and report the bundle, which computes them")
    return incident, texts, page.Meta(f"the Prometheus at {prometheus.url}", TOOL, how)


def class_styles() -> dict[int, tuple[str, str]]:
    """Each class code's name and colour as the Overview draws them (its generated JSON, read from the
    checkout); empty outside a checkout, where the report draws the classes grey with their names."""
    try:
        index = links.find_index(None)
        uid = index.dashboards[0][0] if index else None
        with open(os.path.join(links.CHECKOUT, "dashboards", "grafana", f"{uid}.json"), encoding="utf-8") as f:
            panels = json.load(f)["panels"]
    except (OSError, ValueError, KeyError, TypeError, IndexError, links.DashboardIndexError):
        return {}
    for panel in panels:
        if any(t.get("expr", "").startswith(b.WINNER) for t in panel.get("targets", [])):
            for mapping in panel.get("fieldConfig", {}).get("defaults", {}).get("mappings", []):
                options = mapping.get("options", {})
                return {int(code): (o["text"], o["color"]) for code, o in options.items()}
    return {}


def _write(path: str, html: str) -> None:
    partial = path + ".partial"
    try:
        with open(partial, "w", encoding="utf-8") as f:
            f.write(html)
        os.replace(partial, path)
    except OSError as exc:
        if os.path.exists(partial):
            os.remove(partial)
        raise ReportError(f"cannot write {path}: {exc.strerror}") from None

