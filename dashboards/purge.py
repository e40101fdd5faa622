"""Purge and undo: does purge keep up, and what holds it back?"""

from __future__ import annotations

from .common import ALERTS, INNODB, ORANGE, RATE, Signal, dashboard, panel, q

UID = "innodb-purge"

HISTORY = Signal(
    "History list length",
    (q(f"innodb_history_list_length{{{INNODB}}}{{off}}", "history list length"),),
    "short",
    f"Undo records not yet purged. Healthy: it does not grow constantly (document 004); under "
    f"{ALERTS['history_high']} is no problem (document 003). Alerts: InnoDBHistoryListGrowing, InnoDBPurgeStalled.",
    steps=((ALERTS["history_high"], ORANGE),), min=0,
)
PROGRESS = Signal(
    "Purge progress",
    (q(f"rate(innodb_purge_undo_log_pages_total{{{INNODB}}}[{RATE}]{{off}})", "undo log pages purged/s"),
     q(f"deriv(innodb_history_list_length{{{INNODB}}}[{RATE}]{{off}})", "history change/s")),
    "short",
    "Undo pages purged per second, and how fast the history list changes. Healthy: purge always progresses "
    "(document 004) and the history change hovers around zero.",
)
LAG = Signal(
    "Purge lag in transactions",
    (q(f"innodb_purge_lag_transactions{{{INNODB}}}{{off}}", "trx id counter − purge done for"),),
    "short",
    "Transactions whose undo purge has not reached yet. Healthy: small and not growing.",
    min=0,
)
DML_DELAY = Signal(
    "DML delay for purge lag",
    (q(f"innodb_purge_dml_delay_seconds{{{INNODB}}}{{off}}", "delay per row operation"),),
    "s",
    "The sleep innodb_max_purge_lag adds to each DML row operation. Healthy: zero, or a deliberate throttle "
    "(document 004's workaround: innodb_max_purge_lag = 10M, innodb_max_purge_lag_delay = 300000). "
    "Alert: InnoDBPurgeDMLDelay.",
    min=0,
)
OLDEST = Signal(
    "Oldest transaction and open transactions",
    (q(f"innodb_oldest_transaction_seconds{{{INNODB}}}{{off}}", "oldest transaction age"),),
    "s",
    f"Age of the oldest open transaction: purge cannot pass its read view. Healthy: seconds; "
    f"InnoDBLongTransaction warns above {ALERTS['long_transaction_seconds']} s.",
    steps=((ALERTS["long_transaction_seconds"], ORANGE),), min=0,
)
OPEN = Signal(
    "Open transactions, lock waits, read views",
    (q(f"innodb_active_transactions{{{INNODB}}}{{off}}", "active transactions"),
     q(f"innodb_lock_waiting_transactions{{{INNODB}}}{{off}}", "waiting for a row lock"),
     q(f"innodb_read_views_open{{{INNODB}}}{{off}}", "read views open")),
    "short",
    "Transactions open now, those waiting for a row lock, and open read views. Healthy: lock waits near zero.",
    min=0,
)

SIGNALS = (HISTORY, PROGRESS, LAG, DML_DELAY, OLDEST, OPEN)


def build():
    d = dashboard(UID, "InnoDB / Purge and undo", "History list length, purge progress, DML delay, long transactions.")
    d = d.with_panel(panel(HISTORY)).with_panel(panel(PROGRESS))
    d = d.with_panel(panel(OLDEST)).with_panel(panel(OPEN))
    d = d.with_panel(panel(LAG)).with_panel(panel(DML_DELAY))
    return d
