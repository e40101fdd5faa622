"""What a snapshot reads, and how each read is kept: the raw texts the metrics cannot keep."""

from __future__ import annotations

from dataclasses import dataclass

from ..sources.perf_schema_latches import LATCH_INSTRUMENTS
from .redact import digest, redact_status


@dataclass(frozen=True)
class Read:
    name: str  # the file it is kept in (after the snapshot number)
    sql: str
    header: tuple[str, ...] = ()
    statement_column: int | None = None  # the column holding statement text
    needs_performance_schema: bool = False


READS = (
    Read("engine-innodb-status.txt", "SHOW ENGINE INNODB STATUS"),
    Read("engine-innodb-mutex.tsv", "SHOW ENGINE INNODB MUTEX", ("type", "name", "status")),
    Read("innodb-trx.tsv",
         "SELECT trx_id, trx_state, trx_started, TIMESTAMPDIFF(SECOND, trx_started, NOW()), trx_mysql_thread_id,"
         " trx_operation_state, trx_tables_locked, trx_lock_structs, trx_rows_locked, trx_rows_modified,"
         " trx_isolation_level, trx_query FROM information_schema.INNODB_TRX ORDER BY trx_started",
         ("trx_id", "state", "started", "age_seconds", "thread_id", "operation_state", "tables_locked",
          "lock_structs", "rows_locked", "rows_modified", "isolation_level", "query"), 11),
    Read("processlist.tsv",
         "SELECT ID, USER, HOST, DB, COMMAND, TIME, STATE, INFO FROM information_schema.PROCESSLIST"
         " ORDER BY TIME DESC",
         ("id", "user", "host", "db", "command", "time", "state", "info"), 7),
    Read("latches.tsv",
         "SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT FROM performance_schema.events_waits_summary_global_by_event_name"
         f" WHERE EVENT_NAME LIKE '{LATCH_INSTRUMENTS}' AND COUNT_STAR > 0 ORDER BY SUM_TIMER_WAIT DESC",
         ("event_name", "count_star", "sum_timer_wait_ps"), needs_performance_schema=True),
)


def render(read: Read, rows, keep_text: bool) -> str:
    """The file's text: the status text (redacted unless kept), or the rows as TSV (statements as digests)."""
    if read.name.endswith(".txt"):  # the status text: one row, its third column
        text = rows[0][2] if rows else ""
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
        return text if keep_text else redact_status(text)
    if read.statement_column is not None and not keep_text:
        rows = [tuple(digest(v) if i == read.statement_column and v else v for i, v in enumerate(row)) for row in rows]
    return _tsv(read.header, rows)


def _tsv(header: tuple[str, ...], rows) -> str:
    def cell(value) -> str:
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return "" if value is None else str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")

    return "\n".join(["\t".join(header)] + ["\t".join(cell(v) for v in row) for row in rows]) + "\n"
