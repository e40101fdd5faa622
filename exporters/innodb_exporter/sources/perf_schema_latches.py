"""``performance_schema`` waits per InnoDB latch instrument, with each instrument's on/off state.

Every ``wait/synch/%/innodb/%`` instrument is returned, waited on or not, so that a latch's series
exists from the first scrape and never flaps in or out. The set is bounded by the server's build
(about a hundred instruments). Stock MySQL ships them disabled and untimed, and stock MariaDB runs
with performance_schema OFF: ``setup_instruments`` says which ones count (ENABLED) and which are
timed (TIMED), so the exporter can say what is off instead of showing nothing.

The instruments' state, which an operator changes by hand, is read on a connection's first scrape and then
once a minute (joined to the summary on every scrape, it tripled the server's time on this source), with
the summary of every instrument. Each scrape then reads the summary of the enabled ones only: a disabled
instrument counts nothing, so its row keeps the value read with the states. Stock MySQL has every InnoDB
latch instrument disabled, and its scrapes ask for no summary at all (the server's time a scrape went from
8.5 to 4.5 ms on MySQL 9.7). An instrument switched on shows its waits from the next reading of the
states, and a TRUNCATE of the summary reaches the disabled ones' series then too.

The summary costs the server more than every other source together: performance_schema builds each of
its rows by walking every instance of the row's kind (mutex, rwlock, cond), and the instances grow with
the tables (docs/fleet.md has the figures). It is asked for by the instruments' names, not by LIKE: on
MySQL 8.0+, whose performance_schema indexes EVENT_NAME, only those rows are built (25 to 40 % less
server time with 2,000 tables on MySQL 9.7). MariaDB has no such index and builds the rows in table
order (mutexes, rwlocks, conds, then files, tables, sockets); a LIMIT of as many rows as names asked for
ends the scan at the last InnoDB latch instead (MariaDB 10.11 under sysbench: 2.9 to 1.9 ms a read).
The names are quoted into these statements, built once a minute: an instrument whose name would not
read the same quoted (no server has one) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from heapq import merge
from operator import itemgetter
from typing import NamedTuple

from .base import Packed, PerConnection, Source, name_list, plain

PICOSECONDS = 1e12
STATES_MAX_AGE = 60.0  # seconds before the instruments' ENABLED / TIMED are read again
MAX_INSTRUMENTS = 1000  # a build has about a hundred; the bound keeps the summary statement bounded
LATCH_INSTRUMENTS = "wait/synch/%/innodb/%"  # the InnoDB latch instruments, as a LIKE pattern
_INNODB_LATCHES = f"'{LATCH_INSTRUMENTS}'"
SUMMARY_COLUMNS = ("EVENT_NAME", "COUNT_STAR", "SUM_TIMER_WAIT")
_NAME = itemgetter(0)


@dataclass(slots=True)
class LatchInstrument:  # slotted, not frozen: hundreds are built on every scrape
    kind: str  # mutex / rwlock / sxlock / cond
    name: str
    waits: int
    seconds: float
    enabled: bool  # counts its waits
    timed: bool  # times them


class _Described(NamedTuple):
    """What an instrument's name and states say, worked out once per reading of the states."""

    kind: str  # mutex / rwlock / sxlock / cond
    name: str  # without wait/synch/<kind>/innodb/
    enabled: bool
    timed: bool


class _Instruments(NamedTuple):
    """What a reading of the instruments' states keeps for the scrapes up to the next one."""

    described: dict[str, _Described]  # instrument -> what it is
    frozen: list  # (instrument, LatchInstrument) of the disabled ones, as read with the states, by name
    per_scrape: str | None  # the FROM that reads the enabled ones; None when none is


