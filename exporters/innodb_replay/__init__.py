"""Post-incident replay: ``innodb-replay export|record|import``.

Take the metrics of an incident window off a Prometheus (export) or off a host where none runs (record),
carry the bundle elsewhere, and load it into a fresh Prometheus (import) that the same dashboards read.

A tool of its own above the exporter (one distribution). The bundle format is ``innodb_bundle``, below
both: the exporter reads a bundle's texts from it (``innodb-exporter parse BUNDLE``). Replay imports from
``innodb_exporter`` the version, the server connection and my.cnf reading (``record --texts``), and the
captures' listing format (``export --captures``); the exporter imports nothing of replay.
"""

from innodb_exporter import __version__

TOOL = f"innodb-replay {__version__}"  # written into every bundle's manifest

__all__ = ["TOOL", "__version__"]
