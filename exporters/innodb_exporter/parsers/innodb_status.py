"""Parser for the text of ``SHOW ENGINE INNODB STATUS``.

A pure function from text to a small typed value: no I/O, no metrics. It accepts every format from
MySQL 5.1 to 9.x, Percona Server (XtraDB) and MariaDB, with or without the ``mysql`` client's
``\\G`` wrapper, and never raises on bad input: what it cannot read is listed in ``problems``.

The text is first cut into sections at their headers (a dashed line, a known title, a dashed line),
then each section is read by its own function. Within a section every field is optional, because
the servers print different subsets; a field that is absent stays ``None``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Titles of the sections we read or skip. A header is this title between two dashed lines.
SECTION_TITLES = (
    "BACKGROUND THREAD",
    "SEMAPHORES",
    "LATEST DETECTED DEADLOCK",
    "LATEST FOREIGN KEY ERROR",
    "TRANSACTIONS",
    "FILE I/O",
    "INSERT BUFFER AND ADAPTIVE HASH INDEX",
    "LOG",
    "BUFFER POOL AND MEMORY",
    "INDIVIDUAL BUFFER POOL INFO",
    "ROW OPERATIONS",
)

_DASHES_RE = re.compile(r"-{3,}[ \t]*")  # the line above and below a title
# END OF INNODB MONITOR OUTPUT
_END_RE = re.compile(r"^END OF INNODB MONITOR OUTPUT", re.M)

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


@dataclass
class Transactions:
    trx_id_counter: int | None = None
    purge_done_for: int | None = None
    history_list_length: int | None = None
    listed: int = 0  # ---TRANSACTION entries printed
    active: int = 0  # of which ACTIVE
    lock_waits: int = 0  # of which waiting for a lock
    oldest_active_seconds: int = 0


@dataclass
class FileIO:
    pending_normal_reads: int | None = None
    pending_normal_writes: int | None = None
    pending_ibuf_reads: int | None = None
    pending_log_ios: int | None = None
    pending_sync_ios: int | None = None
    pending_fsyncs_log: int | None = None
    pending_fsyncs_buffer_pool: int | None = None
    pending_fsyncs: int | None = None  # MariaDB 10.5+ prints one total
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
    checkpoint_age_target: int | None = None
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
    rows: dict[str, int] = field(default_factory=dict)  # inserted / updated / deleted / read


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
    complete: bool = False  # the END OF INNODB MONITOR OUTPUT marker was seen
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
    text = text.replace("\r\n", "\n")
    headers = _headers(text)
    if not headers:
        status.problems.append("no InnoDB monitor section header found")
        return status
    status.complete = _END_RE.search(text, headers[-1][2]) is not None
    if not status.complete:
        status.problems.append("text ends before END OF INNODB MONITOR OUTPUT (truncated)")
    for i, (title, _, body_start) in enumerate(headers):
        end = headers[i + 1][1] if i + 1 < len(headers) else len(text)
        reader = _READERS.get(title)
        if reader is None:
            continue
        try:
            reader(status, text[body_start:end])
        except (ValueError, IndexError, OverflowError) as exc:  # a garbled number or line
            status.problems.append(f"section {title}: {exc}")
    return status


def _headers(text: str) -> list[tuple[str, int, int]]:
    """(title, start of the header, start of the body) of each section, in text order.

    A header is a known title on a line of its own between two dashed lines:
        ---
        LOG
        ---
    Looking the titles up with str.find keeps this fast on a 1 MB text.
    """
    found = []
    for title in SECTION_TITLES:
        needle = "\n" + title + "\n"
        pos = text.find(needle)
        while pos >= 0:
            above_start = text.rfind("\n", 0, pos) + 1
            below_start = pos + len(needle)
            below_end = text.find("\n", below_start)
            below_end = len(text) if below_end < 0 else below_end
            if _DASHES_RE.fullmatch(text, above_start, pos) and _DASHES_RE.fullmatch(text, below_start, below_end):
                found.append((title, above_start, below_end))
            pos = text.find(needle, pos + 1)
    return sorted(found, key=lambda h: h[1])


# --- SEMAPHORES -------------------------------------------------------------------------------

# OS WAIT ARRAY INFO: reservation count 28702892, signal count 18960799   (5.1-5.6, one line)
# OS WAIT ARRAY INFO: reservation count 2                                  (5.7+, two lines)
_RESERVATION_RE = re.compile(r"^OS WAIT ARRAY INFO: reservation count (\d+)", re.M)
# OS WAIT ARRAY INFO: signal count 2
_SIGNAL_RE = re.compile(r"^OS WAIT ARRAY INFO: (?:reservation count \d+,? )?signal count (\d+)", re.M)
# Mutex spin waits 2, rounds 60, OS waits 1
# RW-shared spins 0, rounds 4, OS waits 2
# RW-excl spins 0, rounds 0, OS waits 0
# RW-sx spins 0, rounds 0, OS waits 0
_SPIN_RE = re.compile(
    r"^(Mutex spin waits|RW-shared spins|RW-excl spins|RW-sx spins) (\d+), rounds (\d+), OS waits (\d+)", re.M
)
# RW-shared spins 2, OS waits 1; RW-excl spins 0, OS waits 0   (5.1: no rounds)
_SPIN_OLD_RE = re.compile(r"(RW-shared|RW-excl) spins (\d+), OS waits (\d+)")
_SPIN_MODES = {"Mutex spin waits": "mutex", "RW-shared spins": "rw_shared", "RW-excl spins": "rw_excl",
               "RW-sx spins": "rw_sx", "RW-shared": "rw_shared", "RW-excl": "rw_excl"}
# --Thread 140426528233808 has waited at btr/btr0sea.c line 774 for 0.00 seconds the semaphore:
# --Thread 139 has waited at srv0srv.cc line 1982 for 241.00 seconds the semaphore:
_WAIT_RE = re.compile(r"^--Thread \d+ has waited at .*? line \d+ for (\d+(?:\.\d+)?) seconds", re.M)
# Mutex at 0x7fb86b28f0e0 created file btr/btr0sea.c line 139, lock var 1         (5.1-5.6)
# Mutex at 0x7f2d8c0b2b68, Mutex TRX_SYS created trx0sys.cc:594, lock var 1      (5.7+ with names)
# Mutex at 0x7f3e0c0f8858 '&log_sys->mutex', lock var 1                          (XtraDB)
_MUTEX_NAMED_RE = re.compile(r"^Mutex at \S+?,? Mutex (\S+) created", re.M)
_MUTEX_QUOTED_RE = re.compile(r"^Mutex at \S+ '([^']+)'", re.M)
_MUTEX_SITE_RE = re.compile(r"^Mutex at \S+ created file (\S+) line (\d+)", re.M)
# S-lock on RW-latch at 0x7fb86b28f0b8 created in file btr/btr0sea.c line 139
# X-lock (wait_ex) on RW-latch at 0x7fd0... created in file dict0dict.cc line 1183
# S-lock on RW-latch at 0x7f3e0c0f7d58 '&btr_search_latch'                     (XtraDB)
_RW_QUOTED_RE = re.compile(r"^\S+-lock (?:\(\w+\) )?on RW-latch at \S+ '([^']+)'", re.M)
_RW_SITE_RE = re.compile(r"^\S+-lock (?:\(\w+\) )?on RW-latch at \S+ created in file (\S+) line (\d+)", re.M)


def _site(path: str, line: str) -> str:
    """Creation site as ``file:line`` without the build directory, which varies by packager."""
    return f"{path.rsplit('/', 1)[-1]}:{line}"


def _wait_latch(entry: str) -> tuple[str, str] | None:
    """The (latch, kind) an entry waits for: the name where printed, else the creation site."""
    for regex, kind in ((_MUTEX_NAMED_RE, "mutex"), (_MUTEX_QUOTED_RE, "mutex"), (_RW_QUOTED_RE, "rwlock")):
        m = regex.search(entry)
        if m:
            return m.group(1), kind
    m = _MUTEX_SITE_RE.search(entry)
    if m:
        return _site(m.group(1), m.group(2)), "mutex"
    m = _RW_SITE_RE.search(entry)
    if m:
        return _site(m.group(1), m.group(2)), "rwlock"
    return None


def _read_semaphores(status: InnodbStatus, body: str) -> None:
    sem = Semaphores()
    if m := _RESERVATION_RE.search(body):
        sem.reservation_count = int(m.group(1))
    if m := _SIGNAL_RE.search(body):
        sem.signal_count = int(m.group(1))
    for m in _SPIN_RE.finditer(body):
        sem.spin[_SPIN_MODES[m.group(1)]] = SpinStats(int(m.group(2)), int(m.group(3)), int(m.group(4)))
    for m in _SPIN_OLD_RE.finditer(body):
        sem.spin.setdefault(_SPIN_MODES[m.group(1)], SpinStats(int(m.group(2)), None, int(m.group(3))))
    waits = list(_WAIT_RE.finditer(body))
    for i, m in enumerate(waits):
        entry = body[m.end(): waits[i + 1].start() if i + 1 < len(waits) else len(body)]
        latch = _wait_latch(entry)
        if latch is None:
            status.problems.append("section SEMAPHORES: a waiting thread names no latch")
            latch = ("unknown", "unknown")
        sem.waits.append(SemaphoreWait(latch=latch[0], kind=latch[1], seconds=float(m.group(1))))
    status.semaphores = sem


# --- TRANSACTIONS -----------------------------------------------------------------------------

# Trx id counter 32388          Trx id counter 0 80157601 (5.0: two 32-bit halves)   Trx id counter 17F6C0 (5.1: hex)
_TRX_COUNTER_RE = re.compile(r"^Trx id counter ((?:\d+ )?[0-9A-Fa-f]+)\s*$", re.M)
# Purge done for trx's n:o < 29643 undo n:o < 0 state: running
_PURGE_RE = re.compile(r"^Purge done for trx's n:o < ((?:\d+ )?[0-9A-Fa-f]+) undo n:o <", re.M)
# History list length 1388
_HISTORY_RE = re.compile(r"^History list length (\d+)", re.M)
# ---TRANSACTION 421, not started
# ---TRANSACTION 32385, ACTIVE 0 sec
# ---TRANSACTION (0x7f519d363d80), ACTIVE 12 sec starting index read
# ---TRANSACTION 0 80157600, ACTIVE 4 sec, process no 3396, OS thread id 1148250464 fetching rows
# ---TRANSACTION 2BB0, ACTIVE (PREPARED) 31 sec
_TRX_MARK = "\n---TRANSACTION "
_TRX_ACTIVE_RE = re.compile(r", ACTIVE (?:\(PREPARED\) )?(\d+) sec")
# LOCK WAIT 2 lock struct(s), heap size 1136, 1 row lock(s)
_LOCK_WAIT_MARK = "\nLOCK WAIT "


def _trx_id(token: str) -> int:
    """A transaction id: decimal since 5.6, hexadecimal in 5.1/5.5, two 32-bit halves in 5.0."""
    parts = token.split()
    if len(parts) == 2:
        return (int(parts[0]) << 32) + int(parts[1])
    if re.fullmatch(r"\d+", token):
        return int(token)
    return int(token, 16)


def _read_transactions(status: InnodbStatus, body: str) -> None:
    trx = Transactions()
    if m := _TRX_COUNTER_RE.search(body):
        trx.trx_id_counter = _trx_id(m.group(1))
    if m := _PURGE_RE.search(body):
        trx.purge_done_for = _trx_id(m.group(1))
    if m := _HISTORY_RE.search(body):
        trx.history_list_length = int(m.group(1))
    oldest = 0
    # Split rather than scan line by line: a long list is most of a 1 MB text.
    for entry in body.split(_TRX_MARK)[1:]:
        trx.listed += 1
        end = entry.find("\n")
        active = _TRX_ACTIVE_RE.search(entry, 0, end if end >= 0 else len(entry))
        if active:
            trx.active += 1
            oldest = max(oldest, int(active.group(1)))
    trx.oldest_active_seconds = oldest
    trx.lock_waits = body.count(_LOCK_WAIT_MARK)
    status.transactions = trx


# --- FILE I/O ---------------------------------------------------------------------------------

# Pending normal aio reads: [0, 0, 0, 0] , aio writes: [0, 0, 0, 0] ,      (5.7+, per I/O thread)
# Pending normal aio reads: 0 [0, 0, 0, 0] , aio writes: 0 [0, 0, 0, 0] ,  (8.0: total, then per thread)
# Pending normal aio reads: 0, aio writes: 0,                              (5.1-5.6)
_AIO_RE = re.compile(r"^Pending normal aio reads:\s*(\d+)?\s*(\[[\d, ]*\])?\s*,\s*aio writes:\s*(\d+)?\s*(\[[\d, ]*\])?", re.M)
#  ibuf aio reads: 0, log i/o's: 0, sync i/o's: 0
#  ibuf aio reads:, log i/o's:, sync i/o's:          (5.7+: empty when those threads do not exist)
_AIO2_RE = re.compile(r"ibuf aio reads:\s*(\d*),\s*log i/o's:\s*(\d*),\s*sync i/o's:\s*(\d*)")
# Pending flushes (fsync) log: 0; buffer pool: 0
_FSYNC_RE = re.compile(r"^Pending flushes \(fsync\) log: (\d+); buffer pool: (\d+)", re.M)
# Pending flushes (fsync): 0                           (MariaDB 10.5+)
_FSYNC_TOTAL_RE = re.compile(r"^Pending flushes \(fsync\): (\d+)", re.M)
# 179 OS file reads, 1511 OS file writes, 13643 OS fsyncs
_OS_RE = re.compile(r"^(\d+) OS file reads, (\d+) OS file writes, (\d+) OS fsyncs", re.M)


def _aio(total: str | None, per_thread: str | None) -> int | None:
    if total:
        return int(total)
    if per_thread:
        return sum(int(x) for x in re.findall(r"\d+", per_thread))
    return None


def _read_file_io(status: InnodbStatus, body: str) -> None:
    io = FileIO()
    if m := _AIO_RE.search(body):
        io.pending_normal_reads = _aio(m.group(1), m.group(2))
        io.pending_normal_writes = _aio(m.group(3), m.group(4))
    if m := _AIO2_RE.search(body):
        io.pending_ibuf_reads, io.pending_log_ios, io.pending_sync_ios = (
            int(g) if g else None for g in m.groups())
    if m := _FSYNC_RE.search(body):
        io.pending_fsyncs_log, io.pending_fsyncs_buffer_pool = int(m.group(1)), int(m.group(2))
    elif m := _FSYNC_TOTAL_RE.search(body):
        io.pending_fsyncs = int(m.group(1))
    if m := _OS_RE.search(body):
        io.os_reads, io.os_writes, io.os_fsyncs = (int(g) for g in m.groups())
    status.file_io = io


# --- INSERT BUFFER AND ADAPTIVE HASH INDEX ----------------------------------------------------

# Ibuf: size 1, free list len 0, seg size 2, 0 merges
# Ibuf: size 1704, free list len 1209, seg size 2914,          (5.1: merges on the next line)
# Ibuf for space 0: size 1, free list len 0, seg size 2,       (5.0)
_IBUF_RE = re.compile(r"^Ibuf(?: for space \d+)?: size (\d+), free list len (\d+), seg size (\d+),(?:\s*(\d+) merges)?", re.M)
# 0 inserts, 0 merged recs, 0 merges                           (5.1)
_IBUF_OLD_MERGES_RE = re.compile(r"^\d+ inserts, \d+ merged recs, (\d+) merges", re.M)
# merged operations:
#  insert 0, delete mark 0, delete 0
# discarded operations:
#  insert 0, delete mark 0, delete 0
_IBUF_OPS_RE = re.compile(r"^(merged|discarded) operations:\s*\n\s*insert (\d+), delete mark (\d+), delete (\d+)", re.M)


def _read_insert_buffer(status: InnodbStatus, body: str) -> None:
    ib = InsertBuffer()
    if m := _IBUF_RE.search(body):
        ib.size, ib.free_list_len, ib.seg_size = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if m.group(4) is not None:
            ib.merges = int(m.group(4))
    if ib.merges is None and (m := _IBUF_OLD_MERGES_RE.search(body)):
        ib.merges = int(m.group(1))
    for m in _IBUF_OPS_RE.finditer(body):
        ops = {"insert": int(m.group(2)), "delete_mark": int(m.group(3)), "delete": int(m.group(4))}
        (ib.merged if m.group(1) == "merged" else ib.discarded).update(ops)
    status.insert_buffer = ib


# --- LOG --------------------------------------------------------------------------------------

# Log sequence number 47676758         Log sequence number          19151432 (8.0)
# Log sequence number 84 3000620880    (5.0: two 32-bit halves)
# Log flushed up to   47674702
# Pages flushed up to 22853971
# Last checkpoint at  22853971
# Max checkpoint age    1739049        (Percona / XtraDB)
# Checkpoint age target 1684683
# Modified age          0
# Checkpoint age        0
_LOG_FIELDS = {
    "Log sequence number": "lsn",
    "Log flushed up to": "flushed_lsn",
    "Pages flushed up to": "pages_flushed_lsn",
    "Last checkpoint at": "last_checkpoint_lsn",
    "Max checkpoint age": "max_checkpoint_age",
    "Checkpoint age target": "checkpoint_age_target",
    "Modified age": "modified_age",
    "Checkpoint age": "checkpoint_age",
}
_LOG_RE = re.compile(r"^(" + "|".join(re.escape(k) for k in _LOG_FIELDS) + r")\s+(\d+)(?: (\d+))?\s*$", re.M)


def _read_log(status: InnodbStatus, body: str) -> None:
    log = Log()
    for m in _LOG_RE.finditer(body):
        value = (int(m.group(2)) << 32) + int(m.group(3)) if m.group(3) else int(m.group(2))
        setattr(log, _LOG_FIELDS[m.group(1)], value)
    status.log = log


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
_POOL_RE = re.compile(r"^(" + "|".join(re.escape(k) for k in _POOL_FIELDS) + r")\s+(\d+)\s*$", re.M)
# Pending writes: LRU 0, flush list 0, single page 0
# Pending writes: LRU 0, flush list 0                (MariaDB 10.5+: no single page flushing)
_PENDING_WRITES_RE = re.compile(r"^Pending writes: LRU (\d+), flush list (\d+)(?:, single page (\d+))?", re.M)
# Buffer pool hit rate 999 / 1000, young-making rate 0 / 1000 not 3 / 1000
_HIT_RE = re.compile(r"^Buffer pool hit rate (\d+) / (\d+)", re.M)
# ---BUFFER POOL 0
_INSTANCE_RE = re.compile(r"^---BUFFER POOL (\d+)\s*$", re.M)


def _pool(body: str) -> BufferPool:
    bp = BufferPool()
    for m in _POOL_RE.finditer(body):
        setattr(bp, _POOL_FIELDS[m.group(1)], int(m.group(2)))
    if m := _PENDING_WRITES_RE.search(body):
        bp.pending_writes_lru, bp.pending_writes_flush_list = int(m.group(1)), int(m.group(2))
        bp.pending_writes_single_page = int(m.group(3)) if m.group(3) is not None else None
    if (m := _HIT_RE.search(body)) and int(m.group(2)):
        bp.hit_rate = int(m.group(1)) / int(m.group(2))
    return bp


def _read_buffer_pool(status: InnodbStatus, body: str) -> None:
    status.buffer_pool = _pool(body)


def _read_instances(status: InnodbStatus, body: str) -> None:
    marks = list(_INSTANCE_RE.finditer(body))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(body)
        status.buffer_pool_instances[int(m.group(1))] = _pool(body[m.end():end])


# --- ROW OPERATIONS ---------------------------------------------------------------------------

# 0 queries inside InnoDB, 0 queries in queue
_QUERIES_RE = re.compile(r"^(\d+) queries inside InnoDB, (\d+) queries in queue", re.M)
# 7 read views open inside InnoDB
_VIEWS_RE = re.compile(r"^(\d+) read views open inside InnoDB", re.M)
# Number of rows inserted 1234, updated 20, deleted 0, read 8876
_ROWS_RE = re.compile(r"^Number of rows inserted (\d+), updated (\d+), deleted (\d+), read (\d+)", re.M)


def _read_row_operations(status: InnodbStatus, body: str) -> None:
    ro = RowOperations()
    if m := _QUERIES_RE.search(body):
        ro.queries_inside, ro.queries_queued = int(m.group(1)), int(m.group(2))
    if m := _VIEWS_RE.search(body):
        ro.read_views = int(m.group(1))
    if m := _ROWS_RE.search(body):
        ro.rows = dict(zip(("inserted", "updated", "deleted", "read"), (int(g) for g in m.groups())))
    status.row_operations = ro


_READERS = {
    "SEMAPHORES": _read_semaphores,
    "TRANSACTIONS": _read_transactions,
    "FILE I/O": _read_file_io,
    "INSERT BUFFER AND ADAPTIVE HASH INDEX": _read_insert_buffer,
    "LOG": _read_log,
    "BUFFER POOL AND MEMORY": _read_buffer_pool,
    "INDIVIDUAL BUFFER POOL INFO": _read_instances,
    "ROW OPERATIONS": _read_row_operations,
}
