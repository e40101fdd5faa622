"""Checkpoint age and flushing: is the REDO log running out of room, and does flushing keep up?"""

from __future__ import annotations

from signals import innodb as s
from signals.promql import innodb, rate, sum_by

from .colors import REFERENCE, label_values
from .common import CONFIG, ORANGE, RED, YELLOW, Query, View, dashboard, panel

UID = "innodb-checkpoint"
TITLE = "InnoDB / Checkpoint age and flushing"

AGE_LIMITS = View(
    "Checkpoint age against its limits",
    (Query(s.CHECKPOINT_AGE, "checkpoint age"),
     Query(s.CHECKPOINT_ASYNC, "async flush point", limit=True, color=YELLOW),
     Query(s.CHECKPOINT_SYNC, "sync flush point", limit=True, color=ORANGE),
     Query(s.CHECKPOINT_MAX, "max checkpoint age", limit=True, color=RED),
     Query(innodb("innodb_redo_capacity_bytes"), "REDO capacity", limit=True, color=REFERENCE)),
    "bytes",
    "REDO written since the last checkpoint, against the points where flushing turns aggressive (async), "
    "user threads flush (sync; on MariaDB the max itself) and writers stall (max). Healthy: checkpoint age stays under "
    "the max with a margin. Alert: InnoDBCheckpointAgeHigh. On MySQL the async and sync points apply to the "
    "modified age, not to this one: see REDO age against the flush points.",
    min=0,
)
AGE_RATIO = View(
    "Checkpoint age, share of the max",
    (Query(s.CHECKPOINT_AGE_RATIO, "checkpoint age / max"),),
    "percentunit",
    f"Checkpoint age as a share of the max checkpoint age. Healthy: under "
    f"{CONFIG['checkpoint_age_warning_ratio']:.0%} (InnoDBCheckpointAgeHigh warns above, and pages above "
    f"{CONFIG['checkpoint_age_critical_ratio']:.0%}).",
    steps=((CONFIG["checkpoint_age_warning_ratio"], ORANGE), (CONFIG["checkpoint_age_critical_ratio"], RED)),
    min=0, max=1,
)
FLUSH_AGE = View(
    "REDO age against the flush points",
    (Query(s.FLUSH_AGE, "age compared (modified age; checkpoint age on MariaDB 10.5+)"),
     Query(s.MODIFIED_AGE, "modified age (LSN − oldest dirty page)"),
     Query(s.CHECKPOINT_ASYNC, "async flush point", limit=True, color=YELLOW),
     Query(s.CHECKPOINT_SYNC, "sync flush point", limit=True, color=ORANGE)),
    "bytes",
    "The age InnoDB compares with the async and sync points to decide how hard to flush: the age of the oldest "
    "unflushed change on MySQL, the checkpoint age on MariaDB 10.5+ (the modified age is drawn too). Healthy: "
    "well under the async point; a saw-tooth that touches it means flushing only catches up under pressure. "
    "Alerts: InnoDBCheckpointAgePastAsyncPoint, InnoDBCheckpointAgePastSyncPoint.",
    min=0,
)
FLUSH_RATE = View(
    "Flush rate by kind against the target",
    (Query(sum_by(("kind",), s.FLUSH_PAGES.expr), "{{kind}}", values=label_values("innodb_flush_pages_total")),
     Query(s.PAGES_FLUSHED, "all pages flushed"),
     Query(innodb("innodb_flush_target_pages", 'reason="requested"'), "target: pages requested per pass (≈ 1 s)",
           limit=True, color=REFERENCE, dimension="count/s")),  # pages per pass, about one pass a second
    s.PAGES_PER_SECOND,
    "Pages flushed per second by kind (adaptive, background, sync, LRU, neighbours) and the number of pages "
    "adaptive flushing asked for in its last pass (about once a second). Healthy: adaptive flushing follows "
    "the target (Kravtchuk: 'adaptive flushing must follow the required flush rate'); sync flushing "
    "should not appear (InnoDBSyncFlushWaits).",
    min=0,
)
# innodb_flush_io_capacity_ratio is a multiple of innodb_io_capacity (1313% is 13 times): not a share.
WHO_REQUESTS = View(
    "Who requests flushing: dirty pages or REDO",
    (Query(innodb("innodb_flush_io_capacity_ratio", 'reason="dirty_pages"'), "for the dirty pages level"),
     Query(innodb("innodb_flush_io_capacity_ratio", 'reason="redo"'), "for REDO (checkpoint age)")),
    "suffix:× io_capacity",
    "How many times innodb_io_capacity adaptive flushing asks for, because of the dirty pages level and "
    "because of REDO age (InnoDB caps the request at innodb_io_capacity_max). Healthy: requests come from "
    "the dirty pages level; a high REDO multiple means checkpoint age drives flushing and the REDO log is "
    "small for the write rate. On MariaDB 'for the dirty pages level' holds the larger of both.",
    min=0, soft_max=1,  # at least one innodb_io_capacity: Grafana draws a flat zero from 0 to 100 otherwise
)
FLUSH_TIME = View(
    "Flushing time per pass",
    (Query(s.FLUSH_AVG_SECONDS, "{{kind}}", values=label_values("innodb_flush_avg_seconds")),),
    "s",
    f"Average time of a flushing pass over InnoDB's averaging window. Healthy: under 1 s (Kravtchuk: "
    f"'do we finish flushing within 1 sec?'); InnoDBFlushingSlow warns above {CONFIG['flush_seconds_max']} s.",
    steps=((CONFIG["flush_seconds_max"], RED),), min=0, soft_max=CONFIG["flush_seconds_max"],
)
STALLS = View(
    "Sync flush waits and log buffer waits",
    (Query(s.SYNC_FLUSH_WAITS, "sync flush waits"),
     Query(rate(innodb("innodb_redo_log_waits_total")), "log buffer waits")),
    "ops",
    "Threads that waited for a synchronous flush (REDO ran out of room) or for the log buffer to be written "
    "(innodb_log_buffer_size too small). Healthy: zero. Alert: InnoDBSyncFlushWaits.",
    min=0, soft_max=1,
)

VIEWS = (AGE_LIMITS, AGE_RATIO, FLUSH_AGE, FLUSH_RATE, WHO_REQUESTS, FLUSH_TIME, STALLS)


def build():
    d = dashboard(UID, TITLE,
                  "Checkpoint age against its limits, and whether flushing follows the REDO (Kinoshita 2010, Kravtchuk).")
    d = d.with_panel(panel(AGE_LIMITS, 16)).with_panel(panel(AGE_RATIO, 8))
    d = d.with_panel(panel(FLUSH_RATE)).with_panel(panel(WHO_REQUESTS))
    d = d.with_panel(panel(FLUSH_AGE)).with_panel(panel(FLUSH_TIME, 6)).with_panel(panel(STALLS, 6))
    return d
