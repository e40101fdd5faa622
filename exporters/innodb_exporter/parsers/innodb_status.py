"""Parser for the text of ``SHOW ENGINE INNODB STATUS``.

A pure function from text to a small typed value: no I/O, no metrics. It reads the outputs of
MySQL 5.6 to 9.x, Percona Server and MariaDB (and the older number forms of 5.0-5.5), with or
without the ``mysql`` client's table or ``\\G`` wrapper, and never raises: what it cannot read or
does not trust is listed in ``problems``.

Who writes this text. The server prints query text verbatim, newlines included, in LATEST FOREIGN
KEY ERROR, LATEST DETECTED DEADLOCK and the transaction list of TRANSACTIONS, so any user who can run
a query can write lines there, fake section headers and whole fake sections included. Nothing else in
the text comes from users. Sections are therefore never looked up by title anywhere in the text; they
are taken where the server prints them (srv_printf_innodb_monitor), in this order:

    BACKGROUND THREAD, SEMAPHORES                                        front
    [LATEST FOREIGN KEY ERROR], [LATEST DETECTED DEADLOCK], TRANSACTIONS  user text
    FILE I/O, [INSERT BUFFER AND ADAPTIVE HASH INDEX], [ADAPTIVE HASH INDEX], LOG,
    BUFFER POOL AND MEMORY, [INDIVIDUAL BUFFER POOL INFO], ROW OPERATIONS  back
    END OF INNODB MONITOR OUTPUT

* Front sections are the headers met from the start of the text up to the first user-text section:
  no user text can come before them.
* Back sections are the headers met walking backwards from the END marker, each earlier in the order
  than the one after it, down to FILE I/O: no user text can come after them. A text without the END
  marker has no back sections when a user-text section is open, since it may end inside user text.
  The server cuts an output longer than 1 MiB inside the transaction list ("... truncated...") and
  keeps the back sections; when its front alone is longer, it drops the end instead. A text of that
  size whose list is not marked as cut has lost its end, whatever END marker it shows.
* LATEST FOREIGN KEY ERROR and LATEST DETECTED DEADLOCK are not read. Of TRANSACTIONS only the summary
  lines the server prints before the list are trusted (Trx id counter, Purge done for, History list
  length). After a FOREIGN KEY ERROR or DEADLOCK section the real TRANSACTIONS header is the only one
  before FILE I/O; several mean that one is forged, and then none is read. (Only in an error-log
  output that skipped TRANSACTIONS, "FAIL TO OBTAIN LOCK MUTEX", can a single forged header pass;
  SHOW ENGINE INNODB STATUS always prints the section.)
* The per-transaction list is attacker-influenced: ``active``, ``lock_waits`` and
  ``oldest_active_seconds`` count ``---TRANSACTION`` and ``LOCK WAIT`` lines, which a user can write
  into query text. The exporter prefers INFORMATION_SCHEMA.INNODB_TRX for these numbers.

Numbers are bounded: integers to what the server prints (at most 20 digits, below 2^64), seconds to
MAX_SECONDS. Fields that contradict each other (an LSN position beyond the current LSN, free and data
pages beyond the pool size, purge ahead of the transaction counter, a hit rate above its denominator)
are dropped (None) with a problem, so that nothing impossible follows from what is returned. A
section that lacks a line every server prints in it, or whose numbers cannot be read, counts a
problem; a section the server prints only sometimes may be absent; a line that holds the key of a
known line but does not match it is a problem, never skipped. Lines are read one at a time with str
methods and anchored expressions that cannot backtrack badly; the text is split at "\\n" only, and each
line loses its trailing blanks (spaces, tabs, the \\r of CRLF). A text that breaks off (no END marker)
without a line end has lost part of its last line, which is not read.

The old layout (5.0-5.5) is told from the newer by a line only it prints in the front (_OLD_LAYOUT_RE);
it prints transaction ids in hexadecimal (5.1 plugin, 5.5) or two decimal halves (5.0, 5.1) and no
'Pages flushed up to'. Every other text prints them in decimal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import combinations, repeat

from .deadlock import Deadlock, summarise

MAX_INT = 2**64 - 1  # the server prints unsigned 64-bit numbers
MAX_DIGITS = 20
MAX_SECONDS = 100_000_000  # about 3 years: no semaphore wait or transaction lasts longer
MAX_POOLS = 64  # innodb_buffer_pool_instances is at most 64
LONGEST = 10  # entries of the transaction list kept for a person to read, the oldest

FRONT = ("BACKGROUND THREAD", "SEMAPHORES")
USER_TEXT = ("LATEST FOREIGN KEY ERROR", "LATEST DETECTED DEADLOCK", "TRANSACTIONS")
BACK = ("FILE I/O", "INSERT BUFFER AND ADAPTIVE HASH INDEX", "ADAPTIVE HASH INDEX", "LOG",
        "BUFFER POOL AND MEMORY", "INDIVIDUAL BUFFER POOL INFO", "ROW OPERATIONS")
SECTION_TITLES = FRONT + USER_TEXT + BACK  # in the order the server prints them
END = "END OF INNODB MONITOR OUTPUT"
_RANK = {title: i for i, title in enumerate(SECTION_TITLES + (END,))}
# Every complete output has these (TRANSACTIONS unless the error-log monitor could not latch).
_REQUIRED_SECTIONS = ("SEMAPHORES", "TRANSACTIONS", "FILE I/O", "LOG", "BUFFER POOL AND MEMORY", "ROW OPERATIONS")
_FAIL_TO_LATCH = "FAIL TO OBTAIN LOCK MUTEX, SKIP LOCK INFO PRINTING"

# innodb_show_status() returns at most MAX_STATUS_SIZE - 1 bytes; a longer output is cut to that.
_SERVER_LIMIT_BYTES = 1_048_575
_LIMIT_SLACK_BYTES = 4096  # charset conversion on the way to the client
_CUT_MARK = "... truncated..."  # where the server cut the transaction list


@dataclass
class SpinStats:
    """One ``<mode> spin waits/spins N, rounds N, OS waits N`` line of SEMAPHORES."""

    spins: int | None = None
    rounds: int | None = None
    os_waits: int | None = None


@dataclass
class SemaphoreWait:
    """One ``--Thread … has waited at …`` entry, reduced to what we aggregate on."""

    latch: str  # the latch's name where printed, else its creation site "file:line"
    kind: str  # "mutex" or "rwlock"
    seconds: float


@dataclass
class Semaphores:
    reservation_count: int | None = None
    signal_count: int | None = None
    spin: dict[str, SpinStats] = field(default_factory=dict)  # mode -> stats
    waits: list[SemaphoreWait] = field(default_factory=list)
    whole: bool = True  # False when the text breaks off in this section: more threads may wait than it lists


@dataclass
class ActiveTransaction:
    """An ACTIVE entry of the transaction list, for a person to read (attacker-influenced, as the counts)."""

    trx_id: str  # as printed: a number, or the (0x…) of a read-only one on MariaDB 10.6+
    seconds: int
    state: str  # what it does, as printed after "sec" (e.g. "fetching rows"); may be empty
    thread_id: int | None = None


@dataclass
class Transactions:
    """The trusted summary lines, and counts over the attacker-influenced list (see the module doc)."""

    trx_id_counter: int | None = None
    purge_done_for: int | None = None
    history_list_length: int | None = None
    active: int = 0  # ---TRANSACTION entries that are ACTIVE
    lock_waits: int = 0  # entries waiting for a lock
    oldest_active_seconds: int = 0
    longest: list[ActiveTransaction] = field(default_factory=list)  # the LONGEST oldest entries, oldest first


@dataclass
class FileIO:
    pending_normal_reads: int | None = None
    pending_normal_writes: int | None = None
    pending_ibuf_reads: int | None = None
    pending_log_ios: int | None = None
    pending_sync_ios: int | None = None
    pending_fsyncs_log: int | None = None
    pending_fsyncs_buffer_pool: int | None = None
    pending_fsyncs: int | None = None  # MariaDB 10.8+ prints one total
    os_reads: int | None = None
    os_writes: int | None = None
    os_fsyncs: int | None = None


@dataclass
class InsertBuffer:
    size: int | None = None
    free_list_len: int | None = None
    seg_size: int | None = None
    merges: int | None = None
    merged: dict[str, int] = field(default_factory=dict)  # insert / delete_mark / delete
    discarded: dict[str, int] = field(default_factory=dict)


@dataclass
class Log:
    lsn: int | None = None
    flushed_lsn: int | None = None
    pages_flushed_lsn: int | None = None
    last_checkpoint_lsn: int | None = None
    # Printed by Percona Server / XtraDB only.
    max_checkpoint_age: int | None = None
    modified_age: int | None = None
    checkpoint_age: int | None = None


@dataclass
class BufferPool:
    """The BUFFER POOL AND MEMORY section, or one ``---BUFFER POOL n`` of INDIVIDUAL BUFFER POOL INFO."""

    size: int | None = None
    free: int | None = None
    database_pages: int | None = None
    modified_pages: int | None = None
    pending_reads: int | None = None
    pending_writes_lru: int | None = None
    pending_writes_flush_list: int | None = None
    pending_writes_single_page: int | None = None
    hit_rate: float | None = None  # per mille since the last printout, as a ratio


@dataclass
class RowOperations:
    queries_inside: int | None = None
    queries_queued: int | None = None
    read_views: int | None = None


@dataclass
class InnodbStatus:
    """What one ``SHOW ENGINE INNODB STATUS`` text says. Sections the text lacks stay None."""

    semaphores: Semaphores | None = None
    transactions: Transactions | None = None
    file_io: FileIO | None = None
    insert_buffer: InsertBuffer | None = None
    log: Log | None = None
    buffer_pool: BufferPool | None = None
    buffer_pool_instances: dict[int, BufferPool] = field(default_factory=dict)
    row_operations: RowOperations | None = None
    deadlock: Deadlock | None = None  # LATEST DETECTED DEADLOCK, summarised (attacker-influenced: deadlock.py)
    complete: bool = False  # the server's END OF INNODB MONITOR OUTPUT marker was seen
    problems: list[str] = field(default_factory=list)

    @property
    def unreadable(self) -> bool:
        """Nothing in the text could be read: no section at all."""
        return self.sections_found == 0

    @property
    def sections_found(self) -> int:
        found = (self.semaphores, self.transactions, self.file_io, self.insert_buffer, self.log,
                 self.buffer_pool, self.row_operations)
        return sum(s is not None for s in found)


def parse(text: str) -> InnodbStatus:
    """Parse a status text. Never raises; problems are listed in the result."""
    status = InnodbStatus()
    if not isinstance(text, str):
        status.problems.append("status text is not a string")
        return status
    try:
        _Reader(text, status).read()
    except Exception as exc:  # a parser bug must cost this source, not the scrape; the fuzz test hunts them
        status = InnodbStatus(problems=[f"internal parser error ({type(exc).__name__})"])
    return status


# --- numbers ----------------------------------------------------------------------------------

class _Unreadable(Exception):
    """A known line whose numbers cannot be read (not digits, too long, out of range)."""


def _num(token: str, limit: int = MAX_INT) -> int:
    """A number as the server prints it: 1 to 20 ASCII digits, at most ``limit``."""
    if 0 < len(token) <= MAX_DIGITS and token.isascii() and token.isdigit():
        value = int(token)
        if value <= limit:
            return value
    raise _Unreadable


def _seconds(token: str) -> float:
    """``241``, ``0.00``: finite and at most MAX_SECONDS."""
    whole, dot, fraction = token.partition(".")
    _num(whole)
    if dot:
        _num(fraction)
    value = float(token)
    if value > MAX_SECONDS:
        raise _Unreadable
    return value


def _lsn(tokens: list[str]) -> int:
    """An LSN: one number, or two 32-bit halves (MySQL 5.0)."""
    if len(tokens) == 1:
        return _num(tokens[0])
    if len(tokens) == 2:
        return (_num(tokens[0], 2**32 - 1) << 32) + _num(tokens[1], 2**32 - 1)
    raise _Unreadable


def _trx_id(token: str, old_layout: bool) -> int:
    """A transaction id: decimal since 5.6; in the old layout hexadecimal (5.1 plugin, 5.5) or two decimal
    32-bit halves (5.0, 5.1). The layout, not the token, says which: ``38900`` is hexadecimal in 5.5."""
    if not old_layout:
        return _num(token)
    if " " in token:
        return _lsn(token.split(" "))
    if 0 < len(token) <= 16 and token.isascii() and all(c in "0123456789abcdefABCDEF" for c in token):
        return int(token, 16)
    raise _Unreadable


def _is_dashes(line: str) -> bool:
    """The line above or below a section title."""
    return len(line) >= 3 and line.count("-") == len(line)


def _keyed(line: str) -> tuple[str, list[str]]:
    """``Log sequence number          123`` -> ("Log sequence number", ["123"])."""
    key = line.rstrip(" 0123456789")
    return key, line[len(key):].split()


# --- problems ---------------------------------------------------------------------------------

class _Problems:
    """The problems of one parse, each message once. Messages never quote the text: it is user input."""

    def __init__(self, out: list[str]):
        self._out = out

    def add(self, message: str) -> None:
        if message not in self._out:
            self._out.append(message)


class _Section:
    """Bookkeeping while reading one section: the known lines seen, and what went wrong."""

    def __init__(self, problems: _Problems, name: str, check_missing: bool):
        self.problems, self.name, self.check_missing = problems, name, check_missing
        self.seen: set[str] = set()
        self.current = ""  # the known line being read

    def take(self, key: str) -> bool:
        """Start reading a known line; False (and a problem) when the section already had it."""
        self.current = key
        if key in self.seen:
            self.problem(f"repeated '{key}' line")
            return False
        self.seen.add(key)
        return True

    def unreadable(self) -> None:
        self.problem(f"unreadable '{self.current}' line")

    def garbled(self, line: str, keys: tuple[str, ...]) -> None:
        """A line no pattern matched that holds the key of a known line: a garbled one, not another line."""
        for key in keys:
            if key in line:
                if self.take(key):
                    self.unreadable()
                return

    def require(self, *keys: str) -> None:
        """Lines every server prints in this section (unless the text breaks off in it)."""
        if self.check_missing:
            for key in keys:
                if key not in self.seen:
                    self.problem(f"no '{key}' line")

    def problem(self, what: str) -> None:
        self.problems.add(f"section {self.name}: {what}")


def _ordered(sec: _Section, obj, pairs: tuple[tuple[str, str, str, str], ...]) -> None:
    """Make the fields of ``obj`` obey ``low <= high`` for each (low, high, low line, high line).

    Which of two contradicting fields is wrong the text cannot say; so the fewest fields whose removal
    leaves the rest consistent are dropped (None), and when several choices are as small, all of them.
    """
    broken = [(low, high, low_line, high_line) for low, high, low_line, high_line in pairs
              if None not in (getattr(obj, low), getattr(obj, high)) and getattr(obj, low) > getattr(obj, high)]
    if not broken:
        return
    names = sorted({name for pair in broken for name in pair[:2]})
    covers = [set(c) for size in range(1, len(names) + 1) for c in combinations(names, size)
              if all(low in c or high in c for low, high, _, _ in broken)]
    drop = sorted(set().union(*(c for c in covers if len(c) == len(covers[0]))))
    for name in drop:
        setattr(obj, name, None)
    contradictions = "; ".join(f"'{low_line}' > '{high_line}'" for _, _, low_line, high_line in broken)
    sec.problem(f"{contradictions}: dropped {', '.join(drop)}")


# --- structure --------------------------------------------------------------------------------

@dataclass
class _Layout:
    """Where the parts of a text that the parser trusts are, as line indices."""

    sections: list[tuple[str, int, int]] = field(default_factory=list)  # front and back: (title, body, end)
    transactions: tuple[int, int] | None = None  # from the line after the real header to the list's end
    deadlock: tuple[int, int] | None = None  # LATEST DETECTED DEADLOCK: its body, up to where user text ends
    complete: bool = False  # the server's END marker closes the text
    user_text: bool = False  # a section holding user text was met
    forged_transactions: bool = False  # several TRANSACTIONS headers where the server prints one


class _Reader:
    def __init__(self, text: str, status: InnodbStatus):
        self.raw = text
        # Never splitlines(): user text holds \x1c, \u2028. One pass strips the \r of CRLF with the blanks.
        self.lines = [*map(str.rstrip, text.split("\n"), repeat(" \t\r"))]
        self.status = status
        self.problems = _Problems(status.problems)
        self.mariadb_105 = False  # see _read_section
        self.old_layout = False  # 5.0-5.5: see the module doc

    def read(self) -> None:
        headers = self._headers()
        if not any(title != END for _, title in headers):
            self.problems.add("no InnoDB monitor section header found")
            return
        layout = self._layout(headers)
        self.status.complete = layout.complete
        if not layout.complete:
            self.problems.add("text ends before END OF INNODB MONITOR OUTPUT (truncated)" + (
                "; the sections after the transaction list are not read" if layout.user_text else ""))
        if layout.forged_transactions:
            self.problems.add("section TRANSACTIONS: several headers follow LATEST FOREIGN KEY ERROR or LATEST "
                              "DETECTED DEADLOCK (user text forges them); none is read")
        if not layout.complete and not self.raw.endswith("\n"):
            self._drop_cut_line(layout)
        self.old_layout = any(_OLD_LAYOUT_RE.match(line) for title, start, end in layout.sections if title in FRONT
                              for line in self.lines[start:end])
        for title, start, end in layout.sections:
            self._read_section(title, self.lines[start:end], layout.complete or end < len(self.lines))
        if layout.transactions is not None:
            self._read_transactions(*layout.transactions)
        if layout.deadlock is not None:
            start, stop = layout.deadlock
            heads = {i for i, _ in headers}
            self.status.deadlock = summarise(self.lines[start:stop], lambda i: i + start in heads)
        if layout.complete:
            self._require_sections(layout)

    def _drop_cut_line(self, layout: _Layout) -> None:
        """The text breaks off inside its last line: what it holds (the start of a number, say) is not read.
        The line is blanked, not removed, so that the layout's line indices stay valid."""
        last = len(self.lines) - 1
        parts = layout.sections + ([("TRANSACTIONS", *layout.transactions)] if layout.transactions else [])
        where = next((f"section {title}: " for title, start, end in parts if start <= last < end), "")
        self.problems.add(f"{where}text breaks off inside its last line, which is not read")
        self.lines[-1] = ""

    def _headers(self) -> list[tuple[int, str]]:
        """(line index, title) of each section header and END marker, in text order.

        A header is a known title on a line of its own between two dashed lines:
            ---
            LOG
            ---
        """
        lines = self.lines
        found = []
        for i in [i for i, line in enumerate(lines) if line in _RANK]:
            title = lines[i]
            below = title == END or (i + 1 < len(lines) and _is_dashes(lines[i + 1]))
            if i > 0 and _is_dashes(lines[i - 1]) and below:
                found.append((i, title))
        return found

    def _layout(self, headers: list[tuple[int, str]]) -> _Layout:
        """The sections to read: from the front up to user text, from the back down to it."""
        layout = _Layout()
        front, k_user, k_end = self._front(headers)
        back: list[int] = []
        if k_user is not None:
            layout.user_text = True
            k_end = max((k for k in range(k_user + 1, len(headers)) if headers[k][1] == END), default=None)
            back = self._back(headers, k_user, k_end) if k_end is not None else []
            trx_at, layout.forged_transactions, user_end = self._transactions(headers, k_user, back, k_end)
            if k_end is not None and self._cut_by_server() and not self._marked_as_cut(trx_at):
                self.problems.add("the server cut the end of this over-long output: the sections after the "
                                  "transaction list are not read")
                back, k_end = [], None
                trx_at, layout.forged_transactions, user_end = self._transactions(headers, k_user, back, k_end)
            if trx_at is not None:
                layout.transactions = (trx_at + 2, user_end)
            layout.deadlock = self._deadlock(headers, k_user, trx_at, user_end)
        layout.complete = k_end is not None
        # A body runs from below the header's lower dashes to above the next header's upper dashes.
        nexts = [k + 1 for k in front] + back[1:] + ([k_end] if back else [])
        for k, nxt in zip(front + back, nexts):
            end = headers[nxt][0] - 1 if nxt is not None and nxt < len(headers) else len(self.lines)
            layout.sections.append((headers[k][1], headers[k][0] + 2, end))
        return layout

    def _front(self, headers) -> tuple[list[int], int | None, int | None]:
        """Headers from the start up to user text: (their indices, the first user-text one, END)."""
        front, rank = [], -1
        for k, (_, title) in enumerate(headers):
            if title == END:
                return front, None, k
            if title in USER_TEXT:
                return front, k, None
            if _RANK[title] <= rank:
                self.problems.add(f"section {title} is out of order: the sections after it are read from the "
                                  "back only")
                return front, k, None
            front.append(k)
            rank = _RANK[title]
        return front, None, None

    @staticmethod
    def _back(headers, k_user: int, k_end: int) -> list[int]:
        """Headers walking backwards from END, each earlier in the order, down to FILE I/O."""
        back, rank = [], _RANK[END]
        for k in range(k_end - 1, k_user, -1):
            title = headers[k][1]
            if title not in BACK or _RANK[title] >= rank:
                break
            back.append(k)
            rank = _RANK[title]
            if title == "FILE I/O":
                break
        return back[::-1]

    def _transactions(self, headers, k_user: int, back: list[int], k_end: int | None):
        """(line of the real TRANSACTIONS header or None, whether forged ones hide it, where user text ends)."""
        if back:
            user_end = headers[back[0]][0] - 1
        elif k_end is not None:
            user_end = headers[k_end][0] - 1
        else:
            user_end = len(self.lines)
        if headers[k_user][1] == "TRANSACTIONS":
            return headers[k_user][0], False, user_end
        found = [i for i, title in headers[k_user:] if title == "TRANSACTIONS" and i < user_end]
        return (found[0] if len(found) == 1 else None), len(found) > 1, user_end

    @staticmethod
    def _deadlock(headers, k_user: int, trx_at: int | None, user_end: int) -> tuple[int, int] | None:
        """The real LATEST DETECTED DEADLOCK: the first section of user text, or the one deadlock header between a
        foreign key error and the real TRANSACTIONS header (statement text can forge one in either)."""
        line, title = headers[k_user]
        if title == "LATEST FOREIGN KEY ERROR" and trx_at is not None:
            found = [i for i, t in headers[k_user + 1:] if t == "LATEST DETECTED DEADLOCK" and i < trx_at]
            line, title = (found[0], "LATEST DETECTED DEADLOCK") if len(found) == 1 else (line, title)
        return (line + 2, user_end) if title == "LATEST DETECTED DEADLOCK" else None

    def _cut_by_server(self) -> bool:
        """The text is as long as the server's limit, so it may have been cut (see the module doc)."""
        if len(self.raw) * 4 < _SERVER_LIMIT_BYTES - _LIMIT_SLACK_BYTES:
            return False
        size = len(self.raw) if self.raw.isascii() else len(self.raw.encode("utf-8", "surrogatepass"))
        return abs(size - _SERVER_LIMIT_BYTES) <= _LIMIT_SLACK_BYTES

    def _marked_as_cut(self, trx_at: int | None) -> bool:
        """The server's cut mark follows the summary lines of the real TRANSACTIONS header."""
        if trx_at is None:
            return False
        i = self._summary_end(trx_at + 2, len(self.lines))
        return i < len(self.lines) and self.lines[i] == _CUT_MARK

    def _summary_end(self, start: int, stop: int) -> int:
        """Where the list begins after the summary lines: at the server's own mark of it."""
        for i in range(start, stop):
            if self.lines[i] in _LIST_STARTS:
                return i
        # No mark (the text breaks off): only what looks like summary lines, so no list line is taken.
        while start < stop and self.lines[start].startswith(_TRX_SUMMARY):
            start += 1
        return start

    def _require_sections(self, layout: _Layout) -> None:
        """A complete text has every section the server always prints."""
        found = {title for title, _, _ in layout.sections}
        if layout.transactions is not None or layout.forged_transactions:
            found.add("TRANSACTIONS")
        # The error-log monitor skips TRANSACTIONS when it cannot latch the lock system.
        if any(_FAIL_TO_LATCH in self.lines[start:end] for _, start, end in layout.sections):
            found.add("TRANSACTIONS")
        for title in _REQUIRED_SECTIONS:
            if title not in found:
                self.problems.add(f"no {title} section")

    # --- sections -----------------------------------------------------------------------------

    def _read_section(self, title: str, lines: list[str], check_missing: bool) -> None:
        sec = _Section(self.problems, title, check_missing)
        st = self.status
        # MariaDB 10.5+ prints no "queries inside InnoDB" line in ROW OPERATIONS; it is known by what it
        # prints before: an empty SEMAPHORES (10.6+), one fsync total (10.8+), no single page flushing.
        if title == "SEMAPHORES":
            st.semaphores = _read_semaphores(sec, lines)
            self.mariadb_105 |= not any(line.strip() for line in lines)
        elif title == "FILE I/O":
            st.file_io = _read_file_io(sec, lines)
            self.mariadb_105 |= st.file_io.pending_fsyncs is not None
        elif title == "INSERT BUFFER AND ADAPTIVE HASH INDEX":
            st.insert_buffer = _read_insert_buffer(sec, lines)
        elif title == "LOG":
            st.log = _read_log(sec, lines, self.old_layout)
        elif title == "BUFFER POOL AND MEMORY":
            st.buffer_pool = _read_pool(sec, lines)
            self.mariadb_105 |= (st.buffer_pool.pending_writes_lru is not None
                                 and st.buffer_pool.pending_writes_single_page is None)
        elif title == "INDIVIDUAL BUFFER POOL INFO":
            st.buffer_pool_instances = _read_instances(sec, lines)
        elif title == "ROW OPERATIONS":
            st.row_operations = _read_row_operations(sec, lines, self.mariadb_105)
        # BACKGROUND THREAD and ADAPTIVE HASH INDEX: nothing the exporter uses.

    def _read_transactions(self, start: int, stop: int) -> None:
        list_start = self._summary_end(start, stop)
        # The summary is whole when a line follows it: a text can break off after any of its lines.
        sec = _Section(self.problems, "TRANSACTIONS", check_missing=any(self.lines[list_start:stop]))
        trx = _read_trx_summary(sec, self.lines[start:list_start], self.old_layout)
        _count_trx_list(trx, self.lines[list_start:stop])
        self.status.transactions = trx


