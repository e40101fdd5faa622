"""The next bottleneck as far as one ``SHOW ENGINE INNODB STATUS`` text can tell: a one-moment view.

The stack names the bottleneck over time (recording rules, signals/bottleneck.py; docs/runbooks.md,
"The next bottleneck"): averages over a window, rates, growth, the host. One text is one sample. Kinoshita (2010)
reads the same sections but "sampling several times and average[s] the each values", so what this
module says holds for the moment the text was printed, and only for the classes a text shows on its
own: pending IO (reads, writes), threads waiting per latch, long transactions and row lock waits, and
whether the history list is short enough to rule purge out. REDO, free-page and host bound need rates,
the server's settings or the host, which no text has.

The thresholds and class names are ``innodb_tuning``'s, which the rules and dashboards read too.
"""

from __future__ import annotations

from dataclasses import dataclass

from innodb_tuning import CLASS_NAMES, THRESHOLDS, Thresholds

from .parsers.innodb_status import InnodbStatus

# The classes no text speaks to: they need rates, the server's settings or the host.
NOT_FROM_ONE_TEXT = ("redo", "free_pages", "host")


@dataclass(frozen=True)
class Finding:
    klass: str  # a key of CLASS_NAMES
    holds: bool | None  # None: this text cannot tell
    evidence: str

    @property
    def name(self) -> str:
        return CLASS_NAMES[self.klass]


def assess(status: InnodbStatus, t: Thresholds = THRESHOLDS) -> list[Finding]:
    """What this one text says about each class it can show, in the rules' order of precedence."""
    return [_write_io(status, t), _read_io(status, t), _latch(status, t), _transactions(status, t),
            _purge(status, t)]


_NO_POOL = "no BUFFER POOL AND MEMORY section read (the text ends before it, or it is garbled)"


def _write_io(status: InnodbStatus, t: Thresholds) -> Finding:
    bp = status.buffer_pool
    if bp is None:
        return Finding("write_io", None, _NO_POOL)
    writes = {"LRU": bp.pending_writes_lru, "flush list": bp.pending_writes_flush_list}
    known = {kind: n for kind, n in writes.items() if n is not None}
    if not known:
        return Finding("write_io", None, "no 'Pending writes' line in BUFFER POOL AND MEMORY")
    listed = ", ".join(f"{kind} {n}" for kind, n in known.items())
    return Finding("write_io", max(known.values()) > t.pending_io,
                   f"pending writes: {listed} (IO bound above {t.pending_io})")


def _read_io(status: InnodbStatus, t: Thresholds) -> Finding:
    if status.buffer_pool is None:
        return Finding("read_io", None, _NO_POOL)
    reads = status.buffer_pool.pending_reads
    if reads is None:
        return Finding("read_io", None, "no 'Pending reads' line in BUFFER POOL AND MEMORY")
    return Finding("read_io", reads > t.pending_io, f"pending reads {reads} (IO bound above {t.pending_io})")


def _latch(status: InnodbStatus, t: Thresholds) -> Finding:
    sem = status.semaphores
    if sem is None:
        return Finding("latch", None, "no SEMAPHORES section")
    counts: dict[str, int] = {}
    for wait in sem.waits:
        counts[wait.latch] = counts.get(wait.latch, 0) + 1
    if not sem.whole and max(counts.values(), default=0) < t.latch_waiting_threads:
        return Finding("latch", None, "the text breaks off in SEMAPHORES: more threads may wait than it lists")
    if sem.reservation_count is None and not sem.waits:
        return Finding("latch", None, "this server prints no sync array (MariaDB 10.6+): its latch waits are "
                                      "in performance_schema, which the live exporter reads")
    if not counts:
        return Finding("latch", False, "no thread waits for a latch")
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    listed = ", ".join(f"{latch} {n}" for latch, n in ranked[:5]) + (", …" if len(ranked) > 5 else "")
    top_latch, top = ranked[0]
    return Finding("latch", top >= t.latch_waiting_threads,
                   f"threads waiting per latch: {listed} (contention from {t.latch_waiting_threads:g} on one "
                   f"latch; the top one here: {top_latch})")


def _transactions(status: InnodbStatus, t: Thresholds) -> Finding:
    trx = status.transactions
    if trx is None:
        return Finding("transactions", None, "no TRANSACTIONS section")
    share = trx.lock_waits / trx.active if trx.active else 0.0
    holds = trx.oldest_active_seconds > t.long_transaction_seconds or share >= t.lock_wait_share
    return Finding("transactions", holds,
                   f"oldest active transaction {trx.oldest_active_seconds} s (long above "
                   f"{t.long_transaction_seconds} s); {trx.lock_waits} of {trx.active} active waiting for a row "
                   f"lock (bound from {t.lock_wait_share:.0%}); read from the transaction list, which query text "
                   "can imitate")


def _purge(status: InnodbStatus, t: Thresholds) -> Finding:
    history = status.transactions.history_list_length if status.transactions else None
    if history is None:
        return Finding("purge", None, "no 'History list length' line")
    if history <= t.history:
        return Finding("purge", False, f"history list length {history} (a problem only above {t.history})")
    return Finding("purge", None, f"history list length {history}, above {t.history}: purge bound if it keeps "
                                  "growing, which takes more than one text to see")


def render(findings: list[Finding]) -> str:
    """The findings as the block ``innodb-exporter parse`` prints on standard error."""
    verdict = {True: "yes", False: "no", None: "cannot tell"}
    width = max(len(f.name) for f in findings)
    lines = ["One moment: what this status text alone says about the next bottleneck (Kinoshita 2010 averages "
             "several samples; the stack's rules decide over time, see docs/runbooks.md, 'The next bottleneck'):"]
    lines += [f"  {f.name:<{width}}  {verdict[f.holds]:<11}  {f.evidence}" for f in findings]
    lines.append(f"  Not from one text: {', '.join(CLASS_NAMES[k] for k in NOT_FROM_ONE_TEXT)} "
                 "(rates, the server's settings or the host).")
    return "\n".join(lines) + "\n"