class PerfSchemaLatches(Source):
    name = "perf_schema_latches"
    field = "latches"
    privilege = "SELECT on performance_schema"
    summary = "``performance_schema`` waits per InnoDB latch instrument, with each instrument's on/off state."

    def __init__(self, wanted: tuple[str, ...] = ()):
        super().__init__(wanted)
        self._states = PerConnection(max_age=STATES_MAX_AGE)  # an _Instruments
        self._summary = Packed()

    def unsupported(self, server):
        return None if server.performance_schema else "performance_schema is OFF"

    def query(self, server):
        """The summary with each instrument's state, in one statement (what a recording keeps)."""
        return ("SELECT e.EVENT_NAME, e.COUNT_STAR, e.SUM_TIMER_WAIT, i.ENABLED, i.TIMED"
                " FROM performance_schema.events_waits_summary_global_by_event_name e"
                " JOIN performance_schema.setup_instruments i ON i.NAME = e.EVENT_NAME"
                f" WHERE e.EVENT_NAME LIKE {_INNODB_LATCHES}")

    def read(self, server):
        if self._states.stale(server):
            return (yield from self._read_states(server))
        described, frozen, per_scrape = self._states.value
        if per_scrape is None:
            return [latch for _, latch in frozen]
        rows = yield from self._summary.rows(server, SUMMARY_COLUMNS, per_scrape)
        # The disabled ones were built with the states (on stock MySQL, every one): only the enabled are built.
        return [latch for _, latch in merge(frozen, _by_name(rows, described), key=_NAME)]

    def _read_states(self, server):
        """The instruments' states and the summary of all of them; keeps, for the scrapes that follow, the
        disabled ones and the statement that reads the enabled ones (None when none is)."""
        listed = yield (f"SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments"
                        f" WHERE NAME LIKE {_INNODB_LATCHES} ORDER BY NAME LIMIT {MAX_INSTRUMENTS}")
        described = {}
        for name, enabled, timed in listed:
            if plain(name := str(name)) and (what := _describe(name, enabled, timed)) is not None:
                described[name] = what
        enabled = [name for name, what in described.items() if what.enabled]
        everything = _summary_of(described) if described else None
        rows = (yield from self._summary.rows(server, SUMMARY_COLUMNS, everything)) if everything else []
        latches = _by_name(rows, described)
        per_scrape = None
        if enabled:
            per_scrape = everything if len(enabled) == len(described) else _summary_of(sorted(enabled))
        frozen = [(name, latch) for name, latch in latches if not latch.enabled]
        self._states.keep(server, _Instruments(described, frozen, per_scrape))
        return [latch for _, latch in latches]

    def from_rows(self, rows) -> list[LatchInstrument]:
        return [_latch(what, count, timer) for name, count, timer, enabled, timed in rows
                if (what := _describe(str(name), enabled, timed)) is not None]


def _by_name(rows, described: dict[str, _Described]) -> list[tuple[str, LatchInstrument]]:
    """(instrument, LatchInstrument) of the summary rows of the instruments setup_instruments listed, whatever
    else a summary holds, ordered by name whatever the server's collation: the same series on every scrape."""
    out = []
    for name, count, timer in rows:
        if (what := described.get(name := str(name))) is not None:
            out.append((name, _latch(what, count, timer)))
    out.sort(key=_NAME)
    return out


def _describe(event_name: str, enabled, timed) -> _Described | None:
    # wait/synch/mutex/innodb/log_writer_mutex -> ("mutex", "log_writer_mutex")
    parts = event_name.split("/")
    if len(parts) < 5:
        return None
    return _Described(parts[2], "/".join(parts[4:]), _yes(enabled), _yes(timed))


def _latch(what: _Described, count, timer) -> LatchInstrument:
    return LatchInstrument(what.kind, what.name, int(count or 0), int(timer or 0) / PICOSECONDS, what.enabled,
                           what.timed)


def _summary_of(names) -> str:
    """The summary's FROM for these instruments: by name, at most one row each (see the module's docstring)."""
    return (f"FROM (SELECT {', '.join(SUMMARY_COLUMNS)} FROM performance_schema.events_waits_summary_global_by_event_name"
            f" WHERE EVENT_NAME IN ({name_list(names)}) LIMIT {len(names)}) AS summary")


def _yes(value) -> bool:
    return str(value).upper() == "YES"


def untimed_by_kind(latches: list[LatchInstrument]) -> dict[str, int]:
    """Instruments per kind that performance_schema does not both count and time."""
    counts = {latch.kind: 0 for latch in latches}
    for latch in latches:
        if not (latch.enabled and latch.timed):
            counts[latch.kind] += 1
    return counts
