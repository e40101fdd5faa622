"""Which block device holds a directory, named as node_exporter names it (``node_disk_*{device}``).

The stack labels the host's node target with it (``redo_device``), so that the REDO panels can show
what the host measures for the disk under the data directory where the server does not time its own
fsyncs. Only the stack can know: the exporter may run on another host.
"""

from __future__ import annotations

import os

SYS_BLOCK = "/sys/dev/block"


def block_device(path: str, sys_block: str = SYS_BLOCK) -> str:
    """The disk under ``path`` ("vda", "nvme0n1", "dm-0"), or "" when there is none to name (tmpfs,
    overlay, a path that does not exist). A partition is named by its disk: node_exporter leaves
    partitions out by default."""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    link = os.path.join(sys_block, f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not os.path.exists(link):
        return ""  # an anonymous device: tmpfs, overlay, a network file system
    device = os.path.realpath(link)
    if os.path.exists(os.path.join(device, "partition")):
        device = os.path.dirname(device)
    return os.path.basename(device)
