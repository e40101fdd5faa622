"""The evidence a bundle carries: the captures an exporter took when a page fired (``export --captures``:
texts named ``<capture id>-<snapshot>-<file>`` and ``<capture id>-capture.json``) and the texts ``record
--texts`` kept (``<time>-engine-innodb-status.txt``), each read as ``innodb-exporter parse`` reads a text.

Everything here comes from the bundle's author, or from users of the server who wrote statement text into
the status output: it is parsed within bounds (limits.py, the parser's own) and only ever shown, escaped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from innodb_bundle.bundle import BundleError
from innodb_bundle.manifest import load_json
from innodb_bundle.terminal import printable
from innodb_exporter import moment, offline
from innodb_exporter.capture.store import ID_RE, MANIFEST as CAPTURE_MANIFEST
from innodb_exporter.parsers.innodb_status import InnodbStatus

TOP = 5  # transactions and latches listed per capture
MAX_ROWS = 10_000  # rows of an INNODB_TRX snapshot read
_CAPTURE_FILE = re.compile(r"(.+)-([0-9]{1,3})-([a-z-]{1,40}\.(?:txt|tsv))")
_CAPTURE_MANIFEST = re.compile(r"(.+)-" + re.escape(CAPTURE_MANIFEST))
# record --texts: 2026-11-21T06-40-00.000Z-engine-innodb-status.txt
_RECORDED = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}\.[0-9]{3}Z)-"
                       r"(engine-innodb-status\.txt|engine-innodb-mutex\.tsv)")
STATUS = "engine-innodb-status.txt"
TRX = "innodb-trx.tsv"


@dataclass
class Transaction:
    """A row of INNODB_TRX as the capture kept it (the statement a digest unless it kept query text)."""

    trx_id: str
    state: str
    started: str
    seconds: int | None
    thread_id: str
    rows_locked: str
    rows_modified: str
    query: str


@dataclass
class Snapshot:
    number: int
    at: str
    texts: dict[str, str] = field(default_factory=dict)  # file name -> text
    status: InnodbStatus | None = None
    findings: list = field(default_factory=list)  # moment.Finding: what this one text says of each class
    transactions: list[Transaction] | None = None  # INNODB_TRX, when the capture has it


@dataclass
class Capture:
    id: str
    recorded: bool  # kept by record --texts, not captured for a page
    instance: str = ""
    started: str = ""
    alerts: list[tuple[str, str]] = field(default_factory=list)  # (alert name, severity)
    query_text: bool | None = None
    errors: list[str] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what could not be read in the capture itself
    files: list[tuple[str, str]] = field(default_factory=list)  # every text of it, as kept

    def longest(self) -> tuple[list, str]:
        """The longest-running transactions of the snapshot whose oldest is oldest, and where they were read:
        INNODB_TRX where the capture has it, else the status text's transaction list."""
        with_trx = [x for x in self.snapshots if x.transactions]
        if with_trx:
            snapshot = max(with_trx, key=lambda x: max(t.seconds or 0 for t in x.transactions))
            rows = sorted(snapshot.transactions, key=lambda t: -(t.seconds or 0))[:TOP]
            return rows, f"INNODB_TRX, snapshot {snapshot.number}"
        listed = [x for x in self.snapshots if x.status and x.status.transactions and x.status.transactions.longest]
        if listed:
            snapshot = max(listed, key=lambda x: x.status.transactions.longest[0].seconds)
            return (snapshot.status.transactions.longest[:TOP],
                    f"the transaction list of the status text, snapshot {snapshot.number} (statement text can "
                    "imitate its lines)")
        return [], ""

    def latches(self) -> list[tuple[str, int, int]]:
        """(latch, the most threads waiting for it in one snapshot, the snapshot), the most waited first."""
        most: dict[str, tuple[int, int]] = {}
        for snapshot in self.snapshots:
            counts: dict[str, int] = {}
            for wait in snapshot.status.semaphores.waits if snapshot.status and snapshot.status.semaphores else ():
                counts[wait.latch] = counts.get(wait.latch, 0) + 1
            for latch, n in counts.items():
                if n > most.get(latch, (0, 0))[0]:
                    most[latch] = (n, snapshot.number)
        ranked = sorted(most.items(), key=lambda item: (-item[1][0], item[0]))
        return [(latch, n, number) for latch, (n, number) in ranked[:TOP]]

    def deadlock(self):
        """The latest deadlock the snapshots show, and the snapshot that shows it."""
        for snapshot in reversed(self.snapshots):
            if snapshot.status and snapshot.status.deadlock and snapshot.status.deadlock.transactions:
                return snapshot.status.deadlock, snapshot.number
        return None, None


RECORDED_ID = "recorded"  # the texts record --texts kept, as one series of snapshots


