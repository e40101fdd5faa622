"""Purge and undo: does purge keep up, and what holds it back?"""

from __future__ import annotations

from signals import innodb as s
from signals.promql import deriv, innodb

from .common import CONFIG, ORANGE, Query, View, dashboard, panel

UID = "innodb-purge"
TITLE = "InnoDB / Purge and undo"

HISTORY = View(
    "History list length",
    (Query(s.HISTORY_LENGTH, "history list length"),),
    "short",
    f"Undo records not yet purged. Healthy: it does not grow constantly (Kravtchuk); under "
    f"{CONFIG['history_high']} is no problem (Kinoshita 2010). Alerts: InnoDBHistoryListGrowing, InnoDBPurgeStalled.",
    steps=((CONFIG["history_high"], ORANGE),), min=0, decimals=0,
)
PROGRESS = View(
    "Purge progress",
    (Query(s.PURGE_PAGES, "undo log pages purged/s"),
     Query(deriv(s.HISTORY_LENGTH.series), "history change/s")),
    "short",
    "Undo pages purged per second, and how fast the history list changes (records per second). Healthy: purge "
    "always progresses (Kravtchuk) and the history change hovers around zero. Alert: InnoDBPurgeStalled. "
    "The purged pages need the INNODB_METRICS counter purge_undo_log_pages, off on stock servers: "
    "provisioning/mysql/monitoring.cnf enables it, or the exporter's --innodb_metrics.enable.",
)
LAG = View(
    "Purge lag in transactions",
    (Query(innodb("innodb_purge_lag_transactions"), "trx id counter − purge done for"),),
    "short",
    "Transactions whose undo purge has not reached yet. Healthy: small and not growing.",
    min=0, decimals=0,
)
DML_DELAY = View(
    "DML delay for purge lag",
    (Query(s.PURGE_DML_DELAY, "delay per row operation"),),
    "s",
    "The sleep innodb_max_purge_lag adds to each DML row operation. Healthy: zero, or a deliberate throttle "
    "(Kravtchuk's workaround: innodb_max_purge_lag = 10M, innodb_max_purge_lag_delay = 300000). "
    "Alert: InnoDBPurgeDMLDelay.",
    min=0, soft_max=0.001,
)
OLDEST = View(
    "Oldest transaction",
    (Query(s.OLDEST_TRANSACTION, "oldest transaction age"),),
    "s",
    f"Age of the oldest open transaction: purge cannot pass its read view. Healthy: seconds; "
    f"InnoDBLongTransaction warns above {CONFIG['long_transaction_seconds']} s.",
    steps=((CONFIG["long_transaction_seconds"], ORANGE),), min=0, soft_max=60,
)
OPEN = View(
    "Open transactions, lock waits, read views",
    (Query(innodb("innodb_active_transactions"), "active transactions"),
     Query(innodb("innodb_lock_waiting_transactions"), "waiting for a row lock"),
     Query(innodb("innodb_read_views_open"), "read views open")),
    "short",
    "Transactions open now, those waiting for a row lock, and open read views. Healthy: lock waits near zero.",
    min=0, decimals=0,
)

VIEWS = (HISTORY, PROGRESS, LAG, DML_DELAY, OLDEST, OPEN)


def build():
    d = dashboard(UID, TITLE, "History list length, purge progress, DML delay, long transactions.")
    d = d.with_panel(panel(HISTORY)).with_panel(panel(PROGRESS))
    d = d.with_panel(panel(OLDEST)).with_panel(panel(OPEN))
    d = d.with_panel(panel(LAG)).with_panel(panel(DML_DELAY))
    return d
