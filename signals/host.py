"""What the host measures under the server (node_exporter), and the device that holds its data.

Which device holds the data directory, only the stack knows (the exporter may run elsewhere): it
labels the host's node target with ``redo_device`` (provisioning/prometheus/write-targets.sh,
docs/fleet.md). ``on_data_device`` keeps the series of that device, or every disk's when the label is
not set.
"""

from __future__ import annotations

from .promql import Expr, binary, label_replace, node, rate
from .signal import Signal

# Block devices that are not disks: loop, RAM, compressed RAM swap, floppy, CD.
DISKS = 'device!~"loop.*|ram.*|zram.*|fd.*|sr.*"'
DEVICE_LABEL = "redo_device"
_LABELLED = node("up", f'{DEVICE_LABEL}!=""')


def disk(name: str):
    return node(name, DISKS)


def on_data_device(per_device: Expr) -> Expr:
    """``per_device`` for the data directory's device where the node target names it, else for every disk."""
    chosen = label_replace(_LABELLED, "device", "$1", DEVICE_LABEL, "(.+)")
    return binary(per_device, "and", chosen, "on (instance, device)") | per_device.unless(_LABELLED, "on (instance)")


WRITE_LATENCY = Signal("disk_write_latency",
                       rate(disk("node_disk_write_time_seconds_total"))
                       / rate(disk("node_disk_writes_completed_total")),
                       "s", "Average time of a write request to the device, as the kernel measures it.")
FLUSH_LATENCY = Signal("disk_flush_latency",
                       rate(disk("node_disk_flush_requests_time_seconds_total"))
                       / rate(disk("node_disk_flush_requests_total")),
                       "s", "Average time of a flush (cache flush, what fsync asks of the device), where the kernel "
                            "counts them (Linux 5.5+).")
FLUSHES = Signal("disk_flushes", rate(disk("node_disk_flush_requests_total")), "ops",
                 "Flush requests to the device per second (Linux 5.5+).")
