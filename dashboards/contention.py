"""Contention: which latch threads wait for, and for how long (Kinoshita 2010, step 4)."""

from __future__ import annotations

from signals import innodb as s
from signals.promql import innodb, mysqld, rate, top_over_range, total

from .colors import SPIN_MODES
from .common import CONFIG, GREEN, ORANGE, RED, Query, View, dashboard, panel

UID = "innodb-contention"
TITLE = "InnoDB / Contention"
NO_SYNC_ARRAY = "MariaDB 10.6+ replaced the sync array; its SEMAPHORES section lists no waits or spins."
TOP = 10
NOT_TIMED = ("No data: performance_schema is OFF, or times no InnoDB latch (instruments wait/synch/%/innodb/% "
             "off)")


def _top_latches(metric: str):
    """The latches that rank highest over the whole range (the exporter exports every instrument)."""
    return top_over_range(TOP, innodb(metric), ("kind", "name"))


LATCH_TIME = View(
    f"Latch wait time, top {TOP}",
    (Query(_top_latches("innodb_latch_wait_seconds_total"), "{{name}}", series=TOP),),
    "percentunit",
    "Time spent waiting per second, per InnoDB latch (performance_schema), as a share of one thread's time: "
    "100% is one thread waiting all the time (several threads waiting at once add up past it). The "
    f"{TOP} latches are those that waited most over the whole range shown. The top of this list is where "
    "threads queue; compare it across changes. Healthy: well under 100%. Needs the wait/synch/%/innodb/% "
    "instruments on (off by default on MariaDB).",
    min=0, no_value=NOT_TIMED,
)
LATCH_COUNT = View(
    f"Latch waits, top {TOP}",
    (Query(_top_latches("innodb_latch_waits_total"), "{{name}}", series=TOP),),
    "ops",
    f"Waits per second per InnoDB latch (performance_schema), for the {TOP} latches that waited most often over "
    "the range shown. Many short waits differ from few long ones: read it with the time panel. Healthy: no "
    "latch whose waits grow faster than the load.",
    min=0, no_value=NOT_TIMED,
)
SEMAPHORES = View(
    "Threads waiting for a latch (sync array)",
    (Query(innodb("innodb_semaphore_waiting_threads"), "{{latch}}", series=3),),
    "short",
    "Threads waiting for a latch at each scrape, by latch name or creation site (SHOW ENGINE INNODB STATUS, "
    "SEMAPHORES). Kinoshita (2010): sample several times and aggregate by latch; the most frequent is not always "
    "the cause. Healthy: brief, scattered waits.",
    min=0, soft_max=1, decimals=0, no_data_on_mariadb=NO_SYNC_ARRAY,
    no_value="No thread waits for a latch, or this server keeps no sync array",
)
LONGEST_WAIT = View(
    "Longest semaphore wait",
    (Query(s.SEMAPHORE_LONGEST_WAIT, "longest wait"),),
    "s",
    f"The longest current wait for an InnoDB latch. Healthy: 0 or brief. InnoDB aborts the server at a 600 s "
    f"wait; InnoDBSemaphoreWaitLong warns at {CONFIG['semaphore_wait_warning_seconds']} s and pages at "
    f"{CONFIG['semaphore_wait_critical_seconds']} s.",
    steps=((CONFIG["semaphore_wait_warning_seconds"], ORANGE), (CONFIG["semaphore_wait_critical_seconds"], RED)),
    no_data_on_mariadb=NO_SYNC_ARRAY, min=0, soft_max=1,
)
SPINS = View(
    "Spin rounds and OS waits",
    (Query(rate(innodb("innodb_semaphore_spin_rounds_total")), "spin rounds {{mode}}", values=SPIN_MODES),
     Query(rate(innodb("innodb_semaphore_os_waits_total")), "OS waits {{mode}}", values=SPIN_MODES),
     Query(rate(innodb("innodb_semaphore_os_wait_reservations_total")), "OS wait array reservations")),
    "ops",
    "Spinning and sleeping on latches (SHOW ENGINE INNODB STATUS, SEMAPHORES). Healthy: OS waits a small share "
    "of spins.",
    min=0, no_data_on_mariadb=NO_SYNC_ARRAY, no_value="No data: this server keeps no sync array",
)
ROW_LOCKS = View(
    "Row lock waits",
    (Query(rate(mysqld("mysql_global_status_innodb_row_lock_waits")), "row lock waits"),),
    "ops",
    "Row lock waits per second (mysqld_exporter): transactions queueing on each other's rows, not on "
    "InnoDB's latches. Healthy: low and steady with the load.",
    min=0, soft_max=1,
)
MUTEX = View(
    "SHOW ENGINE INNODB MUTEX waits",
    (Query(top_over_range(TOP, innodb("innodb_mutex_waits_total"), ("name",)), "{{name}}", series=TOP),),
    "ops",
    "Waits per second per latch as SHOW ENGINE INNODB MUTEX reports them (dim_STAT's innodbMUTEX). "
    "Healthy: no latch dominates and none grows with the load.",
    min=0, no_data_on_mariadb="SHOW ENGINE INNODB MUTEX returns no rows on MariaDB 10.6+.",
    no_value="No data: SHOW ENGINE INNODB MUTEX lists no latch on this server",
)

NOT_TIMED_COUNT = View(
    "Latch instruments not timed",
    (Query(total(s.LATCH_INSTRUMENTS_DISABLED.expr), "instruments off"),),
    "none",
    "InnoDB latch instruments (wait/synch/%/innodb/%) that performance_schema does not time, all kinds "
    "together: their latches are missing from the top 10 panels. Healthy: 0. Turn them on with "
    "performance_schema_instrument='wait/synch/%/innodb/%=ON' in my.cnf (MariaDB has them off by default). "
    "No data where performance_schema itself is OFF (MariaDB's default): turning it on takes a restart.",
    kind="stat", base=GREEN, steps=((1, ORANGE),), no_value="performance_schema OFF",
)

VIEWS = (LATCH_TIME, LATCH_COUNT, SEMAPHORES, LONGEST_WAIT, SPINS, ROW_LOCKS, MUTEX, NOT_TIMED_COUNT)


def build():
    d = dashboard(UID, TITLE, "Latch waits top N, semaphore waits, spins, row locks, mutex status.")
    # The panels of many series (the top 10s, spins by mode) are wide enough for a legend beside the plot.
    d = d.with_panel(panel(LATCH_TIME, 10, 12)).with_panel(panel(LATCH_COUNT, 10, 12))
    d = d.with_panel(panel(NOT_TIMED_COUNT, 4, 12))
    d = d.with_panel(panel(LONGEST_WAIT, 8)).with_panel(panel(SEMAPHORES, 8)).with_panel(panel(ROW_LOCKS, 8))
    d = d.with_panel(panel(SPINS)).with_panel(panel(MUTEX))
    return d
