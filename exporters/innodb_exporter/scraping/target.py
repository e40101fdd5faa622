"""One monitored server: its session, its scrapes, and what went wrong with them.

Scrapes of one target never pile up (``SingleFlight``): requests that arrive while a scrape runs share
its result, and each answers by its own deadline, so a hung server gives ``innodb_up 0`` in time while
the worker keeps the target busy until its query returns or times out. The parts: ``Session`` (the
connection), ``scrape.read_sources`` (the sources' statements), ``MonitorEnabler`` (the opt-in counter switch),
``ProblemLog`` (one log line per problem); this class only puts them in order.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass

from ..metrics import model
from ..metrics.settings import History
from ..metrics.snapshot import Snapshot
from ..sources import NAMES, PerfSchemaLatches
from ..sources.perf_schema_latches import untimed_by_kind
from .connection import ConnectionSettings, describe
from .monitors import MonitorEnabler, disabled
from .problemlog import ProblemLog
from .scrape import Outcome, ScrapeResult, SourceResult, build_sources, read_sources, up
from .session import Session
from .singleflight import SingleFlight, TimedOut

log = logging.getLogger("innodb_exporter")

# Failures the connect step reports itself; the per-source report leaves them out.
CONNECT_KINDS = ("connection", "access_denied", "too_many_connections", "auth_refused")


@dataclass(frozen=True)
class ScrapeOptions:
    sources: tuple[str, ...] = NAMES
    enable_counters: bool = False  # SET GLOBAL innodb_monitor_enable for needed counters that are off


class Target:
    def __init__(self, settings: ConnectionSettings, options: ScrapeOptions = ScrapeOptions()):
        self.settings = settings
        self.options = options
        self.sources = build_sources(options.sources)
        self.session = Session(settings)
        self.flight: SingleFlight[ScrapeResult] = SingleFlight(f"scrape {settings.address}")
        self.problems = ProblemLog(settings.address)
        self.enabler = MonitorEnabler(model.NEEDED_COUNTERS, self.problems) if options.enable_counters else None
        self._session_lock = threading.Lock()  # a scrape and an idle close never overlap
        self._errors = {s.name: 0 for s in self.sources}
        self._parse_errors = {s.name: 0 for s in self.sources}
        self._disabled_seen: tuple[str, ...] = ()
        self.history = History()  # the server's settings and start, kept across reconnections

    # --- public -------------------------------------------------------------------------------

    def scrape(self, timeout: float) -> ScrapeResult:
        """Scrape, or join the scrape in flight; answer within ``timeout`` seconds either way."""
        try:
            return self.flight.run(self._collect, time.monotonic() + timeout)
        except TimedOut:
            self.problems.report("timeout", f"scrape of {self.settings.address} did not finish within "
                                            f"{timeout:.1f}s; the server is slow or hung (innodb_up 0 until it answers)")
            return self._empty_result("timeout", "scrape deadline passed")

    def close(self) -> None:
        with self._session_lock:
            self.session.close()

    @contextmanager
    def use_session(self, deadline: float):
        """The target's own connection for work other than a scrape (captures), held only inside the block."""
        if not self._session_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise TimeoutError(f"{self.settings.address} stayed busy with a scrape until the deadline")
        try:
            if not self.session.is_open:
                self.session.open(deadline)
            yield self.session
        finally:
            self._session_lock.release()

    def close_if_idle(self, idle_seconds: float) -> bool:
        """Close the connection when nothing scraped it for ``idle_seconds`` (and no scrape runs now)."""
        if not self._session_lock.acquire(blocking=False):
            return False
        try:
            if self.session.is_open and time.monotonic() - self.session.last_used > idle_seconds:
                self.session.close()
                return True
            return False
        finally:
            self._session_lock.release()

    # --- the scrape ---------------------------------------------------------------------------

    def _collect(self, deadline: float) -> ScrapeResult:
        with self._session_lock:
            try:
                return self._collect_locked(deadline)
            except Exception as exc:  # a bug: say so, and answer "down" rather than hang or crash
                log.exception("unexpected error scraping %s", self.settings.address)
                return self._empty_result("other", f"{type(exc).__name__}: {exc}")

    def _collect_locked(self, deadline: float) -> ScrapeResult:
        results: dict[str, SourceResult] = {}
        snapshot = Snapshot()
        fresh = not self.session.is_open
        if fresh and not self._connect(deadline, results, self.sources):
            return self._result(results, snapshot)
        self._enable_counters(fresh, deadline)
        answers = read_sources(self.session, self.sources, deadline)
        lost = tuple(s for s in self.sources if answers[s.name][2] is Outcome.LOST)
        if lost and not fresh:
            # A kept connection died (the server restarted): connect once more and read what it lost again.
            refused: dict[str, SourceResult] = {}
            if self._connect(deadline, refused, lost):
                answers.update(read_sources(self.session, lost, deadline))
            else:
                answers.update({name: (result, None, Outcome.LOST) for name, result in refused.items()})
        for source in self.sources:
            result, value, outcome = answers[source.name]
            results[source.name] = result
            if outcome is Outcome.READ:
                setattr(snapshot, source.field, value)
        if any(outcome is Outcome.LOST for _, _, outcome in answers.values()):
            self.session.close()
        snapshot.server = self.session.server
        self._disabled_seen = disabled(snapshot, model.NEEDED_COUNTERS)
        if snapshot.status is not None:
            self._see_settings(snapshot)
        return self._result(results, snapshot)

    def _see_settings(self, snapshot: Snapshot) -> None:
        """Compare the settings and the server's start with what this server had before (one log line a change)."""
        for change in self.history.observe(snapshot.variables, snapshot.status.get("uptime"), time.time()):
            log.info("%s: %s changed from %s to %s%s", self.settings.address, change.setting, change.before,
                     change.after, " across a restart" if change.restart else "",
                     extra={"target": self.settings.address})

    def _connect(self, deadline: float, results: dict[str, SourceResult], sources) -> bool:
        """Open the connection; when it fails, say so once and answer ``sources`` with why."""
        try:
            server = self.session.open(deadline)
        except Exception as exc:
            kind, message = describe(exc, self.settings)
            self.problems.report("connect", message, logging.ERROR)
            for source in sources:
                results[source.name] = SourceResult(source.name, kind=kind, message=message, duration=None)
            return False
        self.problems.resolve("connect")
        log.info("connected to %s: %s %s", self.settings.address, server.flavor, server.version_text,
                 extra={"target": self.settings.address})
        return True

    def _enable_counters(self, fresh: bool, deadline: float) -> None:
        if self.enabler is None:
            return
        try:
            if fresh:
                self.enabler.on_connect(self.session, deadline)
            else:
                self.enabler.enable(self.session, self._disabled_seen, deadline)
        except Exception as exc:  # the check itself failed (privilege): the scrape goes on without it
            self.problems.report("enable check", f"cannot check INNODB_METRICS counters: "
                                                 f"{describe(exc, self.settings)[1]}")

    # --- results and logging ------------------------------------------------------------------

    def _result(self, results: dict[str, SourceResult], snapshot: Snapshot) -> ScrapeResult:
        for name, r in results.items():
            if not r.up and r.state != "unsupported":
                self._errors[name] += 1
            self._parse_errors[name] += len(r.problems)
        self._report(results, snapshot)
        return ScrapeResult(up(results), snapshot.server, results, snapshot, dict(self._errors),
                            dict(self._parse_errors), self.history.seen())

    def _empty_result(self, kind: str, message: str) -> ScrapeResult:
        """Every source failed with ``kind``; none has a duration, as no read was seen to end."""
        results = {s.name: SourceResult(s.name, kind=kind, message=message, duration=None) for s in self.sources}
        return ScrapeResult(False, None, results, Snapshot(), dict(self._errors), dict(self._parse_errors),
                            self.history.seen())

    def _report(self, results: dict[str, SourceResult], snapshot: Snapshot) -> None:
        """One log line per distinct problem when it starts, naming every source it affects; one when it ends."""
        if up(results):  # a scrape that ends after its deadline, failed (a hung server), is no answer
            self.problems.resolve("timeout", f"{self.settings.address} answers again")
        failing: dict[tuple[int, str], list[str]] = defaultdict(list)
        for r in results.values():
            if r.kind and r.kind not in CONNECT_KINDS and r.message:
                level = logging.INFO if r.state == "unsupported" else logging.WARNING
                failing[(level, r.message)].append(r.name)
            if r.problems:
                more = f" (and {len(r.problems) - 1} more)" if len(r.problems) > 1 else ""
                self.problems.report(("parse", r.name), f"{r.name}: {r.problems[0]}{more}")
        for (level, message), names in failing.items():
            self.problems.report(("sources", tuple(names)), f"{message} (sources: {', '.join(names)})", level)
        for key in self.problems.open_keys():
            if key[0] == "sources" and all(results.get(n) and results[n].up for n in key[1]):
                self.problems.resolve(key, f"sources {', '.join(key[1])} read again")
        self._report_switched_off(snapshot)

    def _report_switched_off(self, snapshot: Snapshot) -> None:
        """What the server has switched off that the metrics need: counters, latch instruments."""
        if snapshot.counters is not None:
            if self._disabled_seen:
                self.problems.report("monitors", f"{len(self._disabled_seen)} INNODB_METRICS counters the metrics "
                                                 f"read are disabled: {', '.join(self._disabled_seen)} "
                                                 "(innodb_exporter_monitor_disabled; docs/metrics.md)",
                                     logging.INFO)
            else:
                self.problems.resolve("monitors", "every INNODB_METRICS counter the metrics read is enabled")
        if snapshot.latches is not None:
            off = {kind: n for kind, n in untimed_by_kind(snapshot.latches).items() if n}
            if off:
                total = sum(off.values())
                self.problems.report("latches", f"{total} of {len(snapshot.latches)} InnoDB latch instruments are not "
                                                "enabled and timed in performance_schema, so their waits are missing "
                                                f"({PerfSchemaLatches.name}; docs/metrics.md says how to turn them on)",
                                     logging.INFO)
            else:
                self.problems.resolve("latches", "every InnoDB latch instrument is enabled and timed")
