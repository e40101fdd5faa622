"""Compare: the key panels of the other dashboards for two time windows overlaid, now and earlier.

What dim_STAT users do most: before/after a change, incident against baseline. ``$offset`` is how far
back the second window is (a chosen offset such as 1d, or the distance to a chosen earlier window,
e.g. 3d4h); each panel draws every query twice, now and ``offset $offset``.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import CustomVariable
from grafana_foundation_sdk.models.dashboard import VariableOption

from . import buffer_pool, checkpoint, contention, host, overview, purge, redo
from .common import dashboard, panel

UID = "innodb-compare"

KEY_SIGNALS = (
    overview.QPS.__class__(**{**overview.QPS.__dict__, "kind": "timeseries"}),
    checkpoint.AGE_RATIO, checkpoint.FLUSH_RATE, checkpoint.WHO_REQUESTS, buffer_pool.FREE_PAGE_DEMAND,
    purge.HISTORY, redo.BYTES, redo.FSYNC_LATENCY, contention.LATCH_TIME, host.CPU,
)


def build():
    d = dashboard(UID, "InnoDB / Compare",
                  "The key panels for two windows overlaid: now, and $offset earlier. Pick a preset offset or type "
                  "the distance to the window you want (e.g. 3d4h for an incident three days and four hours ago).")
    offsets = ("1h", "6h", "1d", "2d", "7d", "14d", "28d")
    d = d.with_variable(CustomVariable("offset").label("Compare with").values(",".join(offsets))
                        .options([VariableOption(text=o, value=o, selected=o == "1d") for o in offsets])
                        .current(VariableOption(text="1d", value="1d", selected=True)).allow_custom_value(True))
    for signal in KEY_SIGNALS:
        d = d.with_panel(panel(signal, offset="$offset", title_suffix=" (now and $offset earlier)"))
    return d
