"""The LATEST DETECTED DEADLOCK section of ``SHOW ENGINE INNODB STATUS``, summarised: when, the transactions
(id, age, thread, what each held and waited for) and the one InnoDB rolled back.

The status parser (innodb_status.py) finds where the server printed the section and hands its lines here;
nothing in it becomes a metric. The section holds the deadlocked statements verbatim, and a statement can
hold lines that look like InnoDB's, so what this reads is attacker-influenced, as the transaction list is:
a statement's lines (from its ``MySQL thread id …`` line to the next ``*** `` line) are skipped, which keeps
a forged section header or lock line inside one from being read, but a statement holding a ``*** `` line can
still end itself early and write lines that are read. Shown to a person as what the section says, never
trusted for a number.

    2026-11-21 06:58:47 0x7fd7ec0c56c0
    *** (1) TRANSACTION:
    TRANSACTION 36258, ACTIVE 0 sec starting index read
    MySQL thread id 13, OS thread handle 140565555840704, query id 349085 localhost root updating
    UPDATE sbtest3 SET k=k+1 WHERE id=10057
    *** (1) WAITING FOR THIS LOCK TO BE GRANTED:
    RECORD LOCKS space id 6 page no 170 n bits 144 index PRIMARY of table `sbtest`.`sbtest3` trx id 36258 lock_mode X locks rec but not gap waiting
    *** (2) TRANSACTION:
    …
    *** (2) HOLDS THE LOCK(S):
    …
    *** WE ROLL BACK TRANSACTION (1)

MariaDB 10.6+ prints ``*** WAITING FOR THIS LOCK TO BE GRANTED:`` and ``*** CONFLICTING WITH:`` without the
transaction's number: they belong to the transaction printed last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_TRANSACTIONS = 16  # the server prints two, MariaDB more for a longer cycle: a bound on what is kept
MAX_LOCKS = 8  # lock lines kept per transaction and role
MAX_TEXT = 200  # characters kept of a statement or a lock line
MAX_ID = 2**64 - 1  # the server prints thread ids as unsigned 64-bit numbers

# 2026-11-21 06:58:47 0x7fd7ec0c56c0      (the time the deadlock was detected; 5.6: 160101 12:00:00)
_WHEN_RE = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}|[0-9]{6} {1,2}[0-9]{1,2}:[0-9]{2}:[0-9]{2})")
# *** (1) TRANSACTION:
_TRX_HEADER_RE = re.compile(r"\*\*\* \(([0-9]{1,3})\) TRANSACTION:")
# TRANSACTION 36258, ACTIVE 0 sec starting index read
# TRANSACTION 2BB0, ACTIVE (PREPARED) 31 sec inserting
_TRX_RE = re.compile(r"TRANSACTION ([^,]{1,40}), ACTIVE (?:\(PREPARED\) )?([0-9]{1,9}) sec ?(.*)")
# MySQL thread id 13, OS thread handle 140565555840704, query id 349085 localhost root updating
# MariaDB thread id 16, OS thread handle 140320101123776, query id 318011 localhost root Updating
_THREAD_RE = re.compile(r"(?:MySQL|MariaDB) thread id ([0-9]{1,20}),")
# *** (1) HOLDS THE LOCK(S):   *** (1) WAITING FOR THIS LOCK TO BE GRANTED:   *** CONFLICTING WITH:
_ROLE_RE = re.compile(r"\*\*\* (?:\(([0-9]{1,3})\) )?(HOLDS THE LOCK\(S\)|WAITING FOR THIS LOCK TO BE GRANTED|"
                      r"CONFLICTING WITH):")
# RECORD LOCKS space id 6 page no 170 n bits 144 index PRIMARY of table `sbtest`.`sbtest3` trx id 36258 lock_mode X locks rec but not gap waiting
_RECORD_LOCK_RE = re.compile(r"RECORD LOCKS space id [0-9]+ page no [0-9]+ n bits [0-9]+ index (.+?) of table (.+?) "
                             r"trx id \S+ (lock[_ ]mode .*)")
# TABLE LOCK table `test`.`t` trx id 1867 lock mode IX
_TABLE_LOCK_RE = re.compile(r"TABLE LOCK table (.+?) trx id \S+ (lock mode .*)")
# *** WE ROLL BACK TRANSACTION (1)
_ROLLBACK_RE = re.compile(r"\*\*\* WE ROLL BACK TRANSACTION \(([0-9]{1,3})\)")


@dataclass
class DeadlockTransaction:
    number: int  # as the section numbers it: (1), (2), …
    trx_id: str = ""
    seconds: int | None = None  # how long it had been active
    state: str = ""  # what it was doing, as printed after "sec"
    thread_id: int | None = None
    statement: str = ""  # its first line, cut (a digest where the capture keeps no statements)
    holds: list[str] = field(default_factory=list)  # "lock_mode X locks rec but not gap on `db`.`t` index PRIMARY"
    waits_for: list[str] = field(default_factory=list)
    conflicts_with: list[str] = field(default_factory=list)  # MariaDB 10.6+: the lock it waits behind


@dataclass
class Deadlock:
    when: str | None = None
    transactions: list[DeadlockTransaction] = field(default_factory=list)
    rolled_back: int | None = None  # the number of the transaction InnoDB rolled back


def summarise(lines: list[str], is_header) -> Deadlock:
    """The section's body, from the line after its header's dashes; it ends at the first section header
    (``is_header(index)``) that is not inside a statement."""
    deadlock = Deadlock()
    current: DeadlockTransaction | None = None
    role: list[str] | None = None
    in_statement = False
    for index, line in enumerate(lines):
        if in_statement:
            if not line.startswith("*** "):
                if current is not None and not current.statement and line.strip():
                    current.statement = line.strip()[:MAX_TEXT]
                continue
            in_statement = False
        if is_header(index):
            break
        if deadlock.when is None and not deadlock.transactions and (match := _WHEN_RE.match(line)):
            deadlock.when = match[1]
        elif match := _TRX_HEADER_RE.fullmatch(line):
            if len(deadlock.transactions) >= MAX_TRANSACTIONS:
                break
            current, role = DeadlockTransaction(int(match[1])), None
            deadlock.transactions.append(current)
        elif current is not None and (match := _TRX_RE.fullmatch(line)) and not current.trx_id:
            current.trx_id, current.seconds, current.state = match[1], int(match[2]), match[3].strip()[:MAX_TEXT]
        elif current is not None and (match := _THREAD_RE.match(line)):
            current.thread_id = int(match[1]) if int(match[1]) <= MAX_ID else None
            in_statement = True
        elif match := _ROLE_RE.fullmatch(line):
            owner = _transaction(deadlock, match[1]) if match[1] else current
            role = None if owner is None else {"HOLDS THE LOCK(S)": owner.holds, "CONFLICTING WITH": owner.conflicts_with,
                                               "WAITING FOR THIS LOCK TO BE GRANTED": owner.waits_for}[match[2]]
        elif role is not None and (lock := _lock(line)) and len(role) < MAX_LOCKS:
            role.append(lock)
        elif match := _ROLLBACK_RE.fullmatch(line):
            deadlock.rolled_back = int(match[1])
    return deadlock


def _transaction(deadlock: Deadlock, number: str) -> DeadlockTransaction | None:
    return next((t for t in deadlock.transactions if t.number == int(number)), None)


def _lock(line: str) -> str | None:
    """A lock line as 'mode on table index', or None for any other line (the record dumps under it)."""
    if match := _RECORD_LOCK_RE.fullmatch(line):
        return f"{match[3]} on {match[2]} index {match[1]}"[:MAX_TEXT]
    if match := _TABLE_LOCK_RE.fullmatch(line):
        return f"{match[2]} on {match[1]}"[:MAX_TEXT]
    return None
