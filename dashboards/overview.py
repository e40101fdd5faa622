"""Overview: the headline signals at a glance, each coloured by the threshold of its alert."""

from __future__ import annotations

from . import buffer_pool, checkpoint, purge, redo
from .common import ALERTS, INNODB, MYSQLD, ORANGE, RATE, RED, Signal, dashboard, panel, q

UID = "innodb-overview"


def stat(title, expr, unit, description, steps=(), **kw) -> Signal:
    return Signal(title, (q(expr, title),), unit, description, kind="stat", steps=steps, **kw)


UP = stat("Server answers", f"innodb_up{{{INNODB}}}", "none",
          "1 when the exporter read the server in its last scrape. Healthy: 1. Alerts: InnoDBServerDown, "
          "InnoDBExporterDown.",
          steps=((None, RED), (1, "green")))
FIRING = stat("Alerts firing", 'count(ALERTS{alertstate="firing",instance="$instance"}) or vector(0)', "none",
              "InnoDB alerts firing for this server now (Alertmanager has the details). Healthy: 0.",
              steps=((1, ORANGE),))
CHECKPOINT = stat("Checkpoint age / max", "instance:innodb_checkpoint_age:ratio{" + INNODB + "}", "percentunit",
                  f"Checkpoint age as a share of its limit. Healthy: under {ALERTS['checkpoint_age_warning_ratio']:.0%} "
                  "(InnoDBCheckpointAgeHigh).",
                  steps=((ALERTS["checkpoint_age_warning_ratio"], ORANGE), (ALERTS["checkpoint_age_critical_ratio"], RED)))
HISTORY = stat("History list length", f"innodb_history_list_length{{{INNODB}}}", "short",
               f"Undo records not yet purged. Healthy: under {ALERTS['history_high']} and not growing "
               "(InnoDBHistoryListGrowing).", steps=((ALERTS["history_high"], ORANGE),))
OLDEST = stat("Oldest transaction", f"innodb_oldest_transaction_seconds{{{INNODB}}}", "s",
              f"Age of the oldest open transaction. Healthy: under {ALERTS['long_transaction_seconds']} s "
              "(InnoDBLongTransaction).", steps=((ALERTS["long_transaction_seconds"], ORANGE),))
FREE_WAITS = stat("Free page waits", f"rate(innodb_free_page_waits_total{{{INNODB}}}[{RATE}])", "ops",
                  "User threads waiting for a free page, per second. Healthy: 0 (InnoDBFreePageWaits).",
                  steps=((1e-9, RED),))
PENDING = stat("Pending reads", f"avg_over_time(innodb_buffer_pool_pending_reads{{{INNODB}}}[{RATE}])", "short",
               f"Buffer pool reads waiting for storage. Healthy: under {ALERTS['pending_io_high']} on average "
               "(InnoDBPendingReadsHigh).", steps=((ALERTS["pending_io_high"], ORANGE),))
SEMAPHORE = stat("Longest semaphore wait", f"innodb_semaphore_longest_wait_seconds{{{INNODB}}}", "s",
                 "Longest current latch wait. Healthy: 0 (InnoDBSemaphoreWaitLong; InnoDB aborts at 600 s).",
                 steps=((ALERTS["semaphore_wait_warning_seconds"], ORANGE),
                        (ALERTS["semaphore_wait_critical_seconds"], RED)))
QPS = stat("Queries per second", f"rate(mysql_global_status_queries{{{MYSQLD}}}[{RATE}])", "qps",
           "Statements per second (mysqld_exporter): the load the other signals respond to. Healthy: steady "
           "for a steady workload; a drop with the other signals red is the stall they explain.")
DIRTY = stat("Dirty pages", "instance:innodb_buffer_pool_dirty_pages:ratio{" + INNODB + "}", "percentunit",
             "Share of the buffer pool modified and not yet flushed. Healthy: steady, under "
             "innodb_max_dirty_pages_pct.")

STATS = (UP, FIRING, CHECKPOINT, HISTORY, OLDEST, FREE_WAITS, PENDING, SEMAPHORE, QPS, DIRTY)
SIGNALS = STATS + (checkpoint.AGE_LIMITS, checkpoint.FLUSH_RATE, purge.HISTORY, redo.BYTES,
                   buffer_pool.FREE_PAGE_DEMAND, redo.FSYNC_LATENCY)


def build():
    d = dashboard(UID, "InnoDB / Overview",
                  "Is the engine healthy, and if not, what is the next bottleneck? Each stat turns orange or red "
                  "where its alert fires; the dashboards linked above go into each question.")
    for signal in STATS:
        d = d.with_panel(panel(signal, width=24 // 5 if signal is not DIRTY else 4, height=4))
    for signal in SIGNALS[len(STATS):]:
        d = d.with_panel(panel(signal))
    return d
