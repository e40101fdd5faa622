"""The host under the server, from node_exporter: CPU, disks, memory, network."""

from __future__ import annotations

from .common import MYSQLD, NODE, RATE, Signal, dashboard, panel, q

UID = "innodb-host"
DISKS = NODE + ',device!~"loop.*|ram.*|zram.*|fd.*|sr.*"'
NICS = NODE + ',device!~"lo|veth.*|docker.*|br-.*|ifb.*"'

CPU = Signal(
    "CPU: user, system, iowait",
    (q(f'sum by (mode) (rate(node_cpu_seconds_total{{{NODE},mode=~"user|system|iowait|steal|softirq"}}[{RATE}]{{off}}))'
       f" / scalar(count(node_cpu_seconds_total{{{NODE},mode=\"idle\"}}{{off}}))", "{{mode}}"),),
    "percentunit",
    "Share of all CPUs by mode (vmstat's us/sy/wa). Healthy: headroom; high system time points at kernel or "
    "latch spinning, iowait at storage (document 003: CPU bound or IO bound decides the next step).",
    min=0, max=1, stacked=True,
)
LOAD = Signal(
    "Load and running threads",
    (q(f"node_load1{{{NODE}}}{{off}}", "load 1m"),
     q(f"count(node_cpu_seconds_total{{{NODE},mode=\"idle\"}}{{off}})", "CPUs"),
     q(f"mysql_global_status_threads_running{{{MYSQLD}}}{{off}}", "MySQL threads running")),
    "short",
    "Load average against the CPU count, and the server's running threads. Healthy: load under the CPU count.",
    min=0,
)
DISK_BYTES = Signal(
    "Disk throughput",
    (q(f"rate(node_disk_read_bytes_total{{{DISKS}}}[{RATE}]{{off}})", "read {{device}}"),
     q(f"rate(node_disk_written_bytes_total{{{DISKS}}}[{RATE}]{{off}})", "written {{device}}")),
    "Bps",
    "Bytes read and written per second per device (iostat). Healthy: below what the device sustains.",
    min=0,
)
DISK_IOPS = Signal(
    "Disk operations",
    (q(f"rate(node_disk_reads_completed_total{{{DISKS}}}[{RATE}]{{off}})", "reads {{device}}"),
     q(f"rate(node_disk_writes_completed_total{{{DISKS}}}[{RATE}]{{off}})", "writes {{device}}")),
    "iops",
    "IO operations per second per device. Healthy: below what the device sustains; innodb_io_capacity(_max) "
    "should match it.",
    min=0,
)
DISK_LATENCY = Signal(
    "Disk latency and utilisation",
    (q(f"rate(node_disk_read_time_seconds_total{{{DISKS}}}[{RATE}]{{off}})"
       f" / rate(node_disk_reads_completed_total{{{DISKS}}}[{RATE}]{{off}})", "read {{device}}"),
     q(f"rate(node_disk_write_time_seconds_total{{{DISKS}}}[{RATE}]{{off}})"
       f" / rate(node_disk_writes_completed_total{{{DISKS}}}[{RATE}]{{off}})", "write {{device}}"),
     q(f"rate(node_disk_io_time_seconds_total{{{DISKS}}}[{RATE}]{{off}})", "busy {{device}} (share)")),
    "s",
    "Average time per read and per write (a gap when there was none), and the share of time each device was "
    "busy. Healthy: "
    "sub-millisecond writes on SSD for the REDO device; busy near 1 means saturated.",
    min=0,
)
MEMORY = Signal(
    "Memory",
    (q(f"node_memory_MemTotal_bytes{{{NODE}}}{{off}} - node_memory_MemAvailable_bytes{{{NODE}}}{{off}}", "used"),
     q(f"node_memory_Cached_bytes{{{NODE}}}{{off}} + node_memory_Buffers_bytes{{{NODE}}}{{off}}", "page cache"),
     q(f"node_memory_MemAvailable_bytes{{{NODE}}}{{off}}", "available")),
    "bytes",
    "Used, page cache and available memory. Healthy: available never near zero (document 003: buffer pool "
    "plus REDO under what mysqld may use, and O_DIRECT so data pages are cached only once).",
    min=0,
)
NETWORK = Signal(
    "Network",
    (q(f"rate(node_network_receive_bytes_total{{{NICS}}}[{RATE}]{{off}})", "in {{device}}"),
     q(f"rate(node_network_transmit_bytes_total{{{NICS}}}[{RATE}]{{off}})", "out {{device}}")),
    "Bps",
    "Bytes per second in and out per interface. Healthy: below the link's capacity.",
    min=0,
)

SIGNALS = (CPU, LOAD, DISK_BYTES, DISK_IOPS, DISK_LATENCY, MEMORY, NETWORK)


def build():
    d = dashboard(UID, "InnoDB / Host", "CPU, disks, memory and network under the server (node_exporter).")
    d = d.with_panel(panel(CPU)).with_panel(panel(LOAD))
    d = d.with_panel(panel(DISK_BYTES)).with_panel(panel(DISK_IOPS))
    d = d.with_panel(panel(DISK_LATENCY)).with_panel(panel(MEMORY, 6)).with_panel(panel(NETWORK, 6))
    return d
