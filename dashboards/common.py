"""House defaults for every dashboard: the data source and instance variables, the query helper,
units, colours and the signal type each panel is built from.

A ``Signal`` is declared once (its queries, unit and description) and turned into a panel by
``panel()``; the Compare dashboard builds the same signals again with an ``offset``. Thresholds come
from alerts/mixin.py's CONFIG, so a panel turns red where its alert fires.
"""

from __future__ import annotations

from dataclasses import dataclass

from grafana_foundation_sdk.builders import prometheus, stat, timeseries
from grafana_foundation_sdk.builders.dashboard import (
    AnnotationQuery,
    Dashboard,
    DashboardLink,
    DatasourceVariable,
    QueryVariable,
    ThresholdsConfig,
)
from grafana_foundation_sdk.builders.common import StackingConfig, VizLegendOptions
from grafana_foundation_sdk.models.common import (
    BigValueColorMode,
    BigValueGraphMode,
    GraphThresholdsStyleMode,
    LegendDisplayMode,
    LegendPlacement,
    StackingMode,
)
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DashboardLinkType,
    DataSourceRef,
    Threshold,
    ThresholdsMode,
    VariableRefresh,
    VariableSort,
)
from grafana_foundation_sdk.builders.common import GraphThresholdsStyleConfig

from alerts.mixin import CONFIG as ALERTS

__all__ = ["ALERTS", "DS", "INNODB", "MYSQLD", "NODE", "RATE", "GREEN", "YELLOW", "ORANGE", "RED", "Query", "Signal",
           "q", "panel", "dashboard", "thresholds", "DATASOURCE_UID", "ALERT_ANNOTATION", "ALERT_ANNOTATION_FORMAT"]

DATASOURCE_UID = "innodb-prometheus"  # provisioning/grafana/datasources/prometheus.yml
DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
TAG = "innodb"
INNODB = 'job="innodb",instance="$instance"'  # every job labels its series with the server's address
MYSQLD = 'job="mysqld",instance="$instance"'
NODE = 'job="node",instance="$instance"'
RATE = "$__rate_interval"

GREEN, YELLOW, ORANGE, RED = "green", "yellow", "orange", "red"
ALERT_ANNOTATION = "Alerts"
# How the alert annotation labels its marks. The SDK has no setters for the Prometheus annotation's
# formats, so generate.py adds these to the JSON.
ALERT_ANNOTATION_FORMAT = {"titleFormat": "{{alertname}}", "textFormat": "{{severity}}: {{alertname}}",
                           "tagKeys": "severity", "step": "30s", "useValueForTime": False}


@dataclass(frozen=True)
class Query:
    """A PromQL template: ``{off}`` marks where Compare adds ``offset $offset`` (after each selector)."""

    expr: str
    legend: str
    absent_on_mariadb: str = ""  # why this series never exists on MariaDB, when it does not

    def render(self, offset: str = "") -> str:
        return self.expr.replace("{off}", f" offset {offset}" if offset else "")


@dataclass(frozen=True)
class Signal:
    title: str
    queries: tuple[Query, ...]
    unit: str
    description: str  # what healthy looks like, and the alert that watches it
    kind: str = "timeseries"  # or "stat"
    steps: tuple[tuple[float, str], ...] = ()  # thresholds: (value, colour), ascending
    min: float | None = None
    max: float | None = None
    stacked: bool = False
    no_data_on_mariadb: str = ""  # why the panel stays empty on MariaDB, when it does

    @property
    def full_description(self) -> str:
        notes = [f"No data on MariaDB: {self.no_data_on_mariadb}"] if self.no_data_on_mariadb else []
        notes += [f"No '{query.legend}' on MariaDB: {query.absent_on_mariadb}"
                  for query in self.queries if query.absent_on_mariadb]
        return "\n\n".join([self.description, *notes])


def q(expr: str, legend: str, absent_on_mariadb: str = "") -> Query:
    return Query(expr, legend, absent_on_mariadb)


def thresholds(steps) -> ThresholdsConfig:
    return ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(
        [Threshold(value=None, color=GREEN)] + [Threshold(value=v, color=c) for v, c in steps])


def panel(signal: Signal, width: int = 12, height: int = 8, offset: str = "", title_suffix: str = ""):
    """The panel for a signal; with ``offset``, each query is drawn twice: now, and shifted back."""
    title = signal.title + title_suffix
    if signal.kind == "stat":
        p = (stat.Panel().title(title).graph_mode(BigValueGraphMode.AREA).color_mode(BigValueColorMode.BACKGROUND))
    else:
        p = (timeseries.Panel().title(title).fill_opacity(10).line_width(1)
             .legend(VizLegendOptions().display_mode(LegendDisplayMode.LIST).placement(LegendPlacement.BOTTOM)
                     .show_legend(True)))
        if signal.stacked:
            p = p.stacking(StackingConfig().mode(StackingMode.NORMAL)).fill_opacity(40)
        if signal.steps:
            p = p.thresholds_style(GraphThresholdsStyleConfig().mode(GraphThresholdsStyleMode.LINE))
    p = p.description(signal.full_description).datasource(DS).unit(signal.unit).height(height).span(width)
    if signal.steps:
        p = p.thresholds(thresholds(signal.steps))
    if signal.min is not None:
        p = p.min(signal.min)
    if signal.max is not None:
        p = p.max(signal.max)
    ref = iter("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    for query in signal.queries:
        p = p.with_target(prometheus.Dataquery().expr(query.render()).legend_format(query.legend).ref_id(next(ref)))
        if offset:
            p = p.with_target(prometheus.Dataquery().expr(query.render(offset))
                              .legend_format(f"{query.legend or '{{__name__}}'} ({offset} earlier)")
                              .ref_id(next(ref)))
    return p


def dashboard(uid: str, title: str, description: str) -> Dashboard:
    """A dashboard with the house variables, alert annotations and links to its siblings."""
    return (
        Dashboard(title).uid(uid).description(description).tags([TAG]).refresh("30s").time("now-1h", "now")
        .timezone("browser").tooltip(DashboardCursorSync.CROSSHAIR).editable()
        .with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(QueryVariable("instance").label("Server").datasource(DS)
                       .query("label_values(innodb_up, instance)").refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
                       .sort(VariableSort.ALPHABETICAL_ASC))
        .annotation(AnnotationQuery().name(ALERT_ANNOTATION).datasource(DS).enable(True).icon_color("red")
                    .expr('ALERTS{alertstate="firing",instance="$instance"}'))
        .link(DashboardLink("InnoDB").type(DashboardLinkType.DASHBOARDS).tags([TAG]).as_dropdown(False)
              .include_vars(True).keep_time(True))
    )
