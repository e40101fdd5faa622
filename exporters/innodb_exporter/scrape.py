"""Reading a scrape's sources into a Snapshot, and what each source's read came to."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum

from . import model
from .connection import describe
from .server import ServerInfo
from .session import Session
from .snapshot import Snapshot
from .sources import CATALOGUE, CORE, GlobalStatus, GlobalVariables, InnodbMetrics, Source

# Errors after which the connection cannot be trusted for another query.
CONNECTION_KINDS = ("connection", "timeout")


class Outcome(Enum):
    READ = "read"
    FAILED = "failed"  # this source failed; the connection is still good
    LOST = "lost"  # the connection went away or timed out


@dataclass
class SourceResult:
    name: str
    state: str = "failed"  # read / failed / unsupported
    kind: str | None = None  # why not read: a describe() kind, or unsupported / timeout / parse
    message: str | None = None
    duration: float = 0.0
    problems: list[str] = field(default_factory=list)  # parse problems in an answer that was read

    @property
    def up(self) -> bool:
        return self.state == "read"


@dataclass
class ScrapeResult:
    up: bool
    server: ServerInfo | None
    sources: dict[str, SourceResult]
    snapshot: Snapshot
    errors_total: dict[str, int] = field(default_factory=dict)
    parse_errors_total: dict[str, int] = field(default_factory=dict)


def build_sources(names: tuple[str, ...]) -> tuple[Source, ...]:
    """The enabled sources, in scrape order; status and variables fetch only the names the model reads, and
    INNODB_METRICS its enabled rows and the counters the model reads."""
    wanted = {GlobalStatus.name: model.STATUS_NAMES, GlobalVariables.name: model.VARIABLE_NAMES,
              InnodbMetrics.name: model.NEEDED_COUNTERS}
    return tuple(cls(wanted.get(cls.name, ())) for cls in CATALOGUE if cls.name in names)


def read_source(session: Session, source: Source, deadline: float) -> tuple[SourceResult, object, Outcome]:
    """Run one source's query on the session; never raises for what the server does."""
    if (reason := source.unsupported(session.server)) is not None:
        return SourceResult(source.name, "unsupported", "unsupported", reason), None, Outcome.FAILED
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return (SourceResult(source.name, kind="timeout", message="scrape deadline passed before this source"),
                None, Outcome.FAILED)
    started = time.monotonic()
    try:
        with session.cursor(deadline) as cursor:
            value = source.fetch(cursor, session.server)
    except Exception as exc:  # PyMySQL, socket and SSL errors alike
        duration = time.monotonic() - started
        kind, message = describe(exc, session.settings)
        if duration >= remaining - 0.05:  # the socket timed out at the deadline we set
            kind, message = "timeout", f"no answer within {remaining:.2f}s (scrape deadline)"
        lost = kind in CONNECTION_KINDS or not session.alive
        return (SourceResult(source.name, kind=kind, message=message, duration=duration), None,
                Outcome.LOST if lost else Outcome.FAILED)
    duration = time.monotonic() - started
    problems = source.problems(value)
    if source.unreadable(value):
        return (SourceResult(source.name, kind="parse", message=problems[0] if problems else "unreadable answer",
                             duration=duration, problems=problems), None, Outcome.FAILED)
    return SourceResult(source.name, "read", duration=duration, problems=problems), value, Outcome.READ


def up(results: dict[str, SourceResult]) -> bool:
    """innodb_up: the core source was read."""
    return CORE in results and results[CORE].up
