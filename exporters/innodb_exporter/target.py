"""One monitored server: its connection, its scrapes, and what went wrong with them.

Scrapes of one target never pile up. The first request starts a scrape in a worker thread; requests
that arrive while it runs wait for the same result (single flight). Every request waits at most until
its own deadline, so a hung server answers ``innodb_up 0`` in time, and because the worker keeps the
target busy until its query returns or times out, no second set of queries is sent meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from . import model, sources
from .connection import ConnectionSettings, describe, probe_server, set_query_timeout
from .server import ServerInfo

log = logging.getLogger("innodb_exporter")

CORE_SOURCE = sources.global_status.NAME
# The status and settings the metrics read: those sources fetch only these names.
NAMES_WANTED = {sources.global_status.NAME: model.STATUS_NAMES, sources.global_variables.NAME: model.VARIABLE_NAMES}


@dataclass(frozen=True)
class ScrapeOptions:
    sources: tuple[str, ...] = tuple(s.NAME for s in sources.ALL)
    top: int = 20  # series kept per latch family before summing into "other"
    enable_counters: bool = False  # SET GLOBAL innodb_monitor_enable for needed counters that are off


@dataclass
class SourceResult:
    name: str
    up: bool = False
    duration: float = 0.0
    kind: str | None = None  # None when read; else unsupported / privilege / connection / timeout / parse / ...
    message: str | None = None


@dataclass
class ScrapeResult:
    up: bool
    server: ServerInfo | None
    sources: dict[str, SourceResult]
    snapshot: model.Snapshot
    errors_total: dict[str, int] = field(default_factory=dict)
    parse_errors_total: dict[str, int] = field(default_factory=dict)
    disabled_counters: tuple[str, ...] = ()


class Target:
    def __init__(self, settings: ConnectionSettings, options: ScrapeOptions = ScrapeOptions()):
        self.settings = settings
        self.options = options
        self._mu = threading.Lock()
        self._inflight: Future | None = None
        self._conn = None
        self._server: ServerInfo | None = None
        self._tried_enabling = False
        self._errors = {name: 0 for name in options.sources}
        self._parse_errors = {name: 0 for name in options.sources}
        self._logged: dict[str, str] = {}  # problem key -> message last logged, to log each state change once

    # --- public -------------------------------------------------------------------------------

    def scrape(self, timeout: float) -> ScrapeResult:
        """Scrape, or join the scrape in flight; answer within ``timeout`` seconds either way."""
        deadline = time.monotonic() + timeout
        with self._mu:
            future = self._inflight
            leader = future is None
            if leader:
                future = self._inflight = Future()
        if leader:
            threading.Thread(target=self._lead, args=(future, deadline), daemon=True,
                             name=f"scrape {self.settings.address}").start()
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            self._note("timeout", f"scrape of {self.settings.address} did not finish within {timeout:.1f}s; "
                                  "the server is slow or hung (innodb_up 0 until it answers)", logging.WARNING)
            return self._empty_result("timeout", "scrape deadline passed")

    def close(self) -> None:
        with self._mu:
            self._close()

    # --- the scrape ---------------------------------------------------------------------------

    def _lead(self, future: Future, deadline: float) -> None:
        try:
            result = self._collect(deadline)
        except Exception as exc:  # never let a bug kill the worker silently or hang the followers
            log.exception("unexpected error scraping %s", self.settings.address)
            result = self._empty_result("other", f"{type(exc).__name__}: {exc}")
        finally:
            with self._mu:
                self._inflight = None
        future.set_result(result)

    def _collect(self, deadline: float) -> ScrapeResult:
        results = {name: SourceResult(name) for name in self.options.sources}
        snapshot = model.Snapshot()
        fresh = False
        if self._conn is None:
            if not self._connect(deadline, results):
                return self._result(results, snapshot)
            fresh = True
        snapshot.server = self._server
        for name in self.options.sources:
            source = sources.BY_NAME[name]
            reason = source.unsupported(self._server)
            if reason:
                results[name] = SourceResult(name, kind="unsupported", message=reason)
                continue
            outcome = self._read(source, deadline, results, snapshot)
            if outcome == "reconnect" and not fresh:
                # A kept connection died (server restarted): reconnect once and read again.
                fresh = True
                if not self._connect(deadline, results):
                    break
                snapshot.server = self._server
                outcome = self._read(source, deadline, results, snapshot)
            if outcome == "reconnect":
                for rest in self.options.sources[self.options.sources.index(name) + 1:]:
                    results[rest] = SourceResult(rest, kind="connection", message="connection lost")
                break
        self._maybe_enable_counters(snapshot, deadline)
        return self._result(results, snapshot)

    def _connect(self, deadline: float, results: dict[str, SourceResult]) -> bool:
        try:
            remaining = deadline - time.monotonic()
            self._conn = self.settings.connect(read_timeout=remaining, connect_timeout=remaining)
            self._server = probe_server(self._conn)
            self._tried_enabling = False
        except Exception as exc:  # PyMySQL, socket and SSL errors alike
            self._close()
            kind, message = describe(exc, self.settings)
            self._note("connect", message, logging.ERROR)
            for name in results:
                results[name] = SourceResult(name, kind=kind, message=message)
                self._errors[name] += 1
            return False
        self._logged.pop("connect", None)
        log.info("connected to %s: %s %s", self.settings.address, self._server.flavor, self._server.version_text,
                 extra={"target": self.settings.address})
        return True

    def _read(self, source, deadline, results, snapshot) -> str:
        """Read one source into the snapshot. Returns "ok", "failed" or "reconnect"."""
        name = source.NAME
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            results[name] = SourceResult(name, kind="timeout", message="scrape deadline passed before this source")
            self._errors[name] += 1
            return "failed"
        set_query_timeout(self._conn, remaining)
        started = time.monotonic()
        try:
            with self._conn.cursor() as cursor:
                data = source.fetch(cursor, self._server, NAMES_WANTED.get(name))
        except Exception as exc:
            duration = time.monotonic() - started
            kind, message = describe(exc, self.settings)
            if duration >= remaining - 0.05:  # the socket timed out at the deadline we set
                kind, message = "timeout", f"no answer within {remaining:.2f}s (scrape deadline)"
            lost = kind in ("connection", "timeout") or not getattr(self._conn, "open", False)
            if lost:
                self._close()
            results[name] = SourceResult(name, duration=duration, kind=kind, message=message)
            self._errors[name] += 1
            return "reconnect" if lost else "failed"
        duration = time.monotonic() - started
        problems = list(getattr(data, "problems", ()))
        self._parse_errors[name] += len(problems)
        if problems:
            self._note(f"parse {name}", f"{name}: {problems[0]}" + (f" (and {len(problems) - 1} more)"
                                                                     if len(problems) > 1 else ""), logging.WARNING)
        if getattr(data, "unreadable", False):  # nothing in the answer could be read at all
            results[name] = SourceResult(name, duration=duration, kind="parse", message=problems[0])
            self._errors[name] += 1
            return "failed"
        setattr(snapshot, source.FIELD, data)
        results[name] = SourceResult(name, up=True, duration=duration)
        return "ok"

    def _maybe_enable_counters(self, snapshot: model.Snapshot, deadline: float) -> None:
        disabled = disabled_counters(snapshot)
        if not (self.options.enable_counters and disabled and self._conn and not self._tried_enabling):
            return
        self._tried_enabling = True  # once per connection: a server restart turns them off again
        try:
            with self._conn.cursor() as cursor:
                for name in disabled:
                    set_query_timeout(self._conn, max(1.0, deadline - time.monotonic()))
                    cursor.execute("SET GLOBAL innodb_monitor_enable = %s", (name,))
        except Exception as exc:
            kind, message = describe(exc, self.settings)
            self._note("enable", f"cannot enable INNODB_METRICS counters {', '.join(disabled)}: {message} "
                                 "(needs SUPER or SYSTEM_VARIABLES_ADMIN)", logging.WARNING)
            if kind == "connection":
                self._close()
            return
        log.info("enabled INNODB_METRICS counters on %s: %s", self.settings.address, ", ".join(disabled))

    # --- results and logging ------------------------------------------------------------------

    def _result(self, results: dict[str, SourceResult], snapshot: model.Snapshot) -> ScrapeResult:
        self._report(results)
        return ScrapeResult(
            up=results[CORE_SOURCE].up if CORE_SOURCE in results else False,
            server=snapshot.server,
            sources=results,
            snapshot=snapshot,
            errors_total=dict(self._errors),
            parse_errors_total=dict(self._parse_errors),
            disabled_counters=disabled_counters(snapshot),
        )

    def _empty_result(self, kind: str, message: str) -> ScrapeResult:
        results = {name: SourceResult(name, kind=kind, message=message) for name in self.options.sources}
        return ScrapeResult(False, None, results, model.Snapshot(), dict(self._errors), dict(self._parse_errors))

    def _report(self, results: dict[str, SourceResult]) -> None:
        """One log line per distinct problem when it starts, naming every source it affects; one when it ends."""
        failing: dict[str, list[str]] = {}
        for r in results.values():
            if r.kind and r.kind not in ("connection", "access_denied") and r.message:
                level_kind = "quiet" if r.kind == "unsupported" else "loud"
                failing.setdefault(f"{level_kind}\0{r.message}", []).append(r.name)
        for key, names in failing.items():
            level_kind, message = key.split("\0", 1)
            level = logging.INFO if level_kind == "quiet" else logging.WARNING
            self._note(f"sources {','.join(names)}", f"{message} (sources: {', '.join(names)})", level)
        for key in [k for k in self._logged if k.startswith("sources ")]:
            names = key[len("sources "):].split(",")
            if all(results.get(n) and results[n].up for n in names):
                self._note(key, None, logging.INFO, f"sources {', '.join(names)} read again on {self.settings.address}")

    def _note(self, key: str, problem: str | None, level: int, recovered: str | None = None) -> None:
        """Log a problem when it first appears or changes, and its end once."""
        before = self._logged.get(key)
        if problem is not None and problem != before:
            self._logged[key] = problem
            log.log(level, "%s", problem, extra={"target": self.settings.address})
        elif problem is None and before is not None:
            del self._logged[key]
            if recovered:
                log.log(level, "%s", recovered, extra={"target": self.settings.address})

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # already broken: nothing more to release
                pass


def disabled_counters(snapshot: model.Snapshot) -> tuple[str, ...]:
    """The counters our metrics use that exist on this server but are off."""
    counters = snapshot.counters or {}
    return tuple(n for n in model.NEEDED_COUNTERS if n in counters and not counters[n].enabled)
