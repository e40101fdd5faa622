"""Post-incident replay: ``innodb-replay export|record|import``.

Take the metrics of an incident window off a Prometheus (export) or off a host where none runs (record),
carry the bundle elsewhere, and load it into a fresh Prometheus (import) that the same dashboards read.
"""
