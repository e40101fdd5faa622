"""The InnoDB signals that rules and panels share: each alert's expression and the panel that shows
the same thing are built from one of these objects. Metric names are the exporter's contract
(docs/metrics.md); the recording rules keep the names ``level:metric:operation``.
"""

from __future__ import annotations

from .promql import avg_over_time, binary, innodb, max_without, mysqld, rate
from .signal import Signal

# Grafana's "pps" is packets per second: pages get a count unit of their own (scaled K, M as "ops" is).
PAGES_PER_SECOND = "count:pages/s"
QUERIES_PER_SECOND = "count:queries/s"  # Grafana has no qps: a count unit it scales

# --- availability -------------------------------------------------------------------------------
SERVER_UP = Signal("server_up", innodb("innodb_up"), "none",
                   "1 when the exporter read the server in its last scrape.")
EXPORTER_UP = Signal("exporter_up", innodb("up"), "none",
                     "1 when Prometheus scraped the InnoDB exporter.")
MONITOR_DISABLED = Signal("monitor_disabled", innodb("innodb_exporter_monitor_disabled"), "none",
                          "1 for each INNODB_METRICS counter the exporter uses that is disabled on the server.")
LATCH_INSTRUMENTS_DISABLED = Signal(
    "latch_instruments_disabled", innodb("innodb_exporter_latch_instruments_disabled"), "none",
    "InnoDB latch instruments of each kind that performance_schema does not time.")

# --- checkpoint age and flushing ----------------------------------------------------------------
CHECKPOINT_AGE = Signal("checkpoint_age", innodb("innodb_checkpoint_age_bytes"), "bytes",
                        "REDO written since the last checkpoint.")
CHECKPOINT_ASYNC = Signal("checkpoint_async", innodb("innodb_checkpoint_age_async_bytes"), "bytes",
                          "Checkpoint age at which adaptive flushing turns aggressive.")
CHECKPOINT_SYNC = Signal("checkpoint_sync", innodb("innodb_checkpoint_age_sync_bytes"), "bytes",
                         "Checkpoint age at which user threads flush pages themselves.")
CHECKPOINT_MAX = Signal("checkpoint_max", innodb("innodb_checkpoint_age_max_bytes"), "bytes",
                        "Checkpoint age at which writers stall.")
CHECKPOINT_AGE_RATIO = Signal("checkpoint_age_ratio", CHECKPOINT_AGE.expr / CHECKPOINT_MAX.expr, "percentunit",
                              "Checkpoint age as a share of the max checkpoint age.",
                              record="instance:innodb_checkpoint_age:ratio")
MODIFIED_AGE = Signal("modified_age", innodb("innodb_redo_modified_age_bytes"), "bytes",
                      "LSN minus the oldest unflushed change.")
FLUSH_AGE = Signal("flush_age", innodb("innodb_redo_flush_age_bytes"), "bytes",
                   "The age InnoDB compares with the async and sync flush points (modified age; checkpoint age "
                   "on MariaDB 10.5+).")
# Exporters before innodb_redo_flush_age_bytes (and the bundles they recorded) have the modified age, MySQL's
# measure, which stands in for it: the flush point alerts and the write-IO class do not go silent on them.
FLUSH_AGE_OR_MODIFIED = FLUSH_AGE.expr | MODIFIED_AGE.expr
# The records keep their names: replays and dashboards of earlier releases read them.
CHECKPOINT_ASYNC_RATIO = Signal("checkpoint_async_ratio", FLUSH_AGE_OR_MODIFIED / CHECKPOINT_ASYNC.expr, "none",
                                "The flush age in multiples of the async flush point.",
                                record="instance:innodb_checkpoint_age_async:ratio")
CHECKPOINT_SYNC_RATIO = Signal("checkpoint_sync_ratio", FLUSH_AGE_OR_MODIFIED / CHECKPOINT_SYNC.expr, "none",
                               "The flush age in multiples of the sync flush point.",
                               record="instance:innodb_checkpoint_age_sync:ratio")
REDO_WRITTEN = Signal("redo_written", rate(innodb("innodb_redo_written_bytes_total")), "Bps",
                      "Bytes written to the REDO log per second.",
                      record="instance:innodb_redo_written_bytes:rate{window}", window="record_rate_window")
PAGES_FLUSHED = Signal("pages_flushed", rate(innodb("innodb_buffer_pool_pages_flushed_total")), PAGES_PER_SECOND,
                       "Buffer pool pages flushed per second, all kinds.",
                       record="instance:innodb_buffer_pool_pages_flushed:rate{window}", window="record_rate_window")
