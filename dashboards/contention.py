"""Contention: which latch threads wait for, and for how long (document 003, step 4)."""

from __future__ import annotations

from .common import ALERTS, INNODB, MYSQLD, ORANGE, RATE, RED, Signal, dashboard, panel, q

UID = "innodb-contention"
NO_SYNC_ARRAY = "MariaDB 10.6+ replaced the sync array, and its SEMAPHORES section lists no waits or spins."

SEMAPHORES = Signal(
    "Semaphore waits by latch",
    (q(f"innodb_semaphore_waiting_threads{{{INNODB}}}{{off}}", "{{latch}}", NO_SYNC_ARRAY),
     q(f"innodb_semaphore_longest_wait_seconds{{{INNODB}}}{{off}}", "longest wait (s)")),
    "short",
    "Threads waiting for a latch at each scrape, by latch name or creation site (SHOW ENGINE INNODB STATUS, "
    "SEMAPHORES), and the longest wait. Document 003: sample several times and aggregate by latch; the most "
    "frequent is not always the cause. Healthy: brief, scattered waits. InnoDB aborts at a 600 s wait; "
    "InnoDBSemaphoreWaitLong warns at 60 s.",
    steps=((ALERTS["semaphore_wait_warning_seconds"], ORANGE), (ALERTS["semaphore_wait_critical_seconds"], RED)),
    min=0,
)
LATCH_TIME = Signal(
    "Latch wait time, top 10",
    (q(f"topk(10, rate(innodb_latch_wait_seconds_total{{{INNODB}}}[{RATE}]{{off}}))", "{{kind}} {{name}}"),),
    "s",
    "Seconds spent waiting per second, per InnoDB latch (performance_schema). The top of this list is where "
    "threads queue; compare it across changes. Healthy: well under 1 (one thread waiting all the time). "
    "Needs the wait/synch/%/innodb/% instruments on (off by default on MariaDB).",
    min=0,
)
LATCH_COUNT = Signal(
    "Latch waits, top 10",
    (q(f"topk(10, rate(innodb_latch_waits_total{{{INNODB}}}[{RATE}]{{off}}))", "{{kind}} {{name}}"),),
    "ops",
    "Waits per second per InnoDB latch (performance_schema). Many short waits differ from few long ones: "
    "read it with the time panel. Healthy: no latch whose waits grow faster than the load.",
    min=0,
)
MUTEX = Signal(
    "SHOW ENGINE INNODB MUTEX waits",
    (q(f"topk(10, rate(innodb_mutex_waits_total{{{INNODB}}}[{RATE}]{{off}}))", "{{name}}"),),
    "ops",
    "Waits per second per latch as SHOW ENGINE INNODB MUTEX reports them (dim_STAT's innodbMUTEX). "
    "Healthy: no latch dominates and none grows with the load.",
    min=0, no_data_on_mariadb="SHOW ENGINE INNODB MUTEX returns no rows on MariaDB 10.6+.",
)
SPINS = Signal(
    "Spin rounds and OS waits",
    (q(f"rate(innodb_semaphore_spin_rounds_total{{{INNODB}}}[{RATE}]{{off}})", "spin rounds {{mode}}", NO_SYNC_ARRAY),
     q(f"rate(innodb_semaphore_os_waits_total{{{INNODB}}}[{RATE}]{{off}})", "OS waits {{mode}}", NO_SYNC_ARRAY),
     q(f"rate(innodb_semaphore_os_wait_reservations_total{{{INNODB}}}[{RATE}]{{off}})", "OS wait array reservations",
       NO_SYNC_ARRAY),
     q(f"rate(mysql_global_status_innodb_row_lock_waits{{{MYSQLD}}}[{RATE}]{{off}})", "row lock waits")),
    "ops",
    "Spinning and sleeping on latches (SEMAPHORES), and row lock waits. "
    "Healthy: OS waits a small share of spins; row lock waits low and steady.",
    min=0,
)

SIGNALS = (SEMAPHORES, LATCH_TIME, LATCH_COUNT, MUTEX, SPINS)


def build():
    d = dashboard(UID, "InnoDB / Contention", "Semaphore waits by latch, latch waits top N, mutex status.")
    d = d.with_panel(panel(LATCH_TIME)).with_panel(panel(LATCH_COUNT))
    d = d.with_panel(panel(SEMAPHORES)).with_panel(panel(SPINS))
    d = d.with_panel(panel(MUTEX, 24))
    return d