# --- SEMAPHORES -------------------------------------------------------------------------------

# OS WAIT ARRAY INFO: reservation count 28702892, signal count 18960799   (5.1-5.6, one line)
# OS WAIT ARRAY INFO: reservation count 2                                  (5.7+, two lines)
_RESERVATION_RE = re.compile(r"OS WAIT ARRAY INFO: reservation count ([0-9]+)(?:, signal count ([0-9]+))?")
# OS WAIT ARRAY INFO: signal count 2
_SIGNAL_RE = re.compile(r"OS WAIT ARRAY INFO: signal count ([0-9]+)")
# Mutex spin waits 2, rounds 60, OS waits 1
# RW-shared spins 0, rounds 4, OS waits 2
_SPIN_RE = re.compile(r"(Mutex spin waits|RW-shared spins|RW-excl spins|RW-sx spins) ([0-9]+), "
                      r"rounds ([0-9]+), OS waits ([0-9]+)")
# RW-shared spins 2, OS waits 1; RW-excl spins 0, OS waits 0   (5.1: no rounds)
_SPIN_OLD_RE = re.compile(r"RW-shared spins ([0-9]+), OS waits ([0-9]+); RW-excl spins ([0-9]+), OS waits ([0-9]+)")
_SPIN_MODES = {"Mutex spin waits": "mutex", "RW-shared spins": "rw_shared", "RW-excl spins": "rw_excl",
               "RW-sx spins": "rw_sx"}
