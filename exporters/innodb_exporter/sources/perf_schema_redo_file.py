"""``performance_schema.file_summary_by_event_name`` for the REDO log files: their timed operations.

COUNT_MISC / SUM_TIMER_MISC count and time every operation on the files other than reads and writes: the
fsyncs, and the opens, closes and creates of file rotation, which are few. Both cover the same operations,
so their ratio is a latency per operation; Innodb_os_log_fsyncs counts fsyncs alone and is not its
denominator (Log_file_handle::fsync counts what performance_schema times with other operations besides).
MySQL instruments the REDO log
as ``wait/io/file/innodb/innodb_log_file``; MariaDB 10.5+ does not instrument it, and the query
returns no row there. A server registers its instruments when it starts, so a connection that found no
row does not ask again (under load the statement cost the server as much as any other of a scrape).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import PerConnection, Source

PICOSECONDS = 1e12


@dataclass(frozen=True)
class RedoFileIO:
    misc_operations: int  # COUNT_MISC: fsyncs, and the opens, closes and creates of file rotation
    misc_seconds: float  # SUM_TIMER_MISC: their time
    writes: int
    write_seconds: float
    bytes_written: int


class PerfSchemaRedoFile(Source):
    name = "perf_schema_redo_file"
    field = "redo_file"
    privilege = "SELECT on performance_schema"
    summary = ("``performance_schema.file_summary_by_event_name`` for the REDO log files: the count and time of "
               "their operations other than reads and writes (fsyncs, file rotation), and of their writes.")

    def __init__(self, wanted: tuple[str, ...] = ()):
        super().__init__(wanted)
        self._instrumented = PerConnection()  # whether this connection's server has the instrument

    def unsupported(self, server):
        return None if server.performance_schema else "performance_schema is OFF"

    def query(self, server):
        return ("SELECT COUNT_MISC, SUM_TIMER_MISC, COUNT_WRITE, SUM_TIMER_WRITE, SUM_NUMBER_OF_BYTES_WRITE"
                " FROM performance_schema.file_summary_by_event_name"
                " WHERE EVENT_NAME = 'wait/io/file/innodb/innodb_log_file'")

    def read(self, server):
        if not self._instrumented.stale(server) and not self._instrumented.value:
            return None
        value = yield from super().read(server)
        self._instrumented.keep(server, value is not None)
        return value

    def from_rows(self, rows) -> RedoFileIO | None:
        if not rows:
            return None
        misc, misc_timer, writes, write_timer, written = (int(v or 0) for v in rows[0])
        return RedoFileIO(misc, misc_timer / PICOSECONDS, writes, write_timer / PICOSECONDS, written)
