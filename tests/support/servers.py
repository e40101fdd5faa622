"""The servers tests start: the native stack's own launchers (stack/servers.py), re-exported."""

__all__ = ["EXPORTER_PASSWORD", "EXPORTER_USER", "MONITORING_OPTIONS", "MariaDB", "Sysbench", "free_port", "wait_for"]

from stack.servers import (
    EXPORTER_PASSWORD,
    EXPORTER_USER,
    MONITORING_OPTIONS,
    MariaDB,
    Sysbench,
    free_port,
    wait_for,
)