_RESERVATION, _SIGNAL = "OS WAIT ARRAY INFO: reservation count", "OS WAIT ARRAY INFO: signal count"
_SEMAPHORE_KEYS = (_RESERVATION, _SIGNAL, *_SPIN_MODES)  # the lines above, by the key they are taken under
# Lines only the old layout (5.0-5.5) prints, in the front where no user text reaches:
# srv_master_thread loops: 1090 1_second, 1090 sleeps, 102 10_second, 143 background, 143 flush   (5.1 plugin, 5.5)
# RW-shared spins 2, OS waits 1; RW-excl spins 0, OS waits 0                                     (5.0 to 5.5.16)
# Since 5.6: "srv_master_thread loops: 8135 srv_active, ..." and "RW-shared spins 0, rounds 4, OS waits 2".
_OLD_LAYOUT_RE = re.compile(r"srv_master_thread loops: [0-9]+ 1_second,|RW-shared spins [0-9]+, OS waits ")
# --Thread 140426528233808 has waited at btr/btr0sea.c line 774 for 0.00 seconds the semaphore:
# --Thread 139731125044992 has waited at trx0i_s.cc line 1074 for 256 seconds the semaphore:   (8.0)
_WAIT_START, _WAIT_END, _WAIT_AT = "--Thread ", " seconds the semaphore:", " has waited at "


