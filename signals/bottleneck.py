"""The next bottleneck: Kinoshita's and Kravtchuk's tuning procedure as recording rules, one state per class.

Every evaluation classifies each instance. Each class records ``instance_class:innodb_bottleneck:state``
with its ``class`` label (and, for latch contention, the contended latch's name in ``latch``):

     1  the class holds: some of its evidence is past its threshold
     0  it does not: its required evidence is measured and none is past its threshold
    -1  not decidable: its required evidence is not measured on this server, and nothing it does
        measure holds (a class is never "clear" only because its evidence is missing)

``instance:innodb_bottleneck:class`` is the winner: the code of the first class in ``CLASSES`` that holds
(1 to 8), else 0 (healthy: every class measured and clear) or -1 (none holds, some not decidable). The
``healthy`` state is 1, 0 or -1 from the same. The classes read only exported series (no other recording
rule), so a replay computes them in one promtool run; the winner and ``healthy`` read the states.

The order of precedence, and why, is ``CLASSES`` (each class's ``why``), written into the head of the
generated rule file and into docs/runbooks.md. The principle: a class ranks above the classes it causes
(the documents' examples fix it first), InnoDB's own limits rank above the host's (each names a setting
or a transaction to act on, and each loads the host itself).
"""

from __future__ import annotations

from dataclasses import dataclass

from innodb_tuning import CLASS_NAMES

from . import host as h
from . import innodb as s
from .signal import Signal
from .promql import (
    Expr,
    avg_over_time,
    binary,
    count_by,
    count_over_time,
    deriv,
    increase,
    innodb,
    label_replace,
    max_by,
    min_by,
    node,
    rate,
    series,
    sum_by,
    sum_over_time,
    topk_by,
)

STATE = "instance_class:innodb_bottleneck:state"
WINNER = "instance:innodb_bottleneck:class"
INSTANCE = ("instance",)
BY_INSTANCE = "on (instance)"
HEALTHY, UNKNOWN = 0, -1


@dataclass(frozen=True)
class Evidence:
    """One measure of a class: ``holds`` is 1 or 0 per instance where it is measured, absent elsewhere."""

    what: str  # what is compared with what, for the rules' documentation and the runbook
    holds: Expr
    required: bool = True  # the class can be decided only where this is measured


@dataclass(frozen=True)
class Bottleneck:
    key: str  # the class label
    code: int  # its place in the order of precedence: the winner's value when it wins
    why: str = ""  # why it ranks where it does

    @property
    def name(self) -> str:  # as the dashboards, the runbook and ``innodb-exporter parse`` name it
        return CLASS_NAMES[self.key]


CLASSES = (
    Bottleneck("redo", 1,
               "at the max checkpoint age every writer stalls, and flushing for REDO space fills the storage's "
               "queue and starves LRU flushing, so it causes the next two; Kinoshita 2010 found write IO bound "
               "with checkpoint age pinned at its limit and grew the REDO log first; Kravtchuk: REDO write + "
               "fsync latency is the transaction response time"),
    Bottleneck("write_io", 2,
               "flushing that waits for storage leaves dirty pages where free pages are needed, so it causes "
               "free-page waits (Kinoshita 2010: pending LRU or flush-list writes above 10)"),
    Bottleneck("free_pages", 3,
               "a read waits for a free page before it can wait for storage (Kravtchuk: 'if no more Free "
               "pages = TRX stall')"),
    Bottleneck("read_io", 4,
               "Kinoshita's first check: pending reads above 10 on average"),
    Bottleneck("latch", 5,
               "Kinoshita 2010 looks for the true contention point once IO is ruled out (step 4 after steps "
               "1-3); a stalled latch holder makes row lock holders wait longer, never the reverse"),
    Bottleneck("transactions", 6,
               "row lock waits are the application's data contention (Kravtchuk), and a transaction held "
               "open is what holds purge back, so it ranks above purge"),
    Bottleneck("purge", 7,
               "Kinoshita 2010 step 5.3, 'too large history list': it destabilises throughput rather than "
               "capping it"),
    Bottleneck("host", 8,
               "CPUs saturated or waiting for storage (Kinoshita 2010 steps 2-3 read vmstat); last, because every "
               "class above loads the host itself and names an InnoDB setting or a transaction to act on"),
)
HEALTHY_CLASS = Bottleneck("healthy", HEALTHY)
UNKNOWN_CLASS = Bottleneck("unknown", UNKNOWN)  # a winner's value only: no state of its own


