"""``innodb-exporter parse FILE``: the metrics a saved ``SHOW ENGINE INNODB STATUS`` text yields.

The text may come from pt-stalk, an error log (``innodb_status_output``), a support ticket or the
``mysql`` client; the metrics have the same names as the live exporter's. A file holding several
monitor outputs (an error log) yields the metrics of the last complete one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import exposition, model
from .parsers import innodb_status

# 2026-11-21 06:40:00 0x7f51881c16c0 INNODB MONITOR OUTPUT
_MONITOR_HEADER_RE = re.compile(r"^(?!END OF ).*INNODB MONITOR OUTPUT\s*$", re.M)


@dataclass
class OfflineResult:
    status: innodb_status.InnodbStatus
    outputs_found: int
    families: list


def split_outputs(text: str) -> list[str]:
    """Cut a text holding several monitor outputs into one text per output."""
    starts = [m.start() for m in _MONITOR_HEADER_RE.finditer(text)]
    if len(starts) <= 1:
        return [text]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def parse_text(text: str, top: int = 20) -> OfflineResult:
    outputs = split_outputs(text)
    parsed = [innodb_status.parse(t) for t in outputs]
    complete = [p for p in parsed if p.complete]
    status = complete[-1] if complete else max(parsed, key=lambda p: p.sections_found)
    snapshot = model.Snapshot(innodb_status=status)
    fams = exposition.model_families(snapshot, top)
    parse_errors = exposition.new_family(model.BY_NAME["innodb_exporter_parse_errors_total"])
    parse_errors.add_metric(["engine_innodb_status"], float(len(status.problems)))
    return OfflineResult(status, len(outputs), fams + [parse_errors])


def render(result: OfflineResult, openmetrics: bool = False) -> bytes:
    accept = "application/openmetrics-text; version=1.0.0" if openmetrics else ""
    return exposition.render(result.families, accept)[0]
