"""Evidence captured when a page fires: pt-stalk inside the exporter, driven by Alertmanager's webhook.

``POST /capture`` takes Alertmanager's webhook (version 4, webhook.py). For each server of the firing
alerts' ``instance`` labels that this exporter already scrapes (its default server or a ``/probe``
target, with the credentials of that target), it takes ``snapshots`` snapshots ``interval`` seconds apart
of the raw texts the metrics cannot keep (snapshots.py), with the time and the alerts that triggered it,
into a store on disk (store.py). An address the webhook names on its own is never connected to.

What a webhook can cost is bounded by what it can cause. Reading one is bounded (webhook.py: its size,
one at a time); an alert about a server this exporter does not scrape costs a counter and, for the
first few, an example in the answer, and a request that has any makes one log line, rate-limited with
every other line a request can cause (loglimit.py). Nothing a webhook does takes a lock a scrape takes:
the scraped servers are read from ``Targets.all()``'s lock-free copy, and the dashboards' marks
(``families``) from a mapping replaced whole, never under this service's lock.

What a capture can cost: one per server per ``cooldown``; alerts that arrive during it are captured
together when it ends (Alertmanager does not send them again, and a page should not go without its
evidence), at most MAX_DEFERRED of them; a capture never runs past its ``deadline`` and uses the
target's own connection (one per server, shared with its scrapes, held only while a snapshot's queries
run); the store never holds more than ``max_bytes``. Statements and row values are reduced to a digest
and a length (redact.py) unless ``query_text`` is on.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from ..metrics.families import Family
from ..scraping import addresses
from ..scraping.connection import describe
from ..scraping.targets import Targets
from . import webhook
from .loglimit import LogLimiter
from .settings import CaptureSettings
from .snapshots import READS, render
from .store import MANIFEST, CaptureStore

log = logging.getLogger("innodb_exporter")

CAPTURES = Family("innodb_exporter_captures_total", "counter", "",
                  "Evidence captures taken of this server since the exporter started (POST /capture).")
LAST_CAPTURE = Family("innodb_exporter_last_capture_timestamp_seconds", "gauge", "seconds",
                      "When the last evidence capture of this server started (unix time); the dashboards mark it.")
FAMILIES = (CAPTURES, LAST_CAPTURE)

MAX_DEFERRED = 100  # alerts kept for the capture at the end of a cooldown (Alertmanager sends 20 at most)
REFUSED_EXAMPLES = 5  # instances named in the answer and the log line when the exporter does not scrape them
NOT_SCRAPED = ("not a server this exporter scrapes: it captures only its default server and the targets "
               "Prometheus probes through it")


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
    refused: list[dict] = field(default_factory=list)  # {"instance", "reason"}: the first REFUSED_EXAMPLES
    refused_alerts: int = 0  # every firing alert refused

    def to_json(self) -> dict:
        return asdict(self)


class CaptureService:
    def __init__(self, settings: CaptureSettings, targets: Targets):
        self.settings = settings
        self.targets = targets
        self.store = CaptureStore(settings.directory, settings.max_bytes) if settings.directory else None
        self.admission = webhook.Admission()
        self.logs = LogLimiter()
        self._history: dict[str, _History] = {}  # by server address; under _mu
        self._marks: dict[str, tuple[int, float]] = {}  # address -> (captures, last start): replaced, never changed
        self._mu = threading.Lock()  # this service's own: no scrape takes it

    @property
    def enabled(self) -> bool:
        return self.store is not None

    def webhook(self, body: bytes) -> WebhookAnswer:
        """Start a capture for each scraped server of the firing alerts; raises webhook.CaptureError (and
        its TooLarge and Busy), each logged at most once a minute."""
        try:
            with self.admission:
                return self._read(webhook.firing_alerts(body))
        except webhook.CaptureError as exc:
            self.logs.log(exc.cause, logging.WARNING, "capture webhook answered %s: %s", exc.status, exc)
            raise

    def _read(self, alerts: list[dict]) -> WebhookAnswer:
        answer = WebhookAnswer()
        scraped = {t.settings.address: t for t in reversed(self.targets.all())}  # the default target wins
        groups: dict[str, tuple[object, str, list[dict]]] = {}  # address -> (target, instance, alerts)
        examples: set[str] = set()
        for alert in alerts:
            instance = webhook.label(alert, "instance")
            target = _scraped(instance, scraped)
            if target is None:
                answer.refused_alerts += 1
                if len(examples) < REFUSED_EXAMPLES and instance not in examples:
                    examples.add(instance)
                    answer.refused.append({"instance": instance, "reason": NOT_SCRAPED})
                continue
            groups.setdefault(target.settings.address, (target, instance, []))[2].append(alert)
        if answer.refused_alerts:
            self.logs.log("not scraped", logging.WARNING, "capture refused for %d alerts of a webhook (%s): %s",
                          answer.refused_alerts, ", ".join(repr(r["instance"][:100]) for r in answer.refused),
                          NOT_SCRAPED)
        for address, (target, instance, group) in groups.items():
            with self._mu:
                until = self._cooling_until(address)
                if until is not None:
                    self._defer(address, instance, group, until)
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
        self._marks = {**self._marks, key: (history.count, now)}
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
        target = _scraped(instance, {t.settings.address: t for t in reversed(self.targets.all())})
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
                    "started": _iso(started), "alerts": [webhook.summary(a) for a in alerts],
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
                         ", ".join(sorted({a["labels"].get("alertname", "?") for a in manifest["alerts"]})))
            else:  # not even its description fits the budget: keep nothing half-described
                self.store.discard(partial)
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
                if not self.store.write(partial, name, render(read, rows, self.settings.query_text).encode()):
                    manifest["errors"].append(f"snapshot {number}, {read.name}: larger than the store's budget")
                    manifest["truncated"] = True
                    break
                files.append(name)
        return files

    def families(self, address: str) -> list:
        """This server's capture count and the time of its last capture (for the dashboards' marks); a
        scrape calls it, so it reads the marks without a lock."""
        mark = self._marks.get(address)
        if mark is None:
            return []
        count, last_started = mark
        return [CAPTURES.build([((), float(count))]), LAST_CAPTURE.build([((), last_started)])]


def _scraped(instance: str, scraped: dict):
    """The target of a server this exporter scrapes that ``instance`` names, in any spelling; else None."""
    try:
        return scraped.get(str(addresses.parse(instance)))
    except addresses.AddressError:
        return None


def _slug(address: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", address).strip("_")[:120] or "server"


def _iso(unix: float) -> str:
    return datetime.fromtimestamp(unix, timezone.utc).isoformat(timespec="seconds")