def _site(path: str, line: str) -> str | None:
    """Creation site as ``file:line`` without the build directory, which varies by packager."""
    if not (0 < len(line) <= 9 and line.isascii() and line.isdigit()):
        return None
    return f"{path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}"


def _latch_of(line: str) -> tuple[str, str] | None:
    """The (latch, kind) a latch line names: its name where printed, else its creation site.

    Mutex at 0x7f2d8c0b2b68, Mutex TRX_SYS created trx0sys.cc:594, lock var 1      (5.7+ with names)
    Mutex at 0x7f3e0c0f8858 '&log_sys->mutex', lock var 1                          (XtraDB)
    Mutex at 0x7fb86b28f0e0 created file btr/btr0sea.c line 139, lock var 1         (5.1-5.6)
    S-lock on RW-latch at 0x7f3e0c0f7d58 '&btr_search_latch'                     (XtraDB)
    X-lock (wait_ex) on RW-latch at 0x7fd0... created in file dict0dict.cc line 1183
    """
    if line.startswith("Mutex at "):
        kind, rest = "mutex", line[len("Mutex at "):]
    else:
        mode, sep, rest = line.partition(" on RW-latch at ")
        if not sep or not mode.split(" ", 1)[0].endswith("-lock"):
            return None
        kind = "rwlock"
    rest = rest.partition(" ")[2]  # after the address
    if rest.startswith("Mutex "):
        return rest[len("Mutex "):].partition(" ")[0], kind
    if rest.startswith("'"):
        name, quote, _ = rest[1:].partition("'")
        return (name, kind) if quote else None
    for created in ("created file ", "created in file "):
        if rest.startswith(created):
            path, sep, number = rest[len(created):].partition(" line ")
            site = _site(path, number.partition(",")[0]) if sep else None
            return (site, kind) if site else None
    return None