FLUSH_PAGES = Signal("flush_pages", rate(innodb("innodb_flush_pages_total")), PAGES_PER_SECOND,
                     "Pages flushed per second by kind of flushing.",
                     record="instance_kind:innodb_flush_pages:rate{window}", window="record_rate_window")
FLUSH_AVG_SECONDS = Signal("flush_avg_seconds", innodb("innodb_flush_avg_seconds"), "s",
                           "Average time of a flushing pass, by kind.")
SYNC_FLUSH_WAITS = Signal("sync_flush_waits", rate(innodb("innodb_flush_sync_waits_total")), "ops",
                          "Threads that waited for a synchronous flush, per second.")

# --- buffer pool and free pages -----------------------------------------------------------------
FREE_PAGE_WAITS = Signal("free_page_waits", rate(innodb("innodb_free_page_waits_total")), "ops",
                         "User threads that waited for a free page, per second.",
                         record="instance:innodb_free_page_waits:rate{window}")
LRU_GET_FREE_LOOPS = Signal("lru_get_free_loops", rate(innodb("innodb_lru_get_free_loops_total")), "ops",
                            "Free page requests that found the free list empty and looped, per second.",
                            record="instance:innodb_lru_get_free_loops:rate{window}")
DIRTY_PAGES_RATIO = Signal(
    "dirty_pages_ratio",
    binary(innodb("innodb_buffer_pool_pages", 'state="dirty"'), "/",
           innodb("innodb_buffer_pool_pages", 'state="total"'), "ignoring(state)"),
    "percentunit", "Share of the buffer pool modified and not yet flushed.",
    record="instance:innodb_buffer_pool_dirty_pages:ratio")
PENDING_READS = Signal("pending_reads", innodb("innodb_buffer_pool_pending_reads"), "short",
                       "Buffer pool reads waiting for storage, at each scrape.")
PENDING_WRITES = Signal("pending_writes", innodb("innodb_buffer_pool_pending_writes"), "short",
                        "Buffer pool writes waiting for storage, by kind, at each scrape.")

# --- purge and transactions ---------------------------------------------------------------------
HISTORY_LENGTH = Signal("history_length", innodb("innodb_history_list_length"), "short",
                        "Undo records not yet purged (history list length).")
PURGE_PAGES = Signal("purge_pages", rate(innodb("innodb_purge_undo_log_pages_total")), "short",
                     "Undo log pages purged per second.",
                     record="instance:innodb_purge_undo_log_pages:rate{window}")
PURGE_DML_DELAY = Signal("purge_dml_delay", innodb("innodb_purge_dml_delay_seconds"), "s",
                         "The delay innodb_max_purge_lag adds to each DML row operation.")
OLDEST_TRANSACTION = Signal("oldest_transaction", innodb("innodb_oldest_transaction_seconds"), "s",
                            "Age of the oldest open transaction.")

# --- REDO ---------------------------------------------------------------------------------------
REDO_FSYNC_LATENCY = Signal(
    "redo_fsync_latency",
    # performance_schema's time per timed operation on the REDO files where the server measures it (fsyncs,
    # and the few opens and closes of file rotation: time and count of the same operations), else InnoDB's
    # own average (MySQL 8 log_flush_avg_time).
    rate(innodb("innodb_redo_file_misc_seconds_total")) / rate(innodb("innodb_redo_file_misc_operations_total"))
    | max_without(("stat",), avg_over_time(innodb("innodb_redo_fsync_latency_seconds", 'stat="avg"'))),
    "s", "Average time of a REDO fsync, as the server measures it.",
    record="instance:innodb_redo_fsync_latency_seconds:avg{window}")
REDO_FSYNCS = Signal("redo_fsyncs", rate(innodb("innodb_redo_fsyncs_total")), "ops", "REDO fsyncs per second.")

# --- contention ---------------------------------------------------------------------------------
SEMAPHORE_LONGEST_WAIT = Signal("semaphore_longest_wait", innodb("innodb_semaphore_longest_wait_seconds"), "s",
                                "The longest current wait for an InnoDB latch.")

# --- the load -----------------------------------------------------------------------------------
QUERIES = Signal("queries", rate(mysqld("mysql_global_status_queries")), QUERIES_PER_SECOND,
                 "Statements per second (mysqld_exporter).")
