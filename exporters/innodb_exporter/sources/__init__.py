"""The sources the exporter reads, one module per query, named after it.

Each module has ``NAME``; ``FIELD``, the ``model.Snapshot`` attribute that keeps what it read;
``PRIVILEGE``, what the exporter's user needs for it; ``unsupported(server)``, a reason why the
server cannot answer it, or None; ``fetch(cursor, server, names)``, which runs the query; and
``from_rows(rows)``, which turns the result into a small typed value. Fetch is kept apart from
``from_rows`` so that tests feed recorded rows through exactly the code a live scrape runs.
"""

from . import (
    engine_innodb_mutex,
    engine_innodb_status,
    global_status,
    global_variables,
    innodb_metrics,
    innodb_trx,
    perf_schema_latches,
    perf_schema_redo_file,
)

# In scrape order. global_status first: it is the core source that decides innodb_up.
ALL = (
    global_status,
    global_variables,
    innodb_metrics,
    engine_innodb_status,
    innodb_trx,
    engine_innodb_mutex,
    perf_schema_latches,
    perf_schema_redo_file,
)
BY_NAME = {s.NAME: s for s in ALL}