def _per_instance(expr: Expr) -> Expr:
    return max_by(INSTANCE, expr)


def _average(metric: Signal | Expr) -> Expr:
    """The gauge's average over the window, per instance (its largest series where it has several)."""
    return _per_instance(avg_over_time(metric.series if isinstance(metric, Signal) else metric))


def evidence(cfg: dict) -> dict[str, tuple[Evidence, ...]]:
    """Each class's measures, with the thresholds of ``cfg`` (signals/config.py)."""
    pending_io = cfg["pending_io_high"]
    history = s.HISTORY_LENGTH.series
    growing = _per_instance(deriv(history)).holds(">", 0)
    not_purged = _per_instance(increase(s.PURGE_PAGES.series)).holds("==", 0)
    cpus = count_by(INSTANCE, node("node_cpu_seconds_total", 'mode="idle"'))
    return {
        "redo": (
            Evidence(f"checkpoint age, averaged, above {cfg['checkpoint_age_warning_ratio']:.0%} of the max",
                     _per_instance(avg_over_time(s.CHECKPOINT_AGE.series) / s.CHECKPOINT_MAX.expr)
                     .holds(">", cfg["checkpoint_age_warning_ratio"])),
            Evidence(f"log buffer waits above {cfg['redo_log_waits_per_second']}/s",
                     _per_instance(rate(innodb("innodb_redo_log_waits_total")))
                     .holds(">", cfg["redo_log_waits_per_second"])),
            # The server's own fsync time where it measures it, else the data device's flush time.
            Evidence(f"REDO fsync latency (the server's, else the data device's flushes) above "
                     f"{cfg['redo_fsync_seconds'] * 1000:g} ms",
                     (_per_instance(s.REDO_FSYNC_LATENCY.expr) | _per_instance(h.on_data_device(h.FLUSH_LATENCY.expr)))
                     .holds(">", cfg["redo_fsync_seconds"])),
        ),
        "write_io": (
            Evidence(f"pending LRU or flush-list writes, averaged, above {pending_io}",
                     _average(s.PENDING_WRITES.series.where('kind=~"flush_list|lru"')).holds(">", pending_io)),
            Evidence("the REDO age InnoDB compares with the flush points, averaged, past the async point",
                     _per_instance((avg_over_time(s.FLUSH_AGE.series) | avg_over_time(s.MODIFIED_AGE.series))
                                   / s.CHECKPOINT_ASYNC.expr).holds(">", 1)),
            Evidence("threads waiting for a sync flush", _per_instance(s.SYNC_FLUSH_WAITS.expr).holds(">", 0),
                     required=False),
        ),
        "free_pages": (
            Evidence(f"user threads waiting for a free page, above {cfg['free_page_waits_per_second']}/s",
                     _per_instance(s.FREE_PAGE_WAITS.expr).holds(">", cfg["free_page_waits_per_second"])),
            Evidence(f"free page requests that looped, above {cfg['lru_loops_share']:.0%} of all",
                     _per_instance(s.LRU_GET_FREE_LOOPS.expr / rate(innodb("innodb_lru_get_free_search_total")))
                     .holds(">", cfg["lru_loops_share"]), required=False),
        ),
        "read_io": (
            Evidence(f"pending reads, averaged, above {pending_io}", _average(s.PENDING_READS).holds(">", pending_io)),
        ),
        "transactions": (
            Evidence(f"oldest transaction open longer than {cfg['long_transaction_seconds']} s",
                     _per_instance(s.OLDEST_TRANSACTION.expr).holds(">", cfg["long_transaction_seconds"])),
            Evidence(f"at least {cfg['lock_wait_share']:.0%} of the open transactions waiting for a row lock, "
                     "averaged",
                     (_average(innodb("innodb_lock_waiting_transactions"))
                      / _average(innodb("innodb_active_transactions"))).holds(">=", cfg["lock_wait_share"])),
        ),
        "purge": (
            # Long, and growing or not purged (where purge progress is counted: growth alone elsewhere).
            Evidence(f"history list longer than {cfg['history_high']}, and growing or not purged",
                     _per_instance(s.HISTORY_LENGTH.expr).holds(">", cfg["history_high"])
                     * ((growing + not_purged).holds(">", 0) | growing)),
            Evidence("DML delayed for purge lag", _per_instance(s.PURGE_DML_DELAY.expr).holds(">", 0),
                     required=False),
        ),
        "host": (
            Evidence(f"CPUs busy (all but idle and iowait) above {cfg['host_cpu_busy_ratio']:.0%}",
                     (1 - sum_by(INSTANCE, rate(node("node_cpu_seconds_total", 'mode=~"idle|iowait"'))) / cpus)
                     .holds(">", cfg["host_cpu_busy_ratio"])),
            Evidence(f"CPU time in iowait above {cfg['host_iowait_ratio']:.0%}",
                     (sum_by(INSTANCE, rate(node("node_cpu_seconds_total", 'mode="iowait"'))) / cpus)
                     .holds(">", cfg["host_iowait_ratio"])),
        ),
    }