def _label(name: str) -> bool:
    """A latch name fit for a label: what servers print, short printable ASCII."""
    return 0 < len(name) <= 128 and name.isascii() and name.isprintable()


def _read_semaphores(sec: _Section, lines: list[str]) -> Semaphores:
    sem = Semaphores()
    waits: list[tuple[int, float]] = []  # (line index, seconds)
    for i, line in enumerate(lines):
        try:
            if m := _RESERVATION_RE.fullmatch(line):
                if sec.take(_RESERVATION):
                    sem.reservation_count = _num(m.group(1))
                if m.group(2) is not None and sec.take(_SIGNAL):
                    sem.signal_count = _num(m.group(2))
            elif m := _SIGNAL_RE.fullmatch(line):
                if sec.take(_SIGNAL):
                    sem.signal_count = _num(m.group(1))
            elif m := _SPIN_RE.fullmatch(line):
                if sec.take(m.group(1)):
                    sem.spin[_SPIN_MODES[m.group(1)]] = SpinStats(*(_num(g) for g in m.group(2, 3, 4)))
            elif m := _SPIN_OLD_RE.fullmatch(line):
                if all([sec.take("RW-shared spins"), sec.take("RW-excl spins")]):  # both lines in one
                    sem.spin["rw_shared"] = SpinStats(_num(m.group(1)), None, _num(m.group(2)))
                    sem.spin["rw_excl"] = SpinStats(_num(m.group(3)), None, _num(m.group(4)))
            elif line.startswith(_WAIT_START) and line.endswith(_WAIT_END):
                sec.current = "--Thread ... has waited at"  # every waiting thread prints one
                head, sep, seconds = line[: -len(_WAIT_END)].rpartition(" for ")
                if not sep or _WAIT_AT not in head:
                    raise _Unreadable
                waits.append((i, _seconds(seconds)))
            else:
                sec.garbled(line, _SEMAPHORE_KEYS)
        except _Unreadable:
            sec.unreadable()
    for n, (i, seconds) in enumerate(waits):
        entry_end = waits[n + 1][0] if n + 1 < len(waits) else len(lines)
        latch = next((found for found in map(_latch_of, lines[i + 1:entry_end]) if found is not None), None)
        if latch is None or not _label(latch[0]):
            sec.problem("a waiting thread names no latch")
            latch = ("unknown", "unknown")
        sem.waits.append(SemaphoreWait(latch=latch[0], kind=latch[1], seconds=seconds))
    if any(line.strip() for line in lines):  # MariaDB 10.6+ prints this section empty
        sec.require(_RESERVATION, _SIGNAL, "RW-shared spins", "RW-excl spins")
    sem.whole = sec.check_missing
    return sem


