"""Evidence captured when a page fires: pt-stalk inside the exporter, driven by Alertmanager's webhook.

``POST /capture`` takes Alertmanager's webhook (version 4). For each firing alert's ``instance`` that is a
server this exporter already scrapes (its default server or a ``/probe`` target, with the credentials of
that target), it takes ``snapshots`` snapshots ``interval`` seconds apart of the raw texts the metrics
cannot keep: SHOW ENGINE INNODB STATUS, SHOW ENGINE INNODB MUTEX, INNODB_TRX, the processlist and the
performance_schema latch summary, with the time and the alerts that triggered it, into a store on disk.
An address the webhook names on its own is never connected to.

Bounds: one capture per instance per ``cooldown``; alerts that arrive during it are captured together when
it ends (Alertmanager does not send them again, and a page should not go without its evidence); a capture
never runs past its ``deadline`` and uses the target's own connection (one per server, shared with its
scrapes, held only while a snapshot's queries run); the store never holds more than ``max_bytes``, the
oldest captures dropped first. Statements and row values are reduced to a digest and a length (redact.py)
unless ``query_text`` is on.

Layout: ``<directory>/<id>/capture.json`` (what, when, why, files, errors) and one file per source and
snapshot (``1-engine-innodb-status.txt``, ``1-innodb-trx.tsv``, …). A capture being written lives in
``<id>.partial`` and is renamed when done, so listings show only complete ones.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from ..metrics.families import Family
from ..scraping import addresses
from ..scraping.connection import describe
from ..scraping.targets import Targets
from ..sources.perf_schema_latches import LATCH_INSTRUMENTS
from .redact import digest, redact_status

log = logging.getLogger("innodb_exporter")

MANIFEST = "capture.json"
ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[A-Za-z0-9_.-]{1,120}$")  # a capture's id (its directory)
FILE_RE = re.compile(r"^[0-9]{1,3}-[a-z-]{1,40}\.(txt|tsv)$")  # a snapshot's file

CAPTURES = Family("innodb_exporter_captures_total", "counter", "",
                  "Evidence captures taken of this server since the exporter started (POST /capture).")
LAST_CAPTURE = Family("innodb_exporter_last_capture_timestamp_seconds", "gauge", "seconds",
                      "When the last evidence capture of this server started (unix time); the dashboards mark it.")
FAMILIES = (CAPTURES, LAST_CAPTURE)


@dataclass(frozen=True)
class CaptureSettings:
    directory: str | None = None  # None: captures are off
    snapshots: int = 3
    interval: float = 10.0
    deadline: float = 60.0
    cooldown: float = 600.0
    max_bytes: int = 200 * 1024 * 1024
    query_text: bool = False


class CaptureError(Exception):
    """A webhook that cannot be read (HTTP 400)."""


# --- what a snapshot reads ------------------------------------------------------------------------

def _tsv(header: tuple[str, ...], rows) -> str:
    def cell(value) -> str:
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return "" if value is None else str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")

    return "\n".join(["\t".join(header)] + ["\t".join(cell(v) for v in row) for row in rows]) + "\n"


def _with_digest(rows, column: int, keep_text: bool):
    """Rows with the statement in ``column`` reduced to its digest (unless kept)."""
    if keep_text:
        return rows
    return [tuple(digest(v) if i == column and v else v for i, v in enumerate(row)) for row in rows]


@dataclass(frozen=True)
class _Read:
    name: str  # the file it is kept in (after the snapshot number)
    sql: str
    header: tuple[str, ...] = ()
    statement_column: int | None = None  # the column holding statement text
    needs_performance_schema: bool = False


READS = (
    _Read("engine-innodb-status.txt", "SHOW ENGINE INNODB STATUS"),
    _Read("engine-innodb-mutex.tsv", "SHOW ENGINE INNODB MUTEX", ("type", "name", "status")),
    _Read("innodb-trx.tsv",
          "SELECT trx_id, trx_state, trx_started, TIMESTAMPDIFF(SECOND, trx_started, NOW()), trx_mysql_thread_id,"
          " trx_operation_state, trx_tables_locked, trx_lock_structs, trx_rows_locked, trx_rows_modified,"
          " trx_isolation_level, trx_query FROM information_schema.INNODB_TRX ORDER BY trx_started",
          ("trx_id", "state", "started", "age_seconds", "thread_id", "operation_state", "tables_locked",
           "lock_structs", "rows_locked", "rows_modified", "isolation_level", "query"), 11),
    _Read("processlist.tsv",
          "SELECT ID, USER, HOST, DB, COMMAND, TIME, STATE, INFO FROM information_schema.PROCESSLIST"
          " ORDER BY TIME DESC",
          ("id", "user", "host", "db", "command", "time", "state", "info"), 7),
    _Read("latches.tsv",
          "SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT FROM performance_schema.events_waits_summary_global_by_event_name"
          f" WHERE EVENT_NAME LIKE '{LATCH_INSTRUMENTS}' AND COUNT_STAR > 0 ORDER BY SUM_TIMER_WAIT DESC",
          ("event_name", "count_star", "sum_timer_wait_ps"), needs_performance_schema=True),
)


def _format(read: _Read, rows, keep_text: bool) -> str:
    if read.name.endswith(".txt"):  # the status text: one row, its third column
        text = rows[0][2] if rows else ""
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
        return text if keep_text else redact_status(text)
    if read.statement_column is not None:
        rows = _with_digest(rows, read.statement_column, keep_text)
    return _tsv(read.header, rows)


# --- the store ------------------------------------------------------------------------------------

class CaptureStore:
    """Captures on disk within a byte budget; the oldest complete ones go first."""

    def __init__(self, directory: str, max_bytes: int):
        self.directory = directory
        self.max_bytes = max_bytes
        self._mu = threading.Lock()
        os.makedirs(directory, mode=0o700, exist_ok=True)
        for name in os.listdir(directory):  # a capture cut short by a restart is not evidence
            if name.endswith(".partial"):
                shutil.rmtree(os.path.join(directory, name), ignore_errors=True)

    def _size(self, path: str) -> int:
        return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)

    def used(self) -> int:
        return self._size(self.directory)

    def start(self, capture_id: str) -> str:
        path = os.path.join(self.directory, capture_id + ".partial")
        os.makedirs(path, mode=0o700)
        return path

    def write(self, partial: str, name: str, data: bytes) -> bool:
        """Write one file, evicting the oldest captures to make room; False when it cannot fit at all."""
        with self._mu:
            while self.used() + len(data) > self.max_bytes:
                if not self._evict_oldest():
                    return False
            with open(os.path.join(partial, name), "wb") as f:
                f.write(data)
            return True

    def finish(self, partial: str) -> str:
        final = partial[: -len(".partial")]
        os.rename(partial, final)
        return os.path.basename(final)

    def _evict_oldest(self) -> bool:
        complete = sorted(n for n in os.listdir(self.directory) if ID_RE.match(n))
        if not complete:
            return False
        shutil.rmtree(os.path.join(self.directory, complete[0]), ignore_errors=True)
        log.info("capture store over its budget: dropped the oldest capture %s", complete[0])
        return True

    def list(self) -> list[dict]:
        out = []
        for name in sorted(os.listdir(self.directory), reverse=True):
            if not ID_RE.match(name):
                continue
            try:
                with open(os.path.join(self.directory, name, MANIFEST), encoding="utf-8") as f:
                    out.append(json.load(f))
            except (OSError, ValueError):
                continue
        return out

    def file(self, capture_id: str, name: str) -> bytes | None:
        """A file of a complete capture, by names checked against the store's own (no path from outside)."""
        if not ID_RE.match(capture_id) or not (FILE_RE.match(name) or name == MANIFEST):
            return None
        path = os.path.join(self.directory, capture_id, name)
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError:
            return None


