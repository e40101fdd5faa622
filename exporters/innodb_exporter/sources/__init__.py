"""The sources the exporter reads, one module per query, named after it (see ``base.Source``)."""

from .base import Source
from .engine_innodb_mutex import EngineInnodbMutex
from .engine_innodb_status import EngineInnodbStatus
from .global_status import GlobalStatus, GlobalVariables
from .innodb_metrics import InnodbMetrics
from .innodb_trx import InnodbTrx
from .perf_schema_latches import PerfSchemaLatches
from .perf_schema_redo_file import PerfSchemaRedoFile

# In scrape order. GlobalStatus first: it is the core source that decides innodb_up.
CATALOGUE: tuple[type[Source], ...] = (
    GlobalStatus,
    GlobalVariables,
    InnodbMetrics,
    EngineInnodbStatus,
    InnodbTrx,
    EngineInnodbMutex,
    PerfSchemaLatches,
    PerfSchemaRedoFile,
)
NAMES: tuple[str, ...] = tuple(s.name for s in CATALOGUE)
CORE = GlobalStatus.name