# --- TRANSACTIONS -----------------------------------------------------------------------------

# Trx id counter 32388          Trx id counter 0 80157601 (5.0: two halves)   Trx id counter 17F6C0 (5.1: hex)
# Purge done for trx's n:o < 29643 undo n:o < 0 state: running but idle
# History list length 1388
# Total number of lock structs in row lock hash table 0                     (debug builds)
_TRX_COUNTER, _PURGE, _HISTORY = "Trx id counter ", "Purge done for trx's n:o < ", "History list length "
_TRX_SUMMARY = (_TRX_COUNTER, _PURGE, _HISTORY, "Total number of lock structs in row lock hash table ")
# The list starts with this line, or with the server's mark where it cut the list's beginning.
_LIST_STARTS = ("LIST OF TRANSACTIONS FOR EACH SESSION:", _CUT_MARK)
# ---TRANSACTION 32385, ACTIVE 0 sec
# ---TRANSACTION 0 80157600, ACTIVE 4 sec, process no 3396, OS thread id 1148250464 fetching rows
# ---TRANSACTION 2BB0, ACTIVE (PREPARED) 31 sec
_ACTIVE_RE = re.compile(r"\n---TRANSACTION ([^\n]*?), ACTIVE (?:\(PREPARED\) )?([0-9]+) sec([^\n]*)")
# MariaDB thread id 19, OS thread handle 131823074395840, query id 556353 localhost root Updating
_THREAD_ID_RE = re.compile(r"\n(?:MySQL|MariaDB) thread id ([0-9]{1,20}),")
# LOCK WAIT 2 lock struct(s), heap size 1136, 1 row lock(s)
_LOCK_WAIT = "\nLOCK WAIT "


def _read_trx_summary(sec: _Section, lines: list[str], old_layout: bool) -> Transactions:
    """The summary lines the server prints before the list: the trusted part of TRANSACTIONS."""
    trx = Transactions()
    for line in lines:
        try:
            if line.startswith(_TRX_COUNTER):
                if sec.take("Trx id counter"):
                    trx.trx_id_counter = _trx_id(line[len(_TRX_COUNTER):], old_layout)
            elif line.startswith(_PURGE):
                if sec.take("Purge done for"):
                    done, sep, _ = line[len(_PURGE):].partition(" undo n:o < ")
                    if not sep:
                        raise _Unreadable
                    trx.purge_done_for = _trx_id(done, old_layout)
            elif line.startswith(_HISTORY):
                if sec.take("History list length"):
                    trx.history_list_length = _num(line[len(_HISTORY):])
        except _Unreadable:
            sec.unreadable()
    sec.require("Trx id counter", "Purge done for", "History list length")
    _ordered(sec, trx, (("purge_done_for", "trx_id_counter", "Purge done for", "Trx id counter"),))
    return trx


def _count_trx_list(trx: Transactions, lines: list[str]) -> None:
    """Counts over the transaction list. User text can forge these lines: see the module doc."""
    text = "\n" + "\n".join(lines)  # searched whole: the list is most of a 1 MB text
    entries = [m for m in _ACTIVE_RE.finditer(text) if len(m.group(2)) <= 9]
    ages = [int(m.group(2)) for m in entries]
    trx.active = len(ages)
    trx.oldest_active_seconds = max((age for age in ages if age <= MAX_SECONDS), default=0)
    trx.lock_waits = text.count(_LOCK_WAIT)
    oldest = sorted((m for m in entries if int(m.group(2)) <= MAX_SECONDS), key=lambda m: -int(m.group(2)))[:LONGEST]
    for m in oldest:
        # Its thread id is on one of the lines before the next entry.
        following = text.find("\n---TRANSACTION ", m.end())
        thread = _THREAD_ID_RE.search(text, m.end(), following if following >= 0 else len(text))
        thread_id = int(thread.group(1)) if thread else None
        trx.longest.append(ActiveTransaction(m.group(1)[:40], int(m.group(2)), m.group(3).strip()[:200],
                                             thread_id if thread_id is not None and thread_id <= MAX_INT else None))


# --- FILE I/O ---------------------------------------------------------------------------------

# Pending normal aio reads: [0, 0, 0, 0] , aio writes: [0, 0, 0, 0] ,      (5.7+, per I/O thread)
# Pending normal aio reads: 0 [0, 0, 0, 0] , aio writes: 0 [0, 0, 0, 0] ,  (5.6: total, then per thread)
# Pending normal aio reads: 0, aio writes: 0,                              (5.1-5.5)
# Pending normal aio reads:                                                (MariaDB 10.5)
_AIO, _AIO_WRITES = "Pending normal aio reads:", ", aio writes:"
#  ibuf aio reads: 0, log i/o's: 0, sync i/o's: 0
#  ibuf aio reads:, log i/o's:, sync i/o's:          (5.7+: empty when those threads do not exist)
_AIO2_FIELDS = {"ibuf aio reads": "pending_ibuf_reads", "log i/o's": "pending_log_ios",
                "sync i/o's": "pending_sync_ios"}
# Pending flushes (fsync) log: 0; buffer pool: 0
_FSYNC_RE = re.compile(r"Pending flushes \(fsync\) log: ([0-9]+); buffer pool: ([0-9]+)")
# Pending flushes (fsync): 0                           (MariaDB 10.8+)
_FSYNC_TOTAL_RE = re.compile(r"Pending flushes \(fsync\): ([0-9]+)")
# 179 OS file reads, 1511 OS file writes, 13643 OS fsyncs
_OS_RE = re.compile(r"([0-9]+) OS file reads, ([0-9]+) OS file writes, ([0-9]+) OS fsyncs")
_FSYNC, _OS = "Pending flushes (fsync)", "OS file reads"


