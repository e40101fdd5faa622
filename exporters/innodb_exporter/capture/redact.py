"""Query texts and row values reduced to a digest and a length, for captures kept without query text.

Where a server prints user data in SHOW ENGINE INNODB STATUS: the statement after each thread header
(``MySQL thread id …, query id …``, ``MariaDB thread id`` since 10.6) in LATEST FOREIGN KEY ERROR, LATEST
DETECTED DEADLOCK and TRANSACTIONS, the column values of record dumps (``0: len 4; hex …; asc …;``), and
the rest of LATEST FOREIGN KEY ERROR (a DDL's text). ``redact_status`` replaces exactly those, so that the
structure an operator reads (transactions, their age and state, locks, waits) stays. The same digest
(``digest``) labels a statement in INNODB_TRX and the processlist, so one statement can be followed across
the texts of a capture without keeping it.

Redaction by the structure the server prints, not by line prefixes. A statement is printed by
``innobase_mysql_print_thd`` (ha_innodb.cc): the thread header, a newline and the statement, cut by the
server. MariaDB 10.11 and 11.8 print at most 3,071 bytes of header and statement together, MySQL 9 at
most 3,000 bytes of statement after its header (older sources cut both at 1,024), so no server prints
more than ``STATEMENT_BOUND`` bytes of statement after its header (tests/integration/test_capture_redaction.py
measures it on every flavour). Then InnoDB's printer goes on with its own lines (``trx_print_low`` in
trx0trx.cc, ``lock_trx_print_wait_and_mvcc_state`` and the deadlock printer in lock0lock.cc): the read
view, the lock wait, the locks, the next transaction, the deadlock's markers, the next section. Any of
those a statement can hold too, so no single line ends a statement. What ends it is the structure: every
line the server prints there is one of a known set (``_SERVER_LINES``, each matched whole), and the
statement's text is the only free text. So a statement runs from its header to the last line inside its
bound that is not such a line; past the bound every line is the server's again. Free text in a statement
never survives, whatever lines it imitates before or after it; what may survive of a statement is a line
of it that is, whole, a line InnoDB prints there (its numbers and names only).

``... truncated...`` (the server's mark where it cut a list longer than 1 MiB) is treated like a thread
header: the text after it may start inside a statement whose header was cut away.
"""

from __future__ import annotations

import hashlib
import re

# The most statement text a server prints after a thread header, its newline included (measured: MariaDB
# 3,071 bytes of header and statement, MySQL 9 3,000 of statement). Lines that start past it are the server's.
STATEMENT_BOUND = 3072

# MySQL thread id 13, OS thread handle 140565555840704, query id 349085 localhost root updating
# MariaDB thread id 16, OS thread handle 140320101123776, query id 318011 localhost root Updating    (10.6+)
# MySQL thread id 4, query id 12 localhost root                                                   (5.1)
_THREAD_RE = re.compile(r"(?:MySQL|MariaDB) thread id \d+, (?:OS thread handle (?:0x)?[0-9a-f]+, )?query id \d+.*")
_CUT_MARK = "... truncated..."  # innodb_show_status() (ha_innodb.cc): the list was cut here
# 0: len 4; hex 80002749; asc   'I;;      |  3: len 30; hex 3131...; asc 1111...; (total 120 bytes);
_ROW_VALUE_RE = re.compile(r"^(\s*\d+: len \d+;) hex [0-9a-f]*; asc .*$")
_FOREIGN_KEY_HEADER = "LATEST FOREIGN KEY ERROR"
_SECTION_TITLES = (_FOREIGN_KEY_HEADER, "LATEST DETECTED DEADLOCK", "TRANSACTIONS")
_FILE_IO = "FILE I/O"  # the first section after the user text (srv0srv.cc srv_printf_innodb_monitor)

_ID = r"`(?:[^`]|``)*`"  # an identifier as ut_print_name prints it
_TABLE = rf"{_ID}\.{_ID}(?: /\* Partition {_ID}(?:, Subpartition {_ID})? \*/)?"
_LOCK_MODE = (r"lock(?:_| )mode (?:S|X|IS|IX|AUTO-INC)(?: locks (?:rec but not gap|gap before rec))?"
              r"(?: insert intention)?(?: waiting)?")
