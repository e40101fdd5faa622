"""``innodb-exporter parse FILE``: the metrics a saved ``SHOW ENGINE INNODB STATUS`` text yields.

The text may come from pt-stalk, an error log (``innodb_status_output``), a support ticket or the
``mysql`` client; the metrics have the same names as the live exporter's. A file holding several
monitor outputs (an error log) yields the metrics of the last complete one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import exposition, health, model
from .parsers import innodb_status
from .snapshot import Snapshot
from .sources import EngineInnodbStatus

# 2026-11-21 06:40:00 0x7f51881c16c0 INNODB MONITOR OUTPUT
_MONITOR_HEADER_RE = re.compile(r"^(?!END OF ).*INNODB MONITOR OUTPUT[ \t]*$", re.M)


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


def parse_text(text: str) -> OfflineResult:
    """A text that may hold several outputs (an error log): cut at their headers, which statement text in
    one of them can imitate; read texts known to be one output each with parse_texts."""
    return parse_texts(split_outputs(text))


def parse_texts(outputs: list[str]) -> OfflineResult:
    """The metrics of the last complete output (else the one with the most sections)."""
    parsed = [innodb_status.parse(t) for t in outputs]
    complete = [p for p in parsed if p.complete]
    status = complete[-1] if complete else max(parsed, key=lambda p: p.sections_found)
    fams = [metric.family.build(samples) for metric, samples in model.evaluate(Snapshot(innodb_status=status))]
    fams.append(health.PARSE_ERRORS.build([((EngineInnodbStatus.name,), float(len(status.problems)))]))
    return OfflineResult(status, len(outputs), fams)


def render(result: OfflineResult, openmetrics: bool = False) -> bytes:
    accept = "application/openmetrics-text; version=1.0.0" if openmetrics else ""
    return exposition.render(result.families, accept)[0]
