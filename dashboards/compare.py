"""Compare: the key panels of the other dashboards for two time windows overlaid, now and earlier.

What dim_STAT users do most: before/after a change, incident against baseline. ``$offset`` is how far
back the second window is (a chosen offset such as 1d, or the distance to a chosen earlier window,
e.g. 3d4h); each panel draws every query twice, now and shifted by ``offset $offset`` (the query
helper writes the offset after every selector), the earlier one dashed.
"""

from __future__ import annotations

from dataclasses import replace

from grafana_foundation_sdk.builders.dashboard import CustomVariable
from grafana_foundation_sdk.models.dashboard import VariableOption

from signals import OFFSET

from . import buffer_pool, checkpoint, contention, host, overview, purge, redo
from .common import dashboard, panel

UID = "innodb-compare"
TITLE = "InnoDB / Compare"
OFFSETS = ("10m", "30m", "1h", "6h", "1d", "7d")
DEFAULT_OFFSET = "1d"

VIEWS = (
    replace(overview.LIMITS_TIMELINE, title="What limited the server", queries=(overview.WINNER_QUERY,), no_value="",
            description="The next bottleneck over both windows: the first class of the tuning procedure that held at "
                        "each moment, now and $offset earlier. Healthy: green in both."),
    replace(overview.QPS, kind="timeseries", min=0),
    checkpoint.AGE_RATIO, checkpoint.FLUSH_RATE, checkpoint.WHO_REQUESTS, buffer_pool.FREE_PAGE_DEMAND,
    purge.HISTORY, redo.BYTES, redo.FSYNC_LATENCY, contention.LATCH_TIME, host.CPU,
)


def build():
    d = dashboard(UID, TITLE,
                  "The key panels for two windows overlaid: now (solid), and $offset earlier (dashed). Pick a preset "
                  "offset or type the distance to the window you want (e.g. 3d4h for an incident three days and "
                  "four hours ago).")
    d = d.with_variable(CustomVariable(OFFSET.lstrip("$")).label("Compare with").values(",".join(OFFSETS))
                        .options([VariableOption(text=o, value=o, selected=o == DEFAULT_OFFSET) for o in OFFSETS])
                        .current(VariableOption(text=DEFAULT_OFFSET, value=DEFAULT_OFFSET, selected=True))
                        .allow_custom_value(True))
    for view in VIEWS:
        timeline = view.kind == "state-timeline"  # two rows only: a full-width strip
        d = d.with_panel(panel(view, width=24 if timeline else 12, height=5 if timeline else 10, compare=True,
                               title_suffix=f" (now and {OFFSET} earlier)"))
    return d