def _aio_count(part: str) -> int | None:
    """`` 0 [0, 0, 0, 0] ``, `` [1, 0, 2] ``, `` 0`` -> the total; empty -> None. The server separates the
    items with ", ": ``[0, 1,234]`` holds an item that is no number, not 1 and 234."""
    part = part.strip().rstrip(",").strip()
    if not part:
        return None
    total, bracket, rest = part.partition("[")
    total = total.strip()
    if not bracket:
        return _num(total)
    inner, close, after = rest.partition("]")
    if not close or after.strip():
        raise _Unreadable
    values = [_num(item) for item in inner.split(", ")] if inner else []
    if total:
        return _num(total)
    if sum(values) > MAX_INT:
        raise _Unreadable
    return sum(values)


def _read_file_io(sec: _Section, lines: list[str]) -> FileIO:
    io = FileIO()
    io_threads = False
    for line in lines:
        try:
            if line.startswith("I/O thread "):
                io_threads = True
            elif line.startswith(_AIO):
                reads, _, writes = line[len(_AIO):].partition(_AIO_WRITES)
                if sec.take(_AIO):
                    io.pending_normal_reads, io.pending_normal_writes = _aio_count(reads), _aio_count(writes)
            elif line.lstrip().startswith("ibuf aio reads:"):
                if sec.take("ibuf aio reads:"):
                    pending = {}
                    for item in line.strip().split(","):
                        name, colon, value = item.strip().partition(":")
                        if not colon or name not in _AIO2_FIELDS:
                            raise _Unreadable
                        pending[_AIO2_FIELDS[name]] = _num(value.strip()) if value.strip() else None
                    for name, value in pending.items():
                        setattr(io, name, value)
            elif m := _FSYNC_RE.fullmatch(line):
                if sec.take(_FSYNC):
                    io.pending_fsyncs_log, io.pending_fsyncs_buffer_pool = _num(m.group(1)), _num(m.group(2))
            elif m := _FSYNC_TOTAL_RE.fullmatch(line):
                if sec.take(_FSYNC):
                    io.pending_fsyncs = _num(m.group(1))
            elif m := _OS_RE.fullmatch(line):
                if sec.take(_OS):
                    io.os_reads, io.os_writes, io.os_fsyncs = (_num(g) for g in m.groups())
            else:
                sec.garbled(line, (_FSYNC, _OS))
        except _Unreadable:
            sec.unreadable()
    sec.require(_FSYNC, _OS)
    if io_threads:  # MySQL, Percona, MariaDB before 10.6: one line per I/O thread, then the pending aio
        sec.require(_AIO)
    return io


# --- INSERT BUFFER AND ADAPTIVE HASH INDEX ----------------------------------------------------

# Ibuf: size 1, free list len 0, seg size 2, 0 merges
# Ibuf: size 1704, free list len 1209, seg size 2914,          (5.1: merges on the next line)
# Ibuf for space 0: size 1, free list len 0, seg size 2,       (5.0)
_IBUF_RE = re.compile(r"Ibuf(?: for space [0-9]+)?: size ([0-9]+), free list len ([0-9]+), seg size ([0-9]+),"
                      r"(?: ([0-9]+) merges)?")
# 0 inserts, 0 merged recs, 0 merges                           (5.1)
_IBUF_OLD_MERGES_RE = re.compile(r"[0-9]+ inserts, [0-9]+ merged recs, ([0-9]+) merges")
# merged operations:
#  insert 0, delete mark 0, delete 0
# discarded operations:
#  insert 0, delete mark 0, delete 0
_IBUF_OPS_RE = re.compile(r"insert ([0-9]+), delete mark ([0-9]+), delete ([0-9]+)")
_IBUF, _IBUF_OLD_MERGES = "Ibuf: size", "merged recs"


def _read_insert_buffer(sec: _Section, lines: list[str]) -> InsertBuffer:
    ib = InsertBuffer()
    old_format = False
    for i, line in enumerate(lines):
        try:
            if m := _IBUF_RE.fullmatch(line):
                if sec.take(_IBUF):
                    ib.size, ib.free_list_len, ib.seg_size = (_num(g) for g in m.group(1, 2, 3))
                    if m.group(4) is not None:
                        ib.merges = _num(m.group(4))
            elif m := _IBUF_OLD_MERGES_RE.fullmatch(line):
                old_format = True
                if sec.take(_IBUF_OLD_MERGES) and ib.merges is None:
                    ib.merges = _num(m.group(1))
            elif line in ("merged operations:", "discarded operations:"):
                if sec.take(line):
                    ops = _IBUF_OPS_RE.fullmatch(lines[i + 1].strip()) if i + 1 < len(lines) else None
                    if ops is None:
                        raise _Unreadable
                    counts = dict(zip(("insert", "delete_mark", "delete"), (_num(g) for g in ops.groups())))
                    (ib.merged if line == "merged operations:" else ib.discarded).update(counts)
            else:
                sec.garbled(line, (_IBUF, _IBUF_OLD_MERGES))
        except _Unreadable:
            sec.unreadable()
    sec.require(_IBUF)
    if not old_format:
        sec.require("merged operations:", "discarded operations:")
    return ib


# --- LOG --------------------------------------------------------------------------------------

# Log sequence number 47676758         Log sequence number          19151432 (8.0)
# Log sequence number 84 3000620880    (5.0: two 32-bit halves)
# Log flushed up to   47674702
# Pages flushed up to 22853971
# Last checkpoint at  22853971
# Max checkpoint age    1739049        (Percona / XtraDB)
# Modified age          0              (XtraDB; Percona 8.0 prints "Modified age no less than", unused)
# Checkpoint age        0
_LOG_FIELDS = {
    "Log sequence number": "lsn",
    "Log flushed up to": "flushed_lsn",
    "Pages flushed up to": "pages_flushed_lsn",
    "Last checkpoint at": "last_checkpoint_lsn",
    "Max checkpoint age": "max_checkpoint_age",
    "Modified age": "modified_age",
    "Checkpoint age": "checkpoint_age",
}
# Positions the server prints in this order whatever the flavour: checkpoint <= oldest dirty page
# ("Pages flushed up to") <= LSN and checkpoint <= flushed <= LSN. Flushed and pages flushed are not
# ordered: with no dirty page MariaDB and MySQL 5.x print the current LSN as pages flushed.
_LOG_ORDER = (
    ("last_checkpoint_lsn", "pages_flushed_lsn", "Last checkpoint at", "Pages flushed up to"),
    ("pages_flushed_lsn", "lsn", "Pages flushed up to", "Log sequence number"),
    ("last_checkpoint_lsn", "flushed_lsn", "Last checkpoint at", "Log flushed up to"),
    ("flushed_lsn", "lsn", "Log flushed up to", "Log sequence number"),
    ("last_checkpoint_lsn", "lsn", "Last checkpoint at", "Log sequence number"),
)


