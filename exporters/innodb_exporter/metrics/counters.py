"""Every enabled INNODB_METRICS counter as ``innodb_metrics_<name>``, typed by what it means.

The server's TYPE column is not enough: some rows typed as counters hold a current value that goes up
and down. ``counter_types.TYPES`` types every counter of every flavour by meaning; a counter it does not
know (a new server version) falls back to the TYPE column, and a test lists the ones it falls back on.
"""

from __future__ import annotations

import re
from functools import lru_cache
from operator import attrgetter

from .counter_types import TYPES
from .families import Exposed, Family
from .snapshot import Snapshot

# Name parts that Prometheus reads as abbreviated units, spelled out as InnoDB means them
# (innodb_rwlock_s_spin_waits: shared; buffer_index_sec_rec_cluster_reads: secondary).
_SPELLED_OUT = {"s": "shared", "sec": "secondary"}


def _kind(name: str, type_: str) -> str:
    """"counter" or "gauge": from the table, else from TYPE (``value`` rows are gauges)."""
    return TYPES.get(name) or ("gauge" if type_ == "value" else "counter")


def metric_name(counter: str, kind: str) -> str:
    """``innodb_metrics_<counter>``, with ``_total`` for a counter; a gauge whose name ends like a counter or
    histogram part gets ``_value``. Characters a metric name cannot hold become ``_``."""
    parts = [_SPELLED_OUT.get(part, part) for part in re.sub(r"[^a-z0-9_]", "_", counter.lower()).split("_")]
    name = "innodb_metrics_" + "_".join(parts)
    if kind == "counter":
        return name if name.endswith("_total") else name + "_total"
    if name.endswith(("_total", "_count", "_sum", "_bucket")):
        name += "_value"
    return name


def families(snapshot: Snapshot) -> list[Exposed]:
    if not snapshot.counters:
        return []
    out = []
    for row in sorted(snapshot.counters.values(), key=_BY_NAME):
        if row.enabled:
            family = _family(row.name, row.type, row.subsystem, row.comment)
            if row.count >= 0 or family.type == "gauge":  # some MySQL builds report negative totals (bug 75966)
                out.append(Exposed(family, [((), float(row.count))]))
    return out


_BY_NAME = attrgetter("name")


@lru_cache(maxsize=4096)
def _family(name: str, type_: str, subsystem: str, comment: str) -> Family:
    """A counter's family, worked out once: the same few hundred come back on every scrape (typed here,
    so that a scrape does not type them again)."""
    kind = _kind(name, type_)
    help_text = f"{comment.rstrip('.')} (INNODB_METRICS {name}, subsystem {subsystem})."
    return Family(metric_name(name, kind), kind, "", help_text)