# Every line InnoDB prints between statements, in the three sections that hold them, and nothing with free
# text of its own (op_info is a fixed string of lower-case words in the source; names are backquoted).
_SERVER_LINES = re.compile("|".join((
    r"",
    r"-{3,}",  # ------------ (a section header's rules; the end of a lock wait's block)
    "|".join(_SECTION_TITLES),
    # 2026-11-23 11:51:39 0x7f401c1df6c0 Transaction:  |  2026-11-23 11:51:39 139857855829696  |  110323 10:07:05 Transaction:
    r"(?:\d{4}-\d\d-\d\d|\d{6}) +\d\d?:\d\d:\d\d(?: (?:0x)?[0-9a-f]+)?(?: Transaction:)?",
    # *** (1) TRANSACTION:  |  *** (2) HOLDS THE LOCK(S):  |  *** WE ROLL BACK TRANSACTION (2)  |  *** CONFLICTING WITH:
    r"\*\*\* (?:\(\d+\) )?(?:TRANSACTION:|HOLDS THE LOCK\(S\):|WAITING FOR THIS LOCK TO BE GRANTED:|CONFLICTING WITH:)",
    r"\*\*\* WE ROLL BACK TRANSACTION \(\d+\)",
    r"TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH, WE WILL ROLL BACK FOLLOWING TRANSACTION",
    r"InnoDB: transactions deadlock detected, dumping detailed information\.",
    # ---TRANSACTION 32385, ACTIVE 0 sec fetching rows  |  ---TRANSACTION (0x7f3e8c1d8b80), not started
    # ---TRANSACTION 0 80157600, ACTIVE 4 sec, process no 3396, OS thread id 1148250464 fetching rows
    # TRANSACTION 1607, ACTIVE 1 sec starting index read  |  ---TRANSACTION 2BB0, ACTIVE (PREPARED) 31 sec
    r"(?:---)?TRANSACTION (?:\d+|[0-9A-F]+(?: [0-9A-F]+)?|\(0x[0-9a-f]+\)), "
    r"(?:not started|forced rollback|ACTIVE(?: \(PREPARED\))? \d+ sec|COMMITTED IN MEMORY|state \d+)"
    r"(?:, process no \d+)?(?:, OS thread id \d+)?(?: [a-z][a-z -]{0,80}[a-z])?(?: recovered trx)?"
    r"(?:, thread declared inside InnoDB \d+)?",
    r"mysql tables in use \d+, locked \d+",  # mysql tables in use 1, locked 1
    # LOCK WAIT 3 lock struct(s), heap size 1128, 2 row lock(s), undo log entries 1  |  , holds adaptive hash latch
    r"(?:LOCK WAIT |ROLLING BACK |COMMITTING |que state \d+ )?(?:\d+ lock struct\(s\), heap size \d+, \d+ row lock\(s\))?"
    r"(?:, holds adaptive hash latch)?(?:, undo log entries \d+)?",
    r"Trx read view will not see trx with id >= \d+, sees < \d+",
    # ------- TRX HAS BEEN WAITING 64 SEC FOR THIS LOCK TO BE GRANTED:   (MariaDB 10.6+: 27845 us)
    r"------- TRX HAS BEEN WAITING \d+ (?:SEC|us) FOR THIS LOCK TO BE GRANTED:",
    # RECORD LOCKS space id 4 page no 4 n bits 72 index PRIMARY of table `app`.`t` trx id 1607 lock_mode X locks rec but not gap
    rf"RECORD LOCKS space id \d+ page no \d+ n bits \d+ index (?:{_ID}|\w+) of table {_TABLE}"
    rf"(?: trx table locks \d+ total table locks \d+ )? trx id \d+ {_LOCK_MODE}"
    r"(?: lock hold time \d+ wait time before grant \d+ )?",
    rf"TABLE LOCK table {_TABLE} trx id \d+ lock mode (?:S|X|IS|IX|AUTO-INC)(?: waiting)?",  # TABLE LOCK table `app`.`t` trx id 1 lock mode IX
    # Record lock, heap no 2 PHYSICAL RECORD: n_fields 4; compact format; info bits 0
    r"Record lock, heap no \d+(?: PHYSICAL RECORD: n_fields \d+; (?:compact|compressed|redundant) format; info bits \d+)?",
    r"(?:PHYSICAL RECORD|DATA TUPLE): (?:n_fields )?\d+(?: fields)?;(?: (?:compact|compressed|redundant) format; info bits \d+)?",
    r"\s*\d+: len \d+; hex [0-9a-f]*; asc .*",  # rewritten to its length wherever it is (_ROW_VALUE_RE)
    r"\s*\d+: SQL (?:NULL|DEFAULT);",
    r"\d+ LOCKS PRINTED FOR THIS TRX: SUPPRESSING FURTHER PRINTS",
    r"Trx id counter [0-9A-F]+(?: [0-9A-F]+)?",  # Trx id counter 1611
    r"Purge done for trx's n:o < [0-9A-F]+(?: [0-9A-F]+)? undo n:o < [0-9A-F]+(?: [0-9A-F]+)?(?: state: [a-z ]+)?",
    r"History list length \d+",
    r"LIST OF TRANSACTIONS FOR EACH SESSION:",
    r"Total number of lock structs in row lock hash table \d+",
    r"Trx #rec lock waits \d+ #table lock waits \d+",  # Percona Server
    r"Trx total (?:rec|table) lock wait time \d+ SEC",
    re.escape(_CUT_MARK),
    # LATEST FOREIGN KEY ERROR (dict0dict.cc, row0ins.cc)
    rf"Foreign key constraint fails for table {_TABLE}:",
    r",",
    rf"  CONSTRAINT {_ID} FOREIGN KEY \((?:{_ID}(?:, )?)+\) REFERENCES {_ID}(?:\.{_ID})? \((?:{_ID}(?:, )?)+\)"
    r"(?: ON (?:DELETE|UPDATE) (?:CASCADE|SET NULL|NO ACTION|RESTRICT|SET DEFAULT))*"
    rf"(?: in parent table, in index (?:{_ID}|\w+) tuple:)?",
    rf"Trying to (?:add in child table|add to index|delete or update in parent table), in index (?:{_ID}|\w+) tuple:",
    rf"But in (?:parent|child) table {_TABLE}, in index (?:{_ID}|\w+),",
    r"the closest match we can find is record:",
    r"there is a record:",
)))


