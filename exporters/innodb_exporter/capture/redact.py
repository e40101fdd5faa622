"""Query texts and row values reduced to a digest and a length, for captures kept without query text.

Where a server prints user data in its texts: the statement after each ``MySQL thread id …`` line (``MariaDB thread id`` since 10.6) (in
TRANSACTIONS and LATEST DETECTED DEADLOCK), the column values of record lock dumps (``0: len 4; hex …;
asc …;``), and the statement and rows of LATEST FOREIGN KEY ERROR. ``redact_status`` replaces exactly
those, so that the structure an operator reads (transactions, their age and state, locks, waits) stays.
The same digest (``digest``) labels a statement in INNODB_TRX and the processlist, so one statement can be
followed across the texts of a capture without keeping it.

Limits: a statement's text ends at the first line that starts like InnoDB's own lines; a statement that
contains such a line is kept from there on (its author's own text, not another session's).
"""

from __future__ import annotations

import hashlib
import re

# MySQL thread id 13, OS thread handle 140565555840704, query id 349085 localhost root updating
# MariaDB thread id 16, OS thread handle 140320101123776, query id 318011 localhost root Updating    (10.6+)
_THREAD_LINES = ("MySQL thread id ", "MariaDB thread id ")
# Lines InnoDB prints after a statement: the next transaction, lock and read view lines, deadlock markers,
# and the dashed lines of section headers.
_STRUCTURAL = ("---", "***", "Trx read view", "Trx #rec lock", "TABLE LOCK", "RECORD LOCKS", "Record lock",
               "TRANSACTION ", "LOCK WAIT", "mysql tables in use", "END OF INNODB MONITOR OUTPUT")
# 0: len 4; hex 80002749; asc   'I;;
_ROW_VALUE_RE = re.compile(r"^(\s*\d+: len \d+;) hex [0-9a-f]*; asc .*$")
_FOREIGN_KEY_HEADER = "LATEST FOREIGN KEY ERROR"


def digest(text: str) -> str:
    """A short stable name for a statement: its length and the start of its SHA-256."""
    data = (text or "").strip().encode("utf-8", "replace")
    return f"<{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}>"


def redact_status(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    statement: list[str] = []
    in_statement = in_foreign_key = False
    for i, line in enumerate(lines):
        if _is_header(lines, i):
            in_foreign_key = line == _FOREIGN_KEY_HEADER
            in_statement = False
        elif in_foreign_key and not _is_dashes(line):
            if line.strip():
                statement.append(line)
            continue
        elif in_statement:
            if not line.startswith(_STRUCTURAL):
                statement.append(line)
                continue
            in_statement = False
        if statement:
            out.append(digest("\n".join(statement)))
            statement = []
        if line.startswith(_THREAD_LINES):
            in_statement = True
        match = _ROW_VALUE_RE.match(line)
        out.append(f"{match.group(1)} <value>;" if match else line)
    if statement:
        out.append(digest("\n".join(statement)))
    return "\n".join(out)


def _is_dashes(line: str) -> bool:
    return len(line) >= 3 and set(line.rstrip()) == {"-"}


def _is_header(lines: list[str], i: int) -> bool:
    """A section title between two dashed lines."""
    return (0 < i < len(lines) - 1 and lines[i] and not lines[i].startswith("-")
            and _is_dashes(lines[i - 1]) and _is_dashes(lines[i + 1]))
