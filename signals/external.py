"""The series that the rules and dashboards read from others than our exporter: mysqld_exporter,
node_exporter and Prometheus itself. A name outside our exporter must be on one of these lists: the query
helper refuses any other (``promql.mysqld``, ``promql.node``, ``promql.series``), and
tests/unit/test_names.py holds every name the rules and dashboards use to our exporter's families, the
rules' records, or these.

Each entry says what reads it. The families are those of the exporters the stack runs (Debian's
prometheus-mysqld-exporter and prometheus-node-exporter, and the pinned images of docker-compose.yml).
"""

from __future__ import annotations

# prometheus/mysqld_exporter: collector/global_status.go and global_variables.go (on by default).
MYSQLD_EXPORTER = {
    "mysql_global_status_queries": "Overview, Compare and the impact: queries per second",
    "mysql_global_status_handlers_total": "the impact: transactions per second (Handler_commit, _rollback); rows "
                                          "where the server keeps no Innodb_rows_* (MariaDB)",
    "mysql_global_status_innodb_row_ops_total": "the impact: rows read and changed per second (Innodb_rows_*, MySQL)",
    "mysql_global_status_threads_running": "Host: threads running beside the load average",
    "mysql_global_status_innodb_buffer_pool_reads": "Buffer pool: hit ratio (reads from disk)",
    "mysql_global_status_innodb_buffer_pool_read_requests": "Buffer pool: hit ratio (logical reads)",
    "mysql_global_status_innodb_log_write_requests": "REDO: write requests per second",
    "mysql_global_status_innodb_row_lock_waits": "Contention: row lock waits per second",
    "mysql_global_variables_innodb_buffer_pool_instances": "Buffer pool: LRU scan depth per instance",
    "mysql_global_variables_innodb_lru_scan_depth": "Buffer pool: the LRU scan depth setting",
}

# prometheus/node_exporter: the cpu, loadavg, meminfo, diskstats and netdev collectors (on by default).
NODE_EXPORTER = {
    "node_cpu_seconds_total": "Host and the host-bound class: CPU busy and iowait",
    "node_load1": "Host: load average",
    "node_memory_MemTotal_bytes": "Host: memory used",
    "node_memory_MemAvailable_bytes": "Host: memory used and available",
    "node_memory_Cached_bytes": "Host: page cache",
    "node_memory_Buffers_bytes": "Host: page cache",
    "node_disk_reads_completed_total": "Host and REDO: disk reads",
    "node_disk_writes_completed_total": "Host and REDO: disk writes",
    "node_disk_read_bytes_total": "Host: bytes read",
    "node_disk_written_bytes_total": "Host: bytes written",
    "node_disk_read_time_seconds_total": "Host: read latency",
    "node_disk_write_time_seconds_total": "Host and REDO: write latency",
    "node_disk_io_time_seconds_total": "Host: disk utilisation",
    "node_disk_flush_requests_total": "REDO on MariaDB 10.8+: the data device's flushes",
    "node_disk_flush_requests_time_seconds_total": "REDO on MariaDB 10.8+: the data device's flush latency",
    "node_network_receive_bytes_total": "Host: network in",
    "node_network_transmit_bytes_total": "Host: network out",
}

# Prometheus' own series.
PROMETHEUS = {
    "up": "exporter down; the data device's label on node_exporter's target",
    "ALERTS": "alert annotations and the Overview's firing alerts",
}


def check(source: str, name: str) -> str:
    """``name`` when it is on the list of ``source`` ("mysqld", "node" or "" for Prometheus' own)."""
    known = {"mysqld": MYSQLD_EXPORTER, "node": NODE_EXPORTER, "": PROMETHEUS}[source]
    if name not in known and name not in PROMETHEUS:
        raise ValueError(f"{name} is not a series the stack reads from {source or 'Prometheus'}: add it to "
                         "signals/external.py, with what reads it, if it is meant")
    return name
