"""The tuning procedure's shared facts: the bottleneck classes by name, and the thresholds at which a sign
becomes a finding.

One declaration, below everything that reads it: the exporter's one-moment view of a status text
(``innodb_exporter.moment``, installed alone) and the rules and dashboards (``signals/``). The procedure is
Y. Kinoshita's, "How to Fulfill the Potential of InnoDB's Performance and Scalability" (MySQL Conference &
Expo 2010), with D. Kravtchuk's monitoring targets, "MySQL 8.0 Performance: Tuning & Workarounds"
(docs/design.md, "Sources").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    # Kinoshita 2010: pending reads, or LRU / flush-list writes, above 10 on average: IO bound.
    pending_io: int = 10
    # Threads waiting for one latch (on average, or at this moment): one is a whole connection's time
    # lost to that latch. Kinoshita 2010 takes the latch most threads wait for as the contention point.
    latch_waiting_threads: float = 1.0
    # The oldest open transaction: it holds purge back. 10 minutes suits OLTP.
    long_transaction_seconds: int = 600
    # Share of the open transactions that wait for a row lock: transactions queue on each other's rows
    # (Kravtchuk: data contention, where limiting transaction concurrency helps).
    lock_wait_share: float = 0.25
    # Kinoshita 2010: a history list length "< 100000 is no problem".
    history: int = 100_000


THRESHOLDS = Thresholds()

# Every class by its key (the ``class`` label of the recording rules), with the name the dashboards, the
# runbook and ``innodb-exporter parse`` give it. The order of precedence is signals/bottleneck.py's.
CLASS_NAMES = {
    "redo": "REDO bound",
    "write_io": "IO bound on writes",
    "free_pages": "Free-page bound",
    "read_io": "IO bound on reads",
    "latch": "Latch contention",
    "transactions": "Transaction bound",
    "purge": "Purge bound",
    "host": "Host bound",
    "healthy": "Healthy",
    "unknown": "Not decidable",
}
