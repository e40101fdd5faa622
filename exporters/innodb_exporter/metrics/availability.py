"""What each server the tests run gives of the headline metrics, with the defaults (stock) and configured
as docs/metrics.md advises (tuned). docs/metrics.md prints this table, and the live tests hold the
exporter to it on real servers: every cell below was seen, none is assumed.

A metric not listed for a server is present there. A listed one is absent, for the reason given, which
is also the ``reason`` label of ``innodb_exporter_metric_absent`` for metrics with fixed series.
"""

from __future__ import annotations

SERVERS = {"mariadb-10.11": "MariaDB 10.11", "mariadb-11.8": "MariaDB 11.8", "mysql-9": "MySQL 9.x"}
CONFIGS = ("stock", "tuned")

MARIADB = ("mariadb-10.11", "mariadb-11.8")
STOCK, TUNED = "stock", "tuned"


def _on(servers, configs, reason: str) -> dict[str, str]:
    return {f"{server}/{config}": reason for server in servers for config in configs}


# Headline metrics whose series depend on what happens (threads waiting now; MySQL lists a latch in SHOW
# ENGINE INNODB MUTEX once it has been waited for), not only on the server: metric -> servers.
DATA_DEPENDENT: dict[str, set[str]] = {
    "innodb_semaphore_waiting_threads": set(_on(SERVERS, CONFIGS, "")),
    "innodb_mutex_waits_total": set(_on(["mysql-9"], CONFIGS, "")),
}

# Sources a server does not answer: "<server>/<config>" -> source names.
# MariaDB 10.6+ keeps nothing in SHOW ENGINE INNODB MUTEX; stock MariaDB runs with performance_schema OFF.
_PERF_SCHEMA_SOURCES = {"perf_schema_latches", "perf_schema_redo_file"}
SOURCES_DOWN: dict[str, set[str]] = {
    key: {"engine_innodb_mutex"} | (_PERF_SCHEMA_SOURCES if key.endswith(STOCK) else set())
    for key in _on(MARIADB, CONFIGS, "")}

# Headline metric -> {"<server>/<config>": reason}. Reasons: monitor_disabled (an INNODB_METRICS counter that
# is off by default), source_unsupported (a source in SOURCES_DOWN), instruments_disabled (the latch
# instruments are off), not_provided (the server has no such number).
ABSENT: dict[str, dict[str, str]] = {
    # MariaDB 10.8+ neither counts nor times its REDO fsyncs, nor keeps InnoDB's flush time averages.
    "innodb_redo_fsyncs_total": _on(MARIADB, CONFIGS, "not_provided"),
    "innodb_redo_file_misc_operations_total": {**_on(MARIADB, [STOCK], "source_unsupported"),
                                               **_on(MARIADB, [TUNED], "not_provided")},
    "innodb_redo_file_misc_seconds_total": {**_on(MARIADB, [STOCK], "source_unsupported"),
                                            **_on(MARIADB, [TUNED], "not_provided")},
    "innodb_redo_fsync_latency_seconds": {**_on(MARIADB, CONFIGS, "not_provided"),
                                          **_on(["mysql-9"], [STOCK], "monitor_disabled")},
    "innodb_flush_pages_total": _on(["mysql-9"], [STOCK], "monitor_disabled"),
    "innodb_flush_target_pages": _on(SERVERS, [STOCK], "monitor_disabled"),
    "innodb_lru_get_free_search_total": _on(SERVERS, [STOCK], "monitor_disabled"),
    "innodb_lru_get_free_loops_total": _on(SERVERS, [STOCK], "monitor_disabled"),
    # MariaDB 10.11 removed buffer_LRU_get_free_waits; innodb_free_page_waits_total still counts the stalls.
    "innodb_lru_get_free_waits_total": {**_on(MARIADB, CONFIGS, "not_provided"),
                                        **_on(["mysql-9"], [STOCK], "monitor_disabled")},
    "innodb_purge_dml_delay_seconds": _on(["mysql-9"], [STOCK], "monitor_disabled"),
    "innodb_purge_undo_log_pages_total": _on(SERVERS, [STOCK], "monitor_disabled"),
    "innodb_latch_waits_total": {**_on(MARIADB, [STOCK], "source_unsupported"),
                                 **_on(["mysql-9"], [STOCK], "instruments_disabled")},
    "innodb_latch_wait_seconds_total": {**_on(MARIADB, [STOCK], "source_unsupported"),
                                        **_on(["mysql-9"], [STOCK], "instruments_disabled")},
    # MariaDB 10.6+ is not asked SHOW ENGINE INNODB MUTEX (SOURCES_DOWN), and its SEMAPHORES has no sync array.
    "innodb_mutex_waits_total": _on(MARIADB, CONFIGS, "source_unsupported"),
    "innodb_semaphore_longest_wait_seconds": _on(MARIADB, CONFIGS, "not_provided"),
    "innodb_queries_inside": _on(MARIADB, CONFIGS, "not_provided"),
    "innodb_queries_queued": _on(MARIADB, CONFIGS, "not_provided"),
    # MariaDB 11.0 removed the change buffer.
    "innodb_change_buffer_size_pages": _on(["mariadb-11.8"], CONFIGS, "not_provided"),
}


def absent(server_config: str) -> dict[str, str]:
    """The headline metrics a server does not give, with the reason: metric -> reason."""
    return {metric: where[server_config] for metric, where in ABSENT.items() if server_config in where}
