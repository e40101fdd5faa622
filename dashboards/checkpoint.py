"""Checkpoint age and flushing: is the REDO log running out of room, and does flushing keep up?"""

from __future__ import annotations

from .common import ALERTS, INNODB, ORANGE, RATE, RED, Signal, dashboard, panel, q

UID = "innodb-checkpoint"

AGE_LIMITS = Signal(
    "Checkpoint age against its limits",
    (q(f"innodb_checkpoint_age_bytes{{{INNODB}}}{{off}}", "checkpoint age"),
     q(f"innodb_checkpoint_age_async_bytes{{{INNODB}}}{{off}}", "async flush point"),
     q(f"innodb_checkpoint_age_sync_bytes{{{INNODB}}}{{off}}", "sync flush point"),
     q(f"innodb_checkpoint_age_max_bytes{{{INNODB}}}{{off}}", "max checkpoint age"),
     q(f"innodb_redo_capacity_bytes{{{INNODB}}}{{off}}", "REDO capacity")),
    "bytes",
    "REDO written since the last checkpoint, against the points where flushing turns aggressive (async), "
    "user threads flush (sync; on MariaDB the max itself) and writers stall (max). Healthy: checkpoint age stays under "
    "the max with a margin and rarely passes the async point. Alerts: InnoDBCheckpointAgeHigh, "
    "InnoDBCheckpointAgePastAsyncPoint, InnoDBCheckpointAgePastSyncPoint.",
    min=0,
)
AGE_RATIO = Signal(
    "Checkpoint age, share of the max",
    (q("instance:innodb_checkpoint_age:ratio{" + INNODB + "}{off}", "checkpoint age / max"),),
    "percentunit",
    f"Checkpoint age as a share of the max checkpoint age. Healthy: under "
    f"{ALERTS['checkpoint_age_warning_ratio']:.0%} (InnoDBCheckpointAgeHigh warns above, and pages above "
    f"{ALERTS['checkpoint_age_critical_ratio']:.0%}).",
    steps=((ALERTS["checkpoint_age_warning_ratio"], ORANGE), (ALERTS["checkpoint_age_critical_ratio"], RED)),
    min=0, max=1,
)
MODIFIED_AGE = Signal(
    "Modified age against the flush points",
    (q(f"innodb_redo_modified_age_bytes{{{INNODB}}}{{off}}", "modified age (LSN − oldest dirty page)"),
     q(f"innodb_checkpoint_age_async_bytes{{{INNODB}}}{{off}}", "async flush point"),
     q(f"innodb_checkpoint_age_sync_bytes{{{INNODB}}}{{off}}", "sync flush point")),
    "bytes",
    "The age of the oldest unflushed change, which InnoDB compares with the async and sync points to decide "
    "how hard to flush. Healthy: well under the async point; a saw-tooth that touches it means flushing "
    "only catches up under pressure.",
    min=0,
)
FLUSH_RATE = Signal(
    "Flush rate by kind against the target",
    (q(f"sum by (kind) (rate(innodb_flush_pages_total{{{INNODB}}}[{RATE}]{{off}}))", "{{kind}}"),
     q(f"rate(innodb_buffer_pool_pages_flushed_total{{{INNODB}}}[{RATE}]{{off}})", "all pages flushed"),
     q(f'innodb_flush_target_pages{{{INNODB},reason="requested"}}{{off}}', "target: pages requested per pass")),
    "pps",
    "Pages flushed per second by kind (adaptive, background, sync, LRU, neighbours) and the number of pages "
    "adaptive flushing asked for in its last pass (about once a second). Healthy: adaptive flushing follows "
    "the target (document 004: 'adaptive flushing must follow the required flush rate'); sync flushing "
    "should not appear (InnoDBSyncFlushWaits).",
    min=0,
)
WHO_REQUESTS = Signal(
    "Who requests flushing: dirty pages or REDO",
    (q(f"innodb_flush_io_capacity_ratio{{{INNODB}}}{{off}}", "{{reason}}"),
     q("instance:innodb_buffer_pool_dirty_pages:ratio{" + INNODB + "}{off}", "dirty pages / buffer pool")),
    "percentunit",
    "The share of innodb_io_capacity adaptive flushing asks for because of the dirty pages percentage and "
    "because of REDO age (can exceed 100%), and the dirty page share of the buffer pool. Healthy: requests "
    "come from the dirty pages level; a high REDO share means checkpoint age drives flushing and the REDO "
    "log is small for the write rate. On MariaDB 'dirty_pages' holds the larger of both.",
    min=0,
)
FLUSH_TIME = Signal(
    "Flushing time per pass",
    (q(f"innodb_flush_avg_seconds{{{INNODB}}}{{off}}", "{{kind}}"),),
    "s",
    f"Average time of a flushing pass over InnoDB's averaging window. Healthy: under 1 s (document 004: "
    f"'do we finish flushing within 1 sec?'); InnoDBFlushingSlow warns above {ALERTS['flush_seconds_max']} s.",
    steps=((ALERTS["flush_seconds_max"], RED),), min=0,
)
STALLS = Signal(
    "Sync flush waits and log buffer waits",
    (q(f"rate(innodb_flush_sync_waits_total{{{INNODB}}}[{RATE}]{{off}})", "sync flush waits"),
     q(f"rate(innodb_redo_log_waits_total{{{INNODB}}}[{RATE}]{{off}})", "log buffer waits")),
    "ops",
    "Threads that waited for a synchronous flush (REDO ran out of room) or for the log buffer to be written "
    "(innodb_log_buffer_size too small). Healthy: zero. Alert: InnoDBSyncFlushWaits.",
    min=0,
)

SIGNALS = (AGE_LIMITS, AGE_RATIO, MODIFIED_AGE, FLUSH_RATE, WHO_REQUESTS, FLUSH_TIME, STALLS)


def build():
    d = dashboard(UID, "InnoDB / Checkpoint age and flushing",
                  "Checkpoint age against its limits, and whether flushing follows the REDO (documents 003, 004).")
    d = d.with_panel(panel(AGE_LIMITS, 16)).with_panel(panel(AGE_RATIO, 8))
    d = d.with_panel(panel(FLUSH_RATE)).with_panel(panel(WHO_REQUESTS))
    d = d.with_panel(panel(MODIFIED_AGE)).with_panel(panel(FLUSH_TIME, 6)).with_panel(panel(STALLS, 6))
    return d
