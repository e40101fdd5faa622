"""``innodb-exporter parse FILE``: the metrics a saved ``SHOW ENGINE INNODB STATUS`` text yields.

The text may come from pt-stalk, an error log (``innodb_status_output``), a support ticket or the
``mysql`` client; the metrics have the same names as the live exporter's. A file is one output: statement
text inside it can forge a monitor output header line, and no rule can tell that header from a real one,
so a file holding more than one header is refused. An error log (``--error-log``) holds several: it is
cut at their headers and yields the metrics of the last complete one, which is what a forged header can
fake. Files are read within READ_LIMIT bytes.
"""

from __future__ import annotations

import collections
import os
import re
import sys
from dataclasses import dataclass

from .metrics import model
from .metrics.snapshot import Snapshot
from .parsers import innodb_status
from .scraping import exposition, health
from .sources import EngineInnodbStatus

# 2026-11-21 06:40:00 0x7f51881c16c0 INNODB MONITOR OUTPUT
_MONITOR_HEADER_RE = re.compile(r"^(?!END OF ).*INNODB MONITOR OUTPUT[ \t]*$", re.M)

_MIB = 2**20
# 64 times the most SHOW ENGINE INNODB STATUS returns; an error log's end holds its last outputs.
READ_LIMIT_MIB = 64
READ_LIMIT = READ_LIMIT_MIB * _MIB


class Refused(ValueError):
    """A file parse does not read, with the one line that says why."""


@dataclass
class OfflineResult:
    status: innodb_status.InnodbStatus
    outputs_found: int
    families: list


def load(path: str, error_log: bool) -> tuple[list[str], str | None]:
    """The outputs a saved text holds (``-``: standard input), and a note when only its end was read."""
    name = "standard input" if path == "-" else path
    if path == "-":
        text, note = _read(sys.stdin.buffer, name, error_log)
    else:
        with open(path, "rb") as f:
            text, note = _read(f, name, error_log)
    return outputs_of(text, name, error_log), note


def _read(f, name: str, error_log: bool) -> tuple[str, str | None]:
    """The text of a binary file object: all of it, at most READ_LIMIT bytes (else Refused); with
    ``error_log``, its last READ_LIMIT bytes, and then a note that says so."""
    data, more = _tail(f) if error_log else _head(f)
    if not more:
        return data.decode("utf-8", "replace"), None
    if not error_log:
        raise Refused(f"{name} is larger than {READ_LIMIT_MIB} MiB, more than one status output can be; an error "
                      f"log is read with --error-log (its last {READ_LIMIT_MIB} MiB)")
    note = f"{name} is larger than {READ_LIMIT_MIB} MiB: its last {READ_LIMIT_MIB} MiB are read"
    return data.decode("utf-8", "replace"), note


def _head(f) -> tuple[bytes, bool]:
    data = f.read(READ_LIMIT + 1)
    return data[:READ_LIMIT], len(data) > READ_LIMIT


def _tail(f) -> tuple[bytes, bool]:
    """The last READ_LIMIT bytes: sought in a file, kept while streaming from a pipe."""
    if f.seekable():
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - READ_LIMIT))
        return f.read(READ_LIMIT), size > READ_LIMIT
    chunks, size = collections.deque(), 0
    while chunk := f.read(_MIB):
        chunks.append(chunk)
        size += len(chunk)
        while size - len(chunks[0]) >= READ_LIMIT:
            size -= len(chunks.popleft())
    data = b"".join(chunks)
    return data[-READ_LIMIT:], len(data) > READ_LIMIT


def outputs_of(text: str, name: str, error_log: bool) -> list[str]:
    """The outputs to read: an error log's, cut at their headers; else the text, which must be one."""
    if error_log:
        return split_outputs(text)
    found = sum(1 for _ in _MONITOR_HEADER_RE.finditer(text))
    if found > 1:
        raise Refused(f"{name} holds {found} monitor output headers: an error log is read with --error-log (its "
                      "last complete output); in one output, statement text can forge a header")
    return [text]


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