def _read_log(sec: _Section, lines: list[str], old_layout: bool) -> Log:
    log = Log()
    for line in lines:
        key, values = _keyed(line)
        name = _LOG_FIELDS.get(key)
        if name is None:
            continue
        try:
            if sec.take(key):
                setattr(log, name, _lsn(values))
        except _Unreadable:
            sec.unreadable()
    sec.require("Log sequence number", "Log flushed up to", "Last checkpoint at")
    if not old_layout:  # since 5.6
        sec.require("Pages flushed up to")
    if "Max checkpoint age" in sec.seen or "Checkpoint age" in sec.seen:  # Percona Server, XtraDB
        sec.require("Max checkpoint age", "Checkpoint age")
    _ordered(sec, log, _LOG_ORDER)
    return log


# --- BUFFER POOL AND MEMORY / INDIVIDUAL BUFFER POOL INFO -------------------------------------

# Buffer pool size   8112
# Free buffers       6320
# Database pages     1792
# Modified db pages  1010
# Pending reads 0              Pending reads      0 (8.0)
_POOL_FIELDS = {
    "Buffer pool size": "size",
    "Free buffers": "free",
    "Database pages": "database_pages",
    "Modified db pages": "modified_pages",
    "Pending reads": "pending_reads",
}
# Pending writes: LRU 0, flush list 0, single page 0
# Pending writes: LRU 0, flush list 0                (MariaDB 10.5+: no single page flushing)
_PENDING_WRITES_RE = re.compile(r"Pending writes: LRU ([0-9]+), flush list ([0-9]+)(?:, single page ([0-9]+))?")
# Buffer pool hit rate 999 / 1000, young-making rate 0 / 1000 not 3 / 1000
_HIT_RE = re.compile(r"Buffer pool hit rate ([0-9]+) / ([0-9]+)(?:,.*)?")
_NO_GETS = "No buffer pool page gets since the last printout"
_PENDING_WRITES, _HIT = "Pending writes", "Buffer pool hit rate"
# ---BUFFER POOL 0
_INSTANCE, _INSTANCE_RE = "---BUFFER POOL", re.compile(r"---BUFFER POOL ([0-9]+)")


def _read_pool(sec: _Section, lines: list[str]) -> BufferPool:
    bp = BufferPool()
    hit: tuple[int, int] | None = None
    for line in lines:
        try:
            key, values = _keyed(line)
            if key in _POOL_FIELDS:
                if sec.take(key):
                    if len(values) != 1:
                        raise _Unreadable
                    setattr(bp, _POOL_FIELDS[key], _num(values[0]))
            elif m := _PENDING_WRITES_RE.fullmatch(line):
                if sec.take(_PENDING_WRITES):
                    bp.pending_writes_lru, bp.pending_writes_flush_list = _num(m.group(1)), _num(m.group(2))
                    if m.group(3) is not None:
                        bp.pending_writes_single_page = _num(m.group(3))
            elif m := _HIT_RE.fullmatch(line):
                if sec.take(_HIT):
                    hit = _num(m.group(1)), _num(m.group(2))
            elif line == _NO_GETS:
                sec.take(_HIT)
            else:
                sec.garbled(line, (_PENDING_WRITES, _HIT))
        except _Unreadable:
            sec.unreadable()
    sec.require(*_POOL_FIELDS, _PENDING_WRITES, _HIT)
    if hit is not None:
        if 0 < hit[1] and hit[0] <= hit[1]:
            bp.hit_rate = hit[0] / hit[1]
        else:
            sec.problem("'Buffer pool hit rate' above its denominator: dropped hit_rate")
    if None not in (bp.size, bp.free, bp.database_pages) and bp.free + bp.database_pages > bp.size:
        sec.problem("'Free buffers' + 'Database pages' > 'Buffer pool size': dropped size, free, database_pages")
        bp.size = bp.free = bp.database_pages = None
    return bp


def _pool_number(line: str) -> int | None:
    """The instance a ``---BUFFER POOL n`` line starts; None when the line is garbled."""
    m = _INSTANCE_RE.fullmatch(line)
    try:
        return _num(m.group(1), MAX_POOLS - 1) if m else None
    except _Unreadable:
        return None


def _read_instances(sec: _Section, lines: list[str]) -> dict[int, BufferPool]:
    # Every line that starts like an instance's first ends the one before, garbled or not.
    marks = [(i, _pool_number(line)) for i, line in enumerate(lines) if line.startswith(_INSTANCE)]
    if not marks and sec.check_missing:
        sec.problem(f"no '{_INSTANCE}' line")
    pools: dict[int, BufferPool] = {}
    for n, (i, pool) in enumerate(marks):
        end = marks[n + 1][0] if n + 1 < len(marks) else len(lines)
        if pool is None:
            sec.problem(f"unreadable '{_INSTANCE}' line")
            continue
        if pool in pools:
            sec.problem(f"repeated '{_INSTANCE}' line")
            continue
        check = sec.check_missing or n + 1 < len(marks)
        pools[pool] = _read_pool(_Section(sec.problems, f"{sec.name} {pool}", check), lines[i + 1:end])
    return pools


# --- ROW OPERATIONS ---------------------------------------------------------------------------

# 0 queries inside InnoDB, 0 queries in queue          (MySQL, MariaDB before 10.5)
_QUERIES_RE = re.compile(r"([0-9]+) queries inside InnoDB, ([0-9]+) queries in queue")
# 7 read views open inside InnoDB
_VIEWS_RE = re.compile(r"([0-9]+) read views open inside InnoDB")
_QUERIES, _VIEWS = "queries inside InnoDB", "read views open inside InnoDB"


def _read_row_operations(sec: _Section, lines: list[str], mariadb_105: bool) -> RowOperations:
    ro = RowOperations()
    for line in lines:
        try:
            if m := _QUERIES_RE.fullmatch(line):
                if sec.take(_QUERIES):
                    ro.queries_inside, ro.queries_queued = _num(m.group(1)), _num(m.group(2))
            elif m := _VIEWS_RE.fullmatch(line):
                if sec.take(_VIEWS):
                    ro.read_views = _num(m.group(1))
            else:
                sec.garbled(line, (_QUERIES, _VIEWS))
        except _Unreadable:
            sec.unreadable()
    sec.require(_VIEWS)
    if not mariadb_105:
        sec.require(_QUERIES)
    return ro