def _not_decidable() -> Expr:
    """-1 for every instance the exporter is scraped for: what is left when a class cannot be decided."""
    return _per_instance(s.SERVER_UP.expr) * 0 - 1


def classify(measures: tuple[Evidence, ...]) -> Expr:
    """1 where any measure holds, else 0 where every required one is measured, else -1."""
    state = None
    for measure in measures:
        held = measure.holds.equals(1)
        state = held if state is None else state | held
    required = [m.holds for m in measures if m.required]
    decided = required[0] * 0
    for measure in required[1:]:
        decided = decided & measure
    return state | decided | _not_decidable()


def latch_state(cfg: dict) -> Expr:
    """Latch contention, with the contended latch's name in ``latch``. performance_schema's time waited
    per second per instrument is the number of threads waiting for it on average; where the server has
    no latch timing, the sync array's count of waiting threads per latch, over the window's samples
    (Kinoshita's aggregation; a scrape without waits has no series, hence the division by scrapes)."""
    threshold = cfg["latch_waiting_threads"]
    timed = topk_by(INSTANCE, 1, sum_by(("instance", "latch"), label_replace(
        rate(innodb("innodb_latch_wait_seconds_total")), "latch", "$1", "name", "(.+)")))
    scrapes = _per_instance(count_over_time(s.SERVER_UP.series))
    waiting = topk_by(INSTANCE, 1, binary(sum_by(("instance", "latch"), sum_over_time(
        innodb("innodb_semaphore_waiting_threads"))), "/", scrapes, "on (instance) group_left ()"))
    # From the threshold on, as the runbook and innodb-exporter parse judge it ("at least one thread").
    contended = binary(binary(timed, ">=", threshold) * 0 + 1, "or", binary(waiting, ">=", threshold) * 0 + 1,
                       BY_INSTANCE)
    # Measured where any latch is timed, or where the server keeps a sync array (MySQL, MariaDB < 10.6).
    measured = (_per_instance(innodb("innodb_latch_wait_seconds_total")) * 0
                | _per_instance(innodb("innodb_semaphore_os_wait_reservations_total")) * 0)
    return binary(binary(contended, "or", measured, BY_INSTANCE), "or", _not_decidable(), BY_INSTANCE)


def states(cfg: dict) -> dict[str, Expr]:
    """Class key -> its state expression, in the order of precedence."""
    measures = evidence(cfg)
    return {c.key: latch_state(cfg) if c.key == "latch" else classify(measures[c.key]) for c in CLASSES}


def _state(extra: str = 'class!="healthy"'):
    return series(STATE, extra)


def winner() -> Expr:
    """The code of the first class that holds; else 0 (all clear) or -1 (none holds, some not decidable)."""
    first = None
    for c in CLASSES:
        coded = _state(f'class="{c.key}"').equals(1) * c.code
        first = coded if first is None else first | coded
    return min_by(INSTANCE, first) | min_by(INSTANCE, _state())


def healthy() -> Expr:
    """1 when every class is measured and clear, 0 when one holds, -1 when none holds and some cannot be decided."""
    return (max_by(INSTANCE, _state()).equals(1) * 0 | min_by(INSTANCE, _state()).equals(0) + 1
            | min_by(INSTANCE, _state()))


def heading_anchor(heading: str) -> str:
    """The anchor Git hosts give a Markdown heading: lower case, blanks to hyphens, then only letters, digits,
    hyphens and underscores ('## InnoDBLongTransaction' is #innodblongtransaction)."""
    return "".join(ch for ch in heading.lower().replace(" ", "-") if ch.isalnum() or ch in "-_")


def runbook_heading(c: Bottleneck) -> str:
    """The heading of the class's section in docs/runbooks.md."""
    return f"Bottleneck: {c.name}"


def runbook_anchor(c: Bottleneck) -> str:
    """The anchor of the class's section in docs/runbooks.md."""
    return heading_anchor(runbook_heading(c))
