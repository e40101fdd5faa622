"""The servers tests start: the native stack's own launchers (stack/servers.py), re-exported."""

__all__ = ["CONFIGS", "EXPORTER_GRANTS", "EXPORTER_PASSWORD", "EXPORTER_USER", "FLAVORS", "MONITORING_OPTIONS",
           "MYSQL_MONITORING_OPTIONS", "MariaDB", "MySQL", "Server", "Sysbench", "TrixieMariaDB", "free_port",
           "options", "server", "wait_for"]

from stack.servers import (
    CONFIGS,
    EXPORTER_GRANTS,
    EXPORTER_PASSWORD,
    EXPORTER_USER,
    FLAVORS,
    MONITORING_OPTIONS,
    MYSQL_MONITORING_OPTIONS,
    MariaDB,
    MySQL,
    Server,
    Sysbench,
    TrixieMariaDB,
    free_port,
    options,
    server,
    wait_for,
)
