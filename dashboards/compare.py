"""Compare: the key panels of the other dashboards for two time windows overlaid, now and earlier.

What dim_STAT users do most: before/after a change, incident against baseline. ``$offset`` is how far
back the second window is (a chosen offset such as 1d, or the distance to a chosen earlier window,
e.g. 3d4h); each panel draws every query twice, now and shifted by ``offset $offset`` (the query
helper writes the offset after every selector), the earlier one dashed.

Centred on a change: ``$change`` lists the settings changes the exporter marked in the time range
(innodb_setting_last_change_timestamp_seconds), and the link "Centre on the chosen change" opens
Compare on the "after" window, ``$change_window`` seconds from ``$settle`` seconds after the mark, with
``$offset`` shifting the dashed "earlier" lines onto the "before" window, which ends at the change: a
SET GLOBAL is marked when the exporter next reads the settings, so before ends ``MARK_LATE`` seconds
before the mark, as innodb-replay impact's does. Grafana cannot add numbers in a link, so three hidden
variables have Prometheus work out the link's times (``vector()``).
"""

from __future__ import annotations

from dataclasses import replace

from grafana_foundation_sdk.builders.dashboard import CustomVariable, DashboardLink, QueryVariable
from grafana_foundation_sdk.models.dashboard import DashboardLinkType, VariableHide, VariableOption, VariableRefresh

from innodb_exporter.sources.global_status import SETTINGS_MAX_AGE
from signals import OFFSET, panel_context
from signals.promql import max_over_time

from . import buffer_pool, checkpoint, contention, host, overview, purge, redo
from .common import DS, SETTINGS_CHANGE, dashboard, panel

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


# Centred on a change: the changes marked in the range (the value is the mark, the text the setting), the
# settling time and the window in seconds, and the link's times, which Prometheus adds up.
CHANGE_LIST = (f"query_result({max_over_time(SETTINGS_CHANGE, '$__range').render(panel_context())})",
               r'/setting="(?<text>[^"]+)".*\} (?<value>[0-9.]+) /')
SETTLE = ("settle", "Settling time (s)", ("30", "60", "120", "300"), "60")
CHANGE_WINDOW = ("change_window", "Window (s)", ("300", "600", "1800", "3600"), "600")
# How late a SET GLOBAL's mark can be: the exporter's settings interval and a scrape of the slowest job.
MARK_LATE = round(SETTINGS_MAX_AGE) + 15
# A change not chosen yet is empty: "+ 0" keeps the sum valid.
LINK_TIMES = (("change_from", "(${change} + 0 + ${settle}) * 1000"),
              ("change_to", "(${change} + 0 + ${settle} + ${change_window}) * 1000"),
              ("change_offset", f"${{settle}} + ${{change_window}} + {MARK_LATE}"))
CENTRE_LINK = ("/d/" + UID + "/?from=${change_from}&to=${change_to}&var-offset=${change_offset}s&${instance:queryparam}"
               "&${datasource:queryparam}&${change:queryparam}&${settle:queryparam}&${change_window:queryparam}")


def _change_variables(d):
    query, regex = CHANGE_LIST
    d = d.with_variable(QueryVariable("change").label("Centre on change").datasource(DS).query(query).regex(regex)
                        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
                        .description("A settings change the exporter marked in the time range; then the link "
                                     "'Centre on the chosen change'"))
    for name, label, values, default in (SETTLE, CHANGE_WINDOW):
        d = d.with_variable(CustomVariable(name).label(label).values(",".join(values))
                            .options([VariableOption(text=v, value=v, selected=v == default) for v in values])
                            .current(VariableOption(text=default, value=default, selected=True)))
    for name, expr in LINK_TIMES:
        d = d.with_variable(QueryVariable(name).datasource(DS).query(f"query_result(round(vector({expr})))")
                            .regex(r"/\{\} ([0-9.]+) /").hide(VariableHide.HIDE_VARIABLE)
                            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED))
    return d.link(DashboardLink("Centre on the chosen change").type(DashboardLinkType.LINK).url(CENTRE_LINK)
                  .tooltip("After: the window from the settling time after the change (solid); before: the window "
                           f"that ends at the change (dashed), {MARK_LATE}s before its mark").include_vars(False)
                  .keep_time(False))


def build():
    d = dashboard(UID, TITLE,
                  "The key panels for two windows overlaid: now (solid), and $offset earlier (dashed). Pick a preset "
                  "offset or type the distance to the window you want (e.g. 3d4h for an incident three days and "
                  "four hours ago). Or centre it on a settings change: pick it in 'Centre on change', then follow "
                  "the link 'Centre on the chosen change' (after: solid; before, ending at the change: dashed).")
    d = d.with_variable(CustomVariable(OFFSET.lstrip("$")).label("Compare with").values(",".join(OFFSETS))
                        .options([VariableOption(text=o, value=o, selected=o == DEFAULT_OFFSET) for o in OFFSETS])
                        .current(VariableOption(text=DEFAULT_OFFSET, value=DEFAULT_OFFSET, selected=True))
                        .allow_custom_value(True))
    d = _change_variables(d)
    for view in VIEWS:
        timeline = view.kind == "state-timeline"  # two rows only: a full-width strip
        d = d.with_panel(panel(view, width=24 if timeline else 12, height=5 if timeline else 10, compare=True,
                               title_suffix=f" (now and {OFFSET} earlier)"))
    return d
