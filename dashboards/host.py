"""The host under the server, from node_exporter: CPU, disks, memory, network."""

from __future__ import annotations

from signals import host as h
from signals.promql import binary, count, mysqld, node, rate, scalar, sum_by

from .colors import REFERENCE
from .common import Query, View, dashboard, panel

UID = "innodb-host"
TITLE = "InnoDB / Host"
NICS = 'device!~"lo|veth.*|docker.*|br-.*|ifb.*"'
CPUS = count(node("node_cpu_seconds_total", 'mode="idle"'))
MODES = ("user", "system", "iowait", "steal", "softirq")  # the CPU's time that is not idle, nor nice
DEVICES = 2  # disks a host has, commonly (the data's, the system's): the legends' rows

CPU = View(
    "CPU: user, system, iowait",
    (Query(binary(sum_by(("mode",), rate(node("node_cpu_seconds_total", f'mode=~"{"|".join(MODES)}"'))),
                  "/", scalar(CPUS)), "{{mode}}", values=MODES),),
    "percentunit",
    "Share of all CPUs by mode (vmstat's us/sy/wa); stacked on Host, where the top is the CPU in use (Compare "
    "draws each mode alone, now and earlier). Healthy: "
    "headroom; high system time points at kernel or latch spinning, iowait at storage (Kinoshita 2010: CPU "
    "bound or IO bound decides the next step).",
    min=0, max=1, stacked=True,
)
LOAD = View(
    "Load and running threads",
    (Query(node("node_load1"), "load 1m"),
     Query(CPUS, "CPUs", limit=True, color=REFERENCE),
     Query(mysqld("mysql_global_status_threads_running"), "MySQL threads running")),
    "short",
    "Load average against the CPU count, and the server's running threads. Healthy: load under the CPU count.",
    min=0,
)
DISK_BYTES = View(
    "Disk throughput",
    (Query(rate(h.disk("node_disk_read_bytes_total")), "read {{device}}", series=DEVICES),
     Query(rate(h.disk("node_disk_written_bytes_total")), "written {{device}}", series=DEVICES)),
    "Bps",
    "Bytes read and written per second per device (iostat). Healthy: below what the device sustains.",
    min=0,
)
DISK_IOPS = View(
    "Disk operations",
    (Query(rate(h.disk("node_disk_reads_completed_total")), "reads {{device}}", series=DEVICES),
     Query(rate(h.disk("node_disk_writes_completed_total")), "writes {{device}}", series=DEVICES)),
    "iops",
    "IO operations per second per device. Healthy: below what the device sustains; innodb_io_capacity(_max) "
    "should match it.",
    min=0,
)
DISK_LATENCY = View(
    "Disk latency",
    (Query(rate(h.disk("node_disk_read_time_seconds_total")) / rate(h.disk("node_disk_reads_completed_total")),
           "read {{device}}", series=DEVICES),
     Query(h.WRITE_LATENCY, "write {{device}}", series=DEVICES),
     Query(h.FLUSH_LATENCY, "flush {{device}}", series=DEVICES)),
    "s",
    "Average time per read, per write and per flush (what an fsync asks of the device; Linux 5.5+) of each "
    "device; a gap when there was none. Healthy: sub-millisecond writes and flushes on SSD for the REDO device.",
    min=0, soft_max=0.001,
)
DISK_BUSY = View(
    "Disk busy",
    (Query(rate(h.disk("node_disk_io_time_seconds_total")), "busy {{device}}", series=DEVICES),),
    "percentunit",
    "Share of the time each device had IO in flight (iostat's %util). Healthy: well under 100%; near 100% a "
    "single-queue disk is saturated (an SSD or NVMe device may still have room).",
    min=0, max=1,
)
MEMORY = View(
    "Memory",
    (Query(node("node_memory_MemTotal_bytes") - node("node_memory_MemAvailable_bytes"), "used"),
     Query(node("node_memory_Cached_bytes") + node("node_memory_Buffers_bytes"), "page cache"),
     Query(node("node_memory_MemAvailable_bytes"), "available")),
    "bytes",
    "Used, page cache and available memory. Healthy: available never near zero (Kinoshita 2010: buffer pool "
    "plus REDO under what mysqld may use, and O_DIRECT so data pages are cached only once).",
    min=0,
)
NETWORK = View(
    "Network",
    (Query(rate(node("node_network_receive_bytes_total", NICS)), "in {{device}}", series=DEVICES),
     Query(rate(node("node_network_transmit_bytes_total", NICS)), "out {{device}}", series=DEVICES)),
    "Bps",
    "Bytes per second in and out per interface. Healthy: below the link's capacity.",
    min=0,
)

VIEWS = (CPU, LOAD, DISK_BYTES, DISK_IOPS, DISK_LATENCY, DISK_BUSY, MEMORY, NETWORK)


def build():
    d = dashboard(UID, TITLE, "CPU, disks, memory and network under the server (node_exporter).")
    d = d.with_panel(panel(CPU)).with_panel(panel(LOAD))
    d = d.with_panel(panel(DISK_BYTES)).with_panel(panel(DISK_IOPS))
    d = d.with_panel(panel(DISK_LATENCY)).with_panel(panel(DISK_BUSY))
    d = d.with_panel(panel(MEMORY)).with_panel(panel(NETWORK))
    return d
