"""What one scrape read: a typed value per source, None where the source was not read."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..parsers.innodb_mutex import MutexReading
from ..parsers.innodb_status import InnodbStatus
from ..sources.innodb_metrics import Counter
from ..sources.innodb_trx import TrxSummary
from ..sources.perf_schema_latches import LatchInstrument
from ..sources.perf_schema_redo_file import RedoFileIO
from ..sources.server import ServerInfo
from . import redo


@dataclass
class Snapshot:
    server: ServerInfo | None = None
    status: dict[str, str] | None = None  # SHOW GLOBAL STATUS, lower-case names
    variables: dict[str, str] | None = None  # SHOW GLOBAL VARIABLES, lower-case names
    counters: dict[str, Counter] | None = None  # INNODB_METRICS rows by name
    innodb_status: InnodbStatus | None = None
    mutexes: MutexReading | None = None
    trx: TrxSummary | None = None
    latches: list[LatchInstrument] | None = None
    redo_file: RedoFileIO | None = None
    _limits: redo.Limits | None = field(default=None, repr=False)

    def limits(self) -> redo.Limits:
        """The REDO limits computed from the settings (cached: several metrics ask)."""
        if self._limits is None:
            if self.server is None or self.variables is None:
                self._limits = redo.Limits()
            else:
                settings = redo.Settings.from_variables(self.variables, self.status)
                self._limits = redo.limits(self.server.flavor, self.server.version, settings)
        return self._limits
