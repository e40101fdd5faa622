"""The colours of the dashboards: one per kind of series, the same on every dashboard, and colours no series
takes for the limits, targets and thresholds the series are read against.

Series are drawn in blues, cyans, purples and magentas. Yellow, orange and red say how close a limit or an
alert's threshold is to trouble, green marks a level that is good (the hit ratio's), and grey a reference
that is neither (a target, a capacity, the CPU count). Limit lines are also dotted and threshold lines
dashed, where series are solid (Compare dashes the earlier window's series, in the series' own colours).

A series is named by its legend: ``SERIES`` gives each name its colour, so that the checkpoint age, the
host's flushes or a kind of flushing look the same wherever they are drawn. A legend with a label in it
(``{{kind}}``) is coloured by the label's values, which the exporter's model declares (``label_values``), or,
when it is in ``SERIES`` itself, all its series in one colour. Series of an open set (latch names, devices)
keep Grafana's palette, on panels that draw no limit and no threshold; a device is coloured by its kind
(a disk's reads, writes, flushes), the same on the Host and REDO dashboards.
"""

from __future__ import annotations

import re

from innodb_exporter.metrics.model import METRICS, Series

# Series: hues between 180° and 310°, none of the limits' below.
BLUE, DARK_BLUE, LIGHT_BLUE, SKY = "#5794F2", "#1F60C4", "#8AB8FF", "#2C9FD9"
CYAN, TEAL, LIGHT_CYAN = "#4FC3D9", "#117A8B", "#8FE0EA"
PURPLE, DARK_PURPLE, LIGHT_PURPLE, INDIGO = "#B877D9", "#8F3BB8", "#CA95E5", "#7B8CDE"
MAGENTA, PINK = "#C740B8", "#E38AD6"

# Limits and thresholds: Grafana's named colours (common.py's GREEN, YELLOW, ORANGE, RED) and a grey for
# references, with the hex Grafana's dark theme gives the names (Grafana 9.4,
# packages/grafana-data/src/themes/createVisualizationColors.ts), for the tests to compare hues.
REFERENCE = "#A0A8B4"
NAMED = {"green": "#73BF69", "yellow": "#FADE2A", "orange": "#FF9830", "red": "#F2495C"}
LIMITS = frozenset({*NAMED, REFERENCE})
NOT_MEASURED = "#8E8E8E"  # a stat, or a legend row, that says the server does not measure it

FLUSH_KINDS = {"adaptive": BLUE, "background": LIGHT_BLUE, "sync": MAGENTA, "lru": TEAL, "neighbor": CYAN,
               "single_page": DARK_PURPLE, "page_cleaner": DARK_BLUE}
SPIN_MODES = ("mutex", "rw_shared", "rw_excl", "rw_sx")  # SHOW ENGINE INNODB STATUS, SEMAPHORES' spin lines

SERIES: dict[str, str] = {
    # checkpoint age and flushing
    "checkpoint age": BLUE,
    "checkpoint age / max": BLUE,
    "age compared (modified age; checkpoint age on MariaDB 10.5+)": SKY,
    "modified age (LSN − oldest dirty page)": PURPLE,
    **FLUSH_KINDS,
    "all pages flushed": PURPLE,
    "for the dirty pages level": BLUE,
    "for REDO (checkpoint age)": PURPLE,
    "sync flush waits": MAGENTA,
    "log buffer waits": TEAL,
    # buffer pool
    "free page requests": BLUE,
    "loops (free list empty)": PURPLE,
    "waits (slept)": DARK_PURPLE,
    "free page waits (user threads)": MAGENTA,
    "free page requests/s per instance ÷ innodb_lru_scan_depth": BLUE,
    "free": CYAN, "data": BLUE, "misc": PURPLE,
    "dirty pages": BLUE,
    "reads": BLUE,
    "writes: lru": TEAL, "writes: flush_list": PURPLE, "writes: single_page": DARK_PURPLE,
    "hit ratio (since the last status printout)": TEAL,
    "hit ratio": BLUE,
    # purge and transactions
    "history list length": BLUE,
    "undo log pages purged/s": TEAL,
    "history change/s": PURPLE,
    "trx id counter − purge done for": BLUE,
    "delay per row operation": MAGENTA,
    "oldest transaction age": BLUE,
    "active transactions": BLUE,
    "waiting for a row lock": MAGENTA,
    "read views open": TEAL,
    # REDO
    "REDO bytes/s": BLUE,
    "REDO writes/s": BLUE,
    "REDO write requests/s": PURPLE,
    "server: REDO fsyncs/s": BLUE,
    "host {{device}}: flushes/s": TEAL,
    "server: REDO fsync average": BLUE,
    "server: InnoDB's avg": PURPLE,
    "server: InnoDB's max": DARK_PURPLE,
    "host {{device}}: flush": TEAL,
    "host {{device}}: write": CYAN,
    "written, not flushed": CYAN,
    "changes in unflushed pages": PURPLE,
    # contention
    "longest wait": BLUE,
    **{f"spin rounds {mode}": colour for mode, colour in zip(SPIN_MODES, (BLUE, LIGHT_BLUE, DARK_BLUE, SKY))},
    **{f"OS waits {mode}": colour for mode, colour in zip(SPIN_MODES, (PURPLE, LIGHT_PURPLE, DARK_PURPLE, INDIGO))},
    "OS wait array reservations": MAGENTA,
    "row lock waits": MAGENTA,
    # host
    "user": BLUE, "system": PURPLE, "iowait": MAGENTA, "steal": DARK_PURPLE, "softirq": CYAN,
    "load 1m": BLUE,
    # a disk's reads, writes and flushes, and a network interface's traffic: each device in its kind's colour,
    # as the REDO dashboard draws the data device's (the legend's table tells the devices apart)
    "read {{device}}": BLUE, "reads {{device}}": BLUE,
    "written {{device}}": CYAN, "writes {{device}}": CYAN, "write {{device}}": CYAN,
    "flush {{device}}": TEAL,
    "busy {{device}}": PURPLE,
    "in {{device}}": BLUE, "out {{device}}": PURPLE,
    "MySQL threads running": PURPLE,
    "used": BLUE, "page cache": CYAN, "available": TEAL,
    # load
    "Queries per second": BLUE,
}

# A legend's label, as Grafana writes it in: {{name}}.
LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def label_values(metric: str) -> tuple[str, ...]:
    """The values of the one label of a metric with fixed series, as the exporter's model declares them."""
    found = next(m for m in METRICS if m.name == metric)
    assert isinstance(found.builder, Series) and len(found.family.labels) == 1, metric
    return tuple(labels[0] for labels, _ in found.builder.chains)
