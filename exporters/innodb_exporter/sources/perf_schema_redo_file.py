"""``performance_schema.file_summary_by_event_name`` for the REDO log file: fsync count and time.

COUNT_MISC / SUM_TIMER_MISC hold the file's sync operations together with its rare open, close and
stat calls, so they are the REDO fsyncs to within a few operations. MySQL instruments the REDO log
as ``wait/io/file/innodb/innodb_log_file``; MariaDB 10.5+ does not instrument it, and the query
returns no row there.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Source

PICOSECONDS = 1e12


@dataclass(frozen=True)
class RedoFileIO:
    fsyncs: int
    fsync_seconds: float
    writes: int
    write_seconds: float
    bytes_written: int


class PerfSchemaRedoFile(Source):
    name = "perf_schema_redo_file"
    field = "redo_file"
    privilege = "SELECT on performance_schema"
    summary = "``performance_schema.file_summary_by_event_name`` for the REDO log file: fsync count and time."

    def unsupported(self, server):
        return None if server.performance_schema else "performance_schema is OFF"

    def query(self, server):
        return ("SELECT COUNT_MISC, SUM_TIMER_MISC, COUNT_WRITE, SUM_TIMER_WRITE, SUM_NUMBER_OF_BYTES_WRITE"
                " FROM performance_schema.file_summary_by_event_name"
                " WHERE EVENT_NAME = 'wait/io/file/innodb/innodb_log_file'"), ()

    def from_rows(self, rows) -> RedoFileIO | None:
        if not rows:
            return None
        misc, misc_timer, writes, write_timer, written = (int(v or 0) for v in rows[0])
        return RedoFileIO(misc, misc_timer / PICOSECONDS, writes, write_timer / PICOSECONDS, written)
