"""``information_schema.INNODB_METRICS``: every counter, enabled or not.

Disabled rows are read too, so that the exporter can say which of the counters it needs are off.
"""

from __future__ import annotations

from dataclasses import dataclass

NAME = "innodb_metrics"
FIELD = "counters"
PRIVILEGE = "PROCESS"


@dataclass(frozen=True)
class Counter:
    name: str
    subsystem: str
    count: int
    type: str  # value / status_counter / set_owner / set_member / counter
    comment: str
    enabled: bool


def unsupported(server) -> str | None:
    if server.metrics_state_column is None:
        return "INNODB_METRICS has neither a STATUS nor an ENABLED column"
    return None


def fetch(cursor, server, names=None):
    # MySQL: STATUS = 'enabled' / 'disabled'; MariaDB: ENABLED = 1 / 0 (probed at connect).
    state = "STATUS = 'enabled'" if server.metrics_state_column == "STATUS" else "ENABLED = 1"
    cursor.execute(f"SELECT NAME, SUBSYSTEM, COUNT, TYPE, COMMENT, {state} FROM information_schema.INNODB_METRICS")
    return from_rows(cursor.fetchall())


def from_rows(rows) -> dict[str, Counter]:
    return {
        str(name): Counter(str(name), str(subsystem), int(count or 0), str(type_), str(comment or ""), bool(int(enabled)))
        for name, subsystem, count, type_, comment, enabled in rows
    }


# Counters whose TYPE says "counter" but which the server overwrites with a current value (MONITOR_SET
# in buf0flu.cc and log0write.cc): they go up and down, so they are gauges. See docs/redo-model.md.
SET_AS_CURRENT_VALUE = frozenset({
    "buffer_flush_n_to_flush_requested", "buffer_flush_n_to_flush_by_age", "buffer_flush_n_to_flush_by_dirty_page",
    "buffer_flush_avg_page_rate", "buffer_flush_lsn_avg_rate", "buffer_flush_pct_for_dirty", "buffer_flush_pct_for_lsn",
    "buffer_flush_adaptive_avg_time", "buffer_flush_adaptive_avg_time_slot", "buffer_flush_adaptive_avg_time_thread",
    "buffer_flush_adaptive_avg_time_est", "buffer_flush_avg_time", "buffer_flush_adaptive_avg_pass",
    "buffer_flush_avg_pass", "buffer_LRU_batch_flush_avg_time_slot", "buffer_LRU_batch_flush_avg_time_thread",
    "buffer_LRU_batch_flush_avg_time_est", "buffer_LRU_batch_flush_avg_pass",
    "log_flush_max_time", "log_flush_avg_time", "log_flush_lsn_avg_rate", "log_concurrency_margin",
})


def prometheus_type(row: Counter) -> str:
    """"counter" or "gauge" for a row, from its TYPE corrected by what the server really stores in it.

    ``value`` rows are current values. A ``set_owner`` is a running total; its ``set_member`` rows are
    either a count of calls (cumulative) or the last call's value (``*_pages``, ``*_per_call``), as
    MONITOR_INC_VALUE_CUMULATIVE in srv0mon.h writes them.
    """
    if row.type == "value" or row.name in SET_AS_CURRENT_VALUE:
        return "gauge"
    if row.type == "set_member" and row.name.endswith(("_pages", "_per_call")):
        return "gauge"
    return "counter"