def digest(text: str) -> str:
    """A short stable name for a statement: its length and the start of its SHA-256."""
    data = (text or "").strip().encode("utf-8", "replace")
    return f"<{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}>"


def statement_lines(lines: list[str]) -> list[bool]:
    """Which lines hold statement text: from each thread header (or cut mark) to the last line within
    STATEMENT_BOUND bytes after it that is not a line the server prints there, or to the next header."""
    end = _user_text_end(lines)
    starts = [i for i in range(end) if lines[i] == _CUT_MARK or _THREAD_RE.fullmatch(lines[i])]
    inside = [False] * len(lines)
    for n, start in enumerate(starts):
        stop = starts[n + 1] if n + 1 < len(starts) else end
        room, last_free, i = STATEMENT_BOUND, start, start + 1
        while i < stop and room > 0:  # line i starts inside the bound: it may be the statement's
            if not _SERVER_LINES.fullmatch(lines[i]):
                last_free = i
            room -= len(lines[i].encode("utf-8")) + 1
            i += 1
        for k in range(start + 1, last_free + 1):
            inside[k] = True
    return inside


def _user_text_end(lines: list[str]) -> int:
    """Where FILE I/O begins: the last such header, since no statement comes after the real one."""
    for i in range(len(lines) - 2, 0, -1):
        if lines[i] == _FILE_IO and _is_dashes(lines[i - 1]) and _is_dashes(lines[i + 1]):
            return i - 1
    return len(lines)


def redact_status(text: str) -> str:
    lines = text.split("\n")
    inside = statement_lines(lines)
    out: list[str] = []
    held: list[str] = []  # the statement (or foreign key error text) being reduced
    in_foreign_key = False
    for i, line in enumerate(lines):
        if inside[i]:
            held.append(line)
            continue
        if _is_header(lines, i, inside):
            in_foreign_key = line == _FOREIGN_KEY_HEADER
        elif in_foreign_key and not (_SERVER_LINES.fullmatch(line) or _THREAD_RE.fullmatch(line)):
            held.append(line)  # a DDL's text, or another line of the error that is not InnoDB's own
            continue
        if held:
            out.append(digest("\n".join(held)))
            held = []
        match = _ROW_VALUE_RE.match(line)
        out.append(f"{match.group(1)} <value>;" if match else line)
    if held:
        out.append(digest("\n".join(held)))
    return "\n".join(out)


def _is_dashes(line: str) -> bool:
    return len(line) >= 3 and set(line.rstrip()) == {"-"}


def _is_header(lines: list[str], i: int, inside: list[bool]) -> bool:
    """A section title between two dashed lines, none of them inside a statement."""
    return (0 < i < len(lines) - 1 and lines[i] and not lines[i].startswith("-")
            and _is_dashes(lines[i - 1]) and _is_dashes(lines[i + 1])
            and not (inside[i - 1] or inside[i] or inside[i + 1]))