def read(texts: list[tuple[str, str]]) -> list[Capture]:
    """The captures among a bundle's texts (member names without ``texts/``) in time order; the texts record
    kept come last, as one capture whose snapshots are the times it kept them."""
    captures: dict[str, Capture] = {}
    recorded: dict[str, dict[str, str]] = {}  # time -> file -> text
    for name, text in texts:
        if match := _RECORDED.fullmatch(name):
            recorded.setdefault(match[1], {})[match[2]] = text
            captures.setdefault(RECORDED_ID, Capture(RECORDED_ID, recorded=True)).files.append((name, text))
            continue
        if (match := _CAPTURE_MANIFEST.fullmatch(name)) and ID_RE.match(match[1]):
            _describe(captures.setdefault(match[1], Capture(match[1], recorded=False)), text)
        elif (match := _CAPTURE_FILE.fullmatch(name)) and ID_RE.match(match[1]):
            capture = captures.setdefault(match[1], Capture(match[1], recorded=False))
            _snapshot(capture, int(match[2]), "").texts[match[3]] = text
        else:
            continue
        captures[match[1]].files.append((name, text))
    for number, stamp in enumerate(sorted(recorded), start=1):
        capture = captures[RECORDED_ID]
        capture.snapshots.append(Snapshot(number, _stamp_iso(stamp), recorded[stamp]))
        capture.started = capture.started or _stamp_iso(stamp)
    out = sorted((c for c in captures.values() if not c.recorded), key=lambda c: c.id)
    out += [c for c in captures.values() if c.recorded]
    for capture in out:
        capture.snapshots.sort(key=lambda x: x.number)
        for snapshot in capture.snapshots:
            _read_snapshot(snapshot)
    return out


def _snapshot(capture: Capture, number: int, at: str) -> Snapshot:
    for snapshot in capture.snapshots:
        if snapshot.number == number:
            return snapshot
    snapshot = Snapshot(number, at)
    capture.snapshots.append(snapshot)
    return snapshot


def _stamp_iso(stamp: str) -> str:
    """2026-11-21T06-40-00.000Z -> 2026-11-21T06:40:00.000Z"""
    return stamp[:13] + ":" + stamp[14:16] + ":" + stamp[17:]


def _text(value, limit: int = 200) -> str:
    return printable(value, limit) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""


def _describe(capture: Capture, text: str) -> None:
    """capture.json: what was captured, when and why; anything else in it is ignored."""
    try:
        data = load_json(text.encode("utf-8", "replace"), "capture.json")
    except BundleError as exc:
        capture.problems.append(str(exc))
        return
    if not isinstance(data, dict):
        capture.problems.append("capture.json is not an object")
        return
    capture.instance, capture.started = _text(data.get("instance")), _text(data.get("started"), 40)
    capture.query_text = data.get("query_text") if isinstance(data.get("query_text"), bool) else None
    for alert in data.get("alerts") if isinstance(data.get("alerts"), list) else ():
        labels = alert.get("labels") if isinstance(alert, dict) else None
        if isinstance(labels, dict):
            capture.alerts.append((_text(labels.get("alertname"), 100) or "?", _text(labels.get("severity"), 40)))
    capture.errors = [_text(e, 300) for e in data.get("errors", [])[:20]] if isinstance(data.get("errors"), list) else []
    for entry in data.get("snapshots") if isinstance(data.get("snapshots"), list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("number"), int) and 0 < entry["number"] < 1000:
            _snapshot(capture, entry["number"], "").at = _text(entry.get("at"), 40)


def _read_snapshot(snapshot: Snapshot) -> None:
    status = snapshot.texts.get(STATUS)
    if status is not None:
        # One text is one output, as innodb-exporter parse reads a bundle's texts.
        snapshot.status = offline.parse_texts([status]).status
        snapshot.findings = moment.assess(snapshot.status)
    trx = snapshot.texts.get(TRX)
    if trx is not None:
        snapshot.transactions = _transactions(trx)


_ESCAPES = {"\\\\": "\\", "\\t": "\t", "\\n": "\n"}


def _cell(value: str) -> str:
    """A cell as the capture wrote it (tabs, newlines and backslashes escaped)."""
    return re.sub(r"\\[\\tn]", lambda m: _ESCAPES[m.group()], value)


def _transactions(text: str) -> list[Transaction]:
    lines = text.split("\n")
    header = lines[0].split("\t") if lines else []
    out = []
    for line in lines[1:MAX_ROWS + 1]:
        if not line:
            continue
        row = dict(zip(header, (_cell(c) for c in line.split("\t"))))
        age = row.get("age_seconds", "")
        out.append(Transaction(_text(row.get("trx_id", ""), 40), _text(row.get("state", ""), 40),
                               _text(row.get("started", ""), 40), int(age) if age.isdigit() and len(age) <= 9 else None,
                               _text(row.get("thread_id", ""), 40), _text(row.get("rows_locked", ""), 20),
                               _text(row.get("rows_modified", ""), 20), _text(row.get("query", ""), 300)))
    return out
