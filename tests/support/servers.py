"""The servers tests start: the native stack's own launchers (stack/servers.py), re-exported."""

from stack.servers import (  # noqa: F401
    EXPORTER_PASSWORD,
    EXPORTER_USER,
    MONITORING_OPTIONS,
    MariaDB,
    Sysbench,
    free_port,
    wait_for,
)