# --- the service ----------------------------------------------------------------------------------

MAX_DEFERRED = 100  # alerts kept for the capture at the end of a cooldown (Alertmanager sends 20 at most)


@dataclass
class _History:
    count: int = 0
    last_started: float | None = None  # unix time
    running: bool = False
    deferred: list[dict] = field(default_factory=list)  # alerts that came during the cooldown


@dataclass
class WebhookAnswer:
    started: list[dict] = field(default_factory=list)  # {"instance", "id"}
    cooling_down: list[dict] = field(default_factory=list)  # {"instance", "until"}: captured then
    refused: list[dict] = field(default_factory=list)  # {"instance", "reason"}

    def to_json(self) -> dict:
        return asdict(self)


class CaptureService:
    def __init__(self, settings: CaptureSettings, targets: "Targets"):
        self.settings = settings
        self.targets = targets
        self.store = CaptureStore(settings.directory, settings.max_bytes) if settings.directory else None
        self._history: dict[str, _History] = {}
        self._mu = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.store is not None

    def webhook(self, body: bytes) -> WebhookAnswer:
        """Start a capture for each instance of the firing alerts that may have one."""
        alerts = _firing_alerts(body)
        by_instance: dict[str, list[dict]] = {}
        answer = WebhookAnswer()
        for alert in alerts:
            instance = alert["labels"].get("instance", "")
            by_instance.setdefault(instance, []).append(alert)
        for instance, group in by_instance.items():
            target = self._target(instance)
            if target is None:
                reason = ("not a server this exporter scrapes: it captures only its default server and the "
                          "targets Prometheus probes through it")
                answer.refused.append({"instance": instance, "reason": reason})
                log.warning("capture refused for %r: %s", instance, reason)
                continue
            with self._mu:
                until = self._cooling_until(target.settings.address)
                if until is not None:
                    self._defer(target.settings.address, instance, group, until)
                    answer.cooling_down.append({"instance": instance, "until": _iso(until)})
                    continue
                capture_id = self._start(target, instance, group)
            answer.started.append({"instance": instance, "id": capture_id})
        return answer

    def _cooling_until(self, key: str) -> float | None:
        """When this server's cooldown ends (or its capture, if one still runs past it); None if it is over."""
        history, now = self._history.get(key), time.time()
        if history is None:
            return None
        if history.running or (history.last_started and now - history.last_started < self.settings.cooldown):
            return max(now, (history.last_started or now) + self.settings.cooldown)
        return None

    def _start(self, target, instance: str, alerts: list[dict]) -> str:
        """Start a capture (under the lock); returns its id."""
        key, now = target.settings.address, time.time()
        history = self._history.setdefault(key, _History())
        history.running, history.last_started = True, now
        history.count += 1
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
        capture_id = f"{stamp}-{_slug(key)}"
        threading.Thread(target=self._capture, args=(target, instance, alerts, capture_id, now), daemon=True,
                         name=f"capture {key}").start()
        return capture_id

    def _defer(self, key: str, instance: str, alerts: list[dict], until: float) -> None:
        """Keep the alerts for a capture when the cooldown ends (under the lock); one timer per server."""
        history = self._history[key]
        if not history.deferred:
            timer = threading.Timer(max(0.0, until - time.time()), self._deferred, args=(key, instance))
            timer.daemon, timer.name = True, f"deferred capture {key}"
            timer.start()
        history.deferred.extend(alerts[: MAX_DEFERRED - len(history.deferred)])

    def _deferred(self, key: str, instance: str) -> None:
        """The cooldown is over: capture for the alerts that came during it, if the server is still scraped."""
        target = self._target(instance)
        with self._mu:
            history = self._history[key]
            alerts, history.deferred = history.deferred, []
            if target is None:
                log.warning("deferred capture of %r dropped: the exporter no longer scrapes it", instance)
                return
            until = self._cooling_until(key)
            if until is not None:  # the last capture still runs: wait for it
                self._defer(key, instance, alerts, max(until, time.time() + 1.0))
                return
            capture_id = self._start(target, instance, alerts)
        log.info("capture %s started at the end of the cooldown, for alerts that came during it", capture_id)

    def _target(self, instance: str):
        try:
            wanted = str(addresses.parse(instance))
        except addresses.AddressError:
            return None
        for target in self.targets.all():
            if target.settings.address == wanted:
                return target
        return None

    def _capture(self, target, instance: str, alerts: list[dict], capture_id: str, started: float) -> None:
        try:
            self._take(target, instance, alerts, capture_id, started)
        except Exception:  # the store could not start it, or could not say so: the next page still gets one
            log.exception("capture %s failed", capture_id)
        finally:
            with self._mu:
                self._history[target.settings.address].running = False

    def _take(self, target, instance: str, alerts: list[dict], capture_id: str, started: float) -> None:
        settings = self.settings
        deadline = time.monotonic() + settings.deadline
        partial = self.store.start(capture_id)
        manifest = {"id": capture_id, "instance": instance, "server": target.settings.address,
                    "started": _iso(started), "alerts": [_alert_summary(a) for a in alerts],
                    "query_text": settings.query_text, "snapshots": [], "errors": [], "truncated": False}
        try:
            for number in range(1, settings.snapshots + 1):
                if time.monotonic() >= deadline:
                    manifest["errors"].append(f"snapshot {number}: the capture deadline ({settings.deadline:g}s) passed")
                    break
                files = self._snapshot(target, partial, number, deadline, manifest)
                manifest["snapshots"].append({"number": number, "at": _iso(time.time()), "files": files})
                if manifest["truncated"] or number == settings.snapshots:
                    break
                time.sleep(max(0.0, min(settings.interval, deadline - time.monotonic())))
        except Exception as exc:  # never let a capture take the exporter down; say what happened
            log.exception("capture %s failed", capture_id)
            manifest["errors"].append(f"{type(exc).__name__}: {exc}")
        finally:
            manifest["finished"] = _iso(time.time())
            if self.store.write(partial, MANIFEST, json.dumps(manifest, indent=1).encode()):
                log.info("captured %s: %d snapshots of %s for %s", self.store.finish(partial),
                         len(manifest["snapshots"]), instance,
                         ", ".join(sorted({a["labels"].get("alertname", "?") for a in alerts})))
            else:  # not even its description fits the budget: keep nothing half-described
                shutil.rmtree(partial, ignore_errors=True)
                log.warning("capture %s dropped: the store's budget (%d bytes) cannot hold it", capture_id,
                            self.settings.max_bytes)

    def _snapshot(self, target, partial: str, number: int, deadline: float, manifest: dict) -> list[str]:
        files = []
        with target.use_session(deadline) as session:
            for read in READS:
                if read.needs_performance_schema and not session.server.performance_schema:
                    continue
                try:
                    with session.cursor(deadline) as cursor:
                        cursor.execute(read.sql)
                        rows = cursor.fetchall()
                except Exception as exc:
                    manifest["errors"].append(f"snapshot {number}, {read.name}: {describe(exc, target.settings)[1]}")
                    if not session.alive:
                        break
                    continue
                name = f"{number}-{read.name}"
                if not self.store.write(partial, name, _format(read, rows, self.settings.query_text).encode()):
                    manifest["errors"].append(f"snapshot {number}, {read.name}: larger than the store's budget")
                    manifest["truncated"] = True
                    break
                files.append(name)
        return files

    def families(self, address: str) -> list:
        """This server's capture count and the time of its last capture (for the dashboards' marks)."""
        with self._mu:
            history = self._history.get(address)
        if history is None or history.last_started is None:
            return []
        return [CAPTURES.build([((), float(history.count))]), LAST_CAPTURE.build([((), history.last_started)])]


