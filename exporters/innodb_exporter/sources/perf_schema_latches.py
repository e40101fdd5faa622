"""``performance_schema.events_waits_summary_global_by_event_name`` for InnoDB latches.

Only instruments that have waited at least once are returned. The instruments are off by default
on MariaDB (``performance-schema-instrument='wait/synch/%/innodb/%=ON'`` turns them on).
"""

from __future__ import annotations

from dataclasses import dataclass

NAME = "perf_schema_latches"
FIELD = "latches"
PRIVILEGE = "SELECT on performance_schema"

QUERY = (
    "SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT"
    " FROM performance_schema.events_waits_summary_global_by_event_name"
    " WHERE EVENT_NAME LIKE 'wait/synch/%/innodb/%' AND COUNT_STAR > 0"
)
PICOSECONDS = 1e12


@dataclass(frozen=True)
class LatchWaits:
    kind: str  # mutex / rwlock / sxlock / cond
    name: str
    waits: int
    seconds: float


def unsupported(server) -> str | None:
    return None if server.performance_schema else "performance_schema is OFF"


def fetch(cursor, server, names=None):
    cursor.execute(QUERY)
    return from_rows(cursor.fetchall())


def from_rows(rows) -> list[LatchWaits]:
    latches = []
    for event_name, count, timer in rows:
        # wait/synch/mutex/innodb/log_writer_mutex -> ("mutex", "log_writer_mutex")
        parts = str(event_name).split("/")
        if len(parts) < 5:
            continue
        latches.append(LatchWaits(parts[2], "/".join(parts[4:]), int(count), int(timer or 0) / PICOSECONDS))
    return latches
