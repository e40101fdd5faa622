"""REDO: writes, fsyncs and their latency, which is the floor of every commit's response time."""

from __future__ import annotations

from .common import ALERTS, INNODB, MYSQLD, ORANGE, RATE, Signal, dashboard, panel, q

UID = "innodb-redo"

NO_FSYNC = ("MariaDB 10.8+ neither counts REDO fsyncs on their own nor instruments the REDO file in "
            "performance_schema.")

BYTES = Signal(
    "REDO written per second",
    (q(f"rate(innodb_redo_written_bytes_total{{{INNODB}}}[{RATE}]{{off}})", "REDO bytes/s"),),
    "Bps",
    "Bytes written to the REDO log per second. Document 004: the max REDO write rate is your max transaction "
    "rate. Healthy: the REDO capacity holds several minutes of it.",
    min=0,
)
WRITES = Signal(
    "REDO writes and write requests",
    (q(f"rate(innodb_redo_writes_total{{{INNODB}}}[{RATE}]{{off}})", "writes/s"),
     q(f"rate(mysql_global_status_innodb_log_write_requests{{{MYSQLD}}}[{RATE}]{{off}})", "write requests/s")),
    "ops",
    "Physical REDO writes per second against the requests to write (commits and mini-transactions). "
    "Healthy: writes grouped well below requests.",
    min=0,
)
FSYNCS = Signal(
    "REDO fsyncs per second",
    (q(f"rate(innodb_redo_fsyncs_total{{{INNODB}}}[{RATE}]{{off}})", "fsyncs/s"),),
    "ops",
    "REDO fsyncs per second (document 004: 'REDO writes/sec, REDO fsync/sec'). Healthy: with "
    "innodb_flush_log_at_trx_commit = 1, about one per group of commits, following the load.",
    min=0, no_data_on_mariadb=NO_FSYNC,
)
FSYNC_LATENCY = Signal(
    "REDO fsync latency",
    (q("instance:innodb_redo_fsync_latency_seconds:avg5m{" + INNODB + "}{off}", "average (5m)"),
     q(f"innodb_redo_fsync_latency_seconds{{{INNODB}}}{{off}}", "InnoDB's {{stat}}")),
    "s",
    f"Average REDO fsync time, and InnoDB's own average and maximum (MySQL 8). Document 004: 'REDO write + "
    f"fsync latency = your transaction response time'. Healthy: well under a millisecond on SSD; "
    f"InnoDBRedoFsyncSlow warns above {ALERTS['redo_fsync_seconds'] * 1000:g} ms.",
    steps=((ALERTS["redo_fsync_seconds"], ORANGE),), min=0, no_data_on_mariadb=NO_FSYNC,
)
WAITS = Signal(
    "Log buffer waits",
    (q(f"rate(innodb_redo_log_waits_total{{{INNODB}}}[{RATE}]{{off}})", "waits/s"),),
    "ops",
    "Writes that waited because the log buffer was full. Healthy: zero; otherwise raise innodb_log_buffer_size.",
    min=0,
)
POSITIONS = Signal(
    "REDO not yet flushed, and not yet checkpointed",
    (q(f"innodb_redo_lsn_bytes{{{INNODB}}}{{off}} - innodb_redo_flushed_lsn_bytes{{{INNODB}}}{{off}}",
       "written, not flushed"),
     q(f"innodb_redo_lsn_bytes{{{INNODB}}}{{off}} - innodb_redo_pages_flushed_lsn_bytes{{{INNODB}}}{{off}}",
       "changes in unflushed pages"),
     q(f"innodb_checkpoint_age_bytes{{{INNODB}}}{{off}}", "checkpoint age")),
    "bytes",
    "Distances between the LSN positions: REDO in the log buffer not yet on disk, changes still only in "
    "dirty pages, and checkpoint age. Healthy: the first stays near zero.",
    min=0,
)

SIGNALS = (BYTES, WRITES, FSYNCS, FSYNC_LATENCY, WAITS, POSITIONS)


def build():
    d = dashboard(UID, "InnoDB / REDO", "REDO write rate, fsyncs and fsync latency (document 004: 'Monitoring: REDO stats').")
    d = d.with_panel(panel(BYTES)).with_panel(panel(WRITES))
    d = d.with_panel(panel(FSYNC_LATENCY)).with_panel(panel(FSYNCS))
    d = d.with_panel(panel(POSITIONS)).with_panel(panel(WAITS))
    return d
