"""REDO: writes, fsyncs and their latency, which is the floor of every commit's response time."""

from __future__ import annotations

from signals import host as h
from signals import innodb as s
from signals.promql import innodb, mysqld, rate

from .colors import label_values
from .common import CONFIG, ORANGE, Query, View, dashboard, panel

UID = "innodb-redo"
TITLE = "InnoDB / REDO"

NO_FSYNC = ("MariaDB 10.8+ neither counts REDO fsyncs on their own nor instruments the REDO file in "
            "performance_schema; the host's lines measure the device instead.")

BYTES = View(
    "REDO written per second",
    (Query(s.REDO_WRITTEN, "REDO bytes/s"),),
    "Bps",
    "Bytes written to the REDO log per second. Kravtchuk: the max REDO write rate is your max transaction "
    "rate. Healthy: the REDO capacity holds several minutes of it.",
    min=0,
)
WRITES = View(
    "REDO writes and write requests",
    (Query(rate(innodb("innodb_redo_writes_total")), "REDO writes/s"),
     Query(rate(mysqld("mysql_global_status_innodb_log_write_requests")), "REDO write requests/s")),
    "ops",
    "Physical REDO writes per second against the requests to write (commits and mini-transactions). "
    "Healthy: writes grouped well below requests.",
    min=0,
)
FSYNCS = View(
    "REDO fsyncs (server) and device flushes (host)",
    (Query(s.REDO_FSYNCS, "server: REDO fsyncs/s", NO_FSYNC),
     Query(h.on_data_device(h.FLUSHES.expr), "host {{device}}: flushes/s", right_axis="host: flushes/s")),
    "ops",
    "REDO fsyncs per second as the server counts them (Kravtchuk: 'REDO writes/sec, REDO fsync/sec'), on the "
    "left axis, and the flush requests the host sees on the device that holds the data directory (every fsync "
    "of the server's files, not only REDO's, often fifty times as many; all disks when the stack does not know "
    "the device), on the right axis. Healthy: with innodb_flush_log_at_trx_commit = 1, about one per group of "
    "commits, following the load.",
    min=0, axis_label="server: REDO fsyncs/s",
)
FSYNC_LATENCY = View(
    "REDO fsync latency: the server's, or the host's device",
    (Query(s.REDO_FSYNC_LATENCY, "server: REDO fsync average", NO_FSYNC),
     Query(innodb("innodb_redo_fsync_latency_seconds"), "server: InnoDB's {{stat}}", NO_FSYNC,
           values=label_values("innodb_redo_fsync_latency_seconds")),
     Query(h.on_data_device(h.FLUSH_LATENCY.expr), "host {{device}}: flush"),
     Query(h.on_data_device(h.WRITE_LATENCY.expr), "host {{device}}: write")),
    "s",
    f"'server:' lines are the server's own REDO fsync time (performance_schema, or InnoDB's average and maximum "
    f"on MySQL 8); 'host' lines are what the kernel measures for the device that holds the data directory: "
    f"the average flush (what an fsync asks of the device) and write. Where the server is silent (MariaDB "
    f"10.8+) only the host's are shown. Kravtchuk: 'REDO write + fsync latency = your transaction response "
    f"time'. Healthy: well under a millisecond on SSD; InnoDBRedoFsyncSlow (on the server's average) warns above "
    f"{CONFIG['redo_fsync_seconds'] * 1000:g} ms. A logarithmic axis: averages in microseconds and maxima in "
    f"hundreds of milliseconds both stay readable.",
    steps=((CONFIG["redo_fsync_seconds"], ORANGE),), log_scale=True, fill=0,
)
WAITS = View(
    "Log buffer waits",
    (Query(rate(innodb("innodb_redo_log_waits_total")), "log buffer waits"),),
    "ops",
    "Writes that waited because the log buffer was full. Healthy: zero; otherwise raise innodb_log_buffer_size.",
    min=0, soft_max=1,
)
POSITIONS = View(
    "REDO not yet flushed, and not yet checkpointed",
    (Query(innodb("innodb_redo_lsn_bytes") - innodb("innodb_redo_flushed_lsn_bytes"), "written, not flushed"),
     Query(innodb("innodb_redo_lsn_bytes") - innodb("innodb_redo_pages_flushed_lsn_bytes"),
           "changes in unflushed pages"),
     Query(s.CHECKPOINT_AGE, "checkpoint age")),
    "bytes",
    "Distances between the LSN positions: REDO in the log buffer not yet on disk, changes still only in "
    "dirty pages, and checkpoint age. Healthy: the first stays near zero.",
    min=0,
)

VIEWS = (BYTES, WRITES, FSYNCS, FSYNC_LATENCY, WAITS, POSITIONS)


def build():
    d = dashboard(UID, TITLE, "REDO write rate, fsyncs and fsync latency (Kravtchuk: 'Monitoring: REDO stats').")
    d = d.with_panel(panel(BYTES)).with_panel(panel(WRITES))
    d = d.with_panel(panel(FSYNC_LATENCY)).with_panel(panel(FSYNCS))
    d = d.with_panel(panel(POSITIONS)).with_panel(panel(WAITS))
    return d
