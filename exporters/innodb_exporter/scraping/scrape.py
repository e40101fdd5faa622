"""Reading a scrape's sources into a Snapshot, and what each source's read came to."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum

from ..metrics import model
from ..metrics.settings import Seen
from ..metrics.snapshot import Snapshot
from ..sources import CATALOGUE, CORE, GlobalStatus, GlobalVariables, InnodbMetrics, Source
from ..sources.base import Read
from ..sources.server import ServerInfo
from .connection import describe, error_code
from .session import Session

# Errors after which the connection cannot be trusted for another query.
CONNECTION_KINDS = ("connection", "timeout")
PARSE_ERROR = 1064  # ER_PARSE_ERROR: what a server or proxy that takes no multi-statement query answers one
SEPARATOR = ";\n"  # between the statements of one query


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
    duration: float | None = 0.0  # None: its read did not end (no connection, connection lost, deadline passed)
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
    settings: Seen | None = None  # the server's start and its settings' latest changes, as its target saw them


def build_sources(names: tuple[str, ...]) -> tuple[Source, ...]:
    """The enabled sources, in scrape order; status and variables fetch only the names the model reads, and
    INNODB_METRICS its enabled rows and the counters the model reads."""
    wanted = {GlobalStatus.name: model.STATUS_NAMES, GlobalVariables.name: model.VARIABLE_NAMES,
              InnodbMetrics.name: model.NEEDED_COUNTERS}
    return tuple(cls(wanted.get(cls.name, ())) for cls in CATALOGUE if cls.name in names)


@dataclass
class _Reading:
    """A source being read: its statements (``Source.read``), the one it waits on, the time it took so far."""

    source: Source
    steps: Read
    statement: str = ""
    duration: float = 0.0


Answers = dict[str, tuple[SourceResult, object, Outcome]]  # source name -> what its read came to


def read_sources(session: Session, sources: tuple[Source, ...], deadline: float) -> Answers:
    """Read the sources on the session; never raises for what the server does.

    Their statements go together: each round trip sends every waiting source's next statement as one
    multi-statement query, and the exporter reads each answer while the server runs the statements after
    it. A scrape is one round trip, two when a source reads what it keeps per connection. A source's
    duration is the time from the answer before its own (or the sending) to its value.
    """
    return _Reads(session, deadline).run(sources)


class _Reads:
    def __init__(self, session: Session, deadline: float):
        self.session, self.deadline = session, deadline
        self.answers: Answers = {}
        self.kept: list[_Reading] = []  # answered with what they keep for the connection, no statement sent

    def run(self, sources: tuple[Source, ...]) -> Answers:
        waiting: list[_Reading] = []
        for source in sources:
            if (reason := source.unsupported(self.session.server)) is not None:
                self._answer(SourceResult(source.name, "unsupported", "unsupported", reason))
            elif self._advance(reading := _Reading(source, source.read(self.session.server)), None, time.monotonic()):
                waiting.append(reading)
            else:
                self.kept.append(reading)
        while waiting:
            if time.monotonic() >= self.deadline:
                for reading in waiting:
                    self._answer(SourceResult(reading.source.name, kind="timeout", duration=None,
                                              message="scrape deadline passed before this source"))
                break
            # One statement at a time where the connection takes no multi-statement query (a proxy).
            size = len(waiting) if self.session.batches else 1
            waiting = self._round(waiting[:size]) + waiting[size:]
        return self.answers

    def _answer(self, result: SourceResult, value=None, outcome: Outcome = Outcome.FAILED) -> None:
        self.answers[result.name] = result, value, outcome

    def _round(self, batch: list[_Reading]) -> list[_Reading]:
        """Send the batch's statements in one query and hand each answer to its source; returns the readings
        that wait on another statement, or on theirs again (the server runs none after one that failed)."""
        remaining = self.deadline - time.monotonic()
        waiting: list[_Reading] = []
        mark = time.monotonic()
        with self.session.cursor(self.deadline) as cursor:
            for i, reading in enumerate(batch):
                try:
                    if i == 0:
                        cursor.execute(SEPARATOR.join(r.statement for r in batch))
                    elif not cursor.nextset():
                        raise _ShortAnswer(f"{self.session.settings.address} answered {i} of the {len(batch)} "
                                           "statements sent together")
                    rows = cursor.fetchall()
                except Exception as exc:  # PyMySQL, socket and SSL errors alike
                    if i == 0 and len(batch) > 1 and error_code(exc) == PARSE_ERROR and self.session.alive:
                        self.session.batches = False  # a proxy read the query as one statement: one at a time
                        return batch
                    reading.duration += time.monotonic() - mark
                    if not self._failed(reading, exc, remaining):
                        return waiting + batch[i + 1:]
                    # What the others keep is about a connection that is gone, and nothing else will come.
                    for rest in self.kept + waiting + batch[i + 1:]:
                        self._answer(SourceResult(rest.source.name, kind="connection", message="connection lost",
                                                  duration=None), outcome=Outcome.LOST)
                    return []
                if self._advance(reading, rows, mark):
                    waiting.append(reading)
                mark = time.monotonic()
        return waiting

    def _failed(self, reading: _Reading, exc: Exception, remaining: float) -> bool:
        """Answer a source whose statement failed; True when the connection is lost with it."""
        kind, message = describe(exc, self.session.settings)
        if time.monotonic() >= self.deadline - 0.05:  # the socket timed out at the deadline we set
            kind, message = "timeout", f"no answer within {remaining:.2f}s (scrape deadline)"
        elif isinstance(exc, _ShortAnswer):
            kind, message = "other", str(exc)
        lost = kind in CONNECTION_KINDS or isinstance(exc, _ShortAnswer) or not self.session.alive
        self._answer(SourceResult(reading.source.name, kind=kind, message=message, duration=reading.duration),
                     outcome=Outcome.LOST if lost else Outcome.FAILED)
        return lost

    def _advance(self, reading: _Reading, rows, since: float) -> bool:
        """Hand the source the rows of its statement (None to start it); True when it waits on another."""
        value = error = None
        try:
            reading.statement = next(reading.steps) if rows is None else reading.steps.send(rows)
            waits = True
        except StopIteration as done:
            waits, value = False, done.value
        except Exception as exc:  # the rows came to nothing readable (a bug, or an answer no server gives)
            waits, error = False, exc
        reading.duration += time.monotonic() - since
        if waits:
            return True
        name, source = reading.source.name, reading.source
        if error is not None:
            kind, message = describe(error, self.session.settings)
            self._answer(SourceResult(name, kind=kind, message=message, duration=reading.duration))
        elif source.unreadable(value):
            problems = source.problems(value)
            self._answer(SourceResult(name, kind="parse", message=problems[0] if problems else "unreadable answer",
                                      duration=reading.duration, problems=problems))
        else:
            self._answer(SourceResult(name, "read", duration=reading.duration, problems=source.problems(value)),
                         value, Outcome.READ)
        return False


class _ShortAnswer(Exception):
    """The server sent fewer answers than statements: what it did is unknown, so the connection is dropped."""


def up(results: dict[str, SourceResult]) -> bool:
    """innodb_up: the core source was read."""
    return CORE in results and results[CORE].up