def _firing_alerts(body: bytes) -> list[dict]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nesting past the stack
        raise CaptureError(f"the body is not JSON: {type(exc).__name__}") from None
    if not isinstance(data, dict) or not isinstance(data.get("alerts"), list):
        raise CaptureError("not an Alertmanager webhook: no 'alerts' list")
    alerts = []
    for alert in data["alerts"]:
        if not isinstance(alert, dict) or not isinstance(alert.get("labels"), dict):
            raise CaptureError("an alert without a 'labels' mapping")
        if alert.get("status", data.get("status")) == "firing":
            # Alertmanager's label values are strings; any other value is kept as its JSON text, so that an
            # instance of 3306 or ["x"] is refused as no server this exporter scrapes, and a name sorts.
            labels = {str(k): v if isinstance(v, str) else _as_text(v) for k, v in alert["labels"].items()}
            alerts.append({**alert, "labels": labels})
    return alerts


def _as_text(value) -> str:
    try:
        return json.dumps(value)[:200]
    except (ValueError, RecursionError):  # nested as deep as the parser allowed
        return "?"


def _alert_summary(alert: dict) -> dict:
    labels = {str(k): str(v)[:200] for k, v in list(alert["labels"].items())[:30]}
    return {"labels": labels, "startsAt": str(alert.get("startsAt", ""))[:40]}


def _slug(address: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", address).strip("_")[:120] or "server"


def _iso(unix: float) -> str:
    return datetime.fromtimestamp(unix, timezone.utc).isoformat(timespec="seconds")
