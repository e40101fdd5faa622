"""Post-incident replay: ``innodb-replay export|record|import``.

Take the metrics of an incident window off a Prometheus (export) or off a host where none runs (record),
carry the bundle elsewhere, and load it into a fresh Prometheus (import) that the same dashboards read.

A tool of its own beside the exporter (one distribution): it imports from ``innodb_exporter`` only the
version and, for ``record --texts``, the server connection; the exporter imports only
``innodb_replay.bundle.read_texts`` (``innodb-exporter parse BUNDLE``).
"""

from innodb_exporter import __version__

__all__ = ["__version__"]
