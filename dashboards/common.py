"""House defaults for every dashboard: the data source and instance variables, units, colours, and the
``View`` each panel is built from.

A ``View`` is declared once (its queries, unit, description) and turned into a Grafana panel by
``panel()``. Its queries are signals (signals/) or expressions written with the same query helper, so
the selectors, ``$__rate_interval`` and, on Compare, ``offset $offset`` are written by the helper and
never by hand. Thresholds come from signals/config.py, so a panel turns red where its alert fires.
"""

from __future__ import annotations

from dataclasses import dataclass

from grafana_foundation_sdk.builders import prometheus, stat, statetimeline, timeseries
from grafana_foundation_sdk.builders.common import (
    GraphThresholdsStyleConfig,
    ScaleDistributionConfig,
    StackingConfig,
    VizLegendOptions,
)
from grafana_foundation_sdk.builders.dashboard import (
    AnnotationQuery,
    Dashboard,
    DashboardLink,
    DatasourceVariable,
    FieldColor,
    QueryVariable,
    ThresholdsConfig,
)
from grafana_foundation_sdk.models.common import (
    BigValueColorMode,
    BigValueGraphMode,
    BigValueTextMode,
    GraphThresholdsStyleMode,
    LegendDisplayMode,
    ScaleDistribution,
    LegendPlacement,
    StackingMode,
    VisibilityMode,
)
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DashboardLinkType,
    DataSourceRef,
    DynamicConfigValue,
    FieldColorModeId,
    MatcherConfig,
    Threshold,
    ThresholdsMode,
    ValueMap,
    ValueMappingResult,
    VariableRefresh,
    VariableSort,
)

from signals import CONFIG, OFFSET, Signal, panel_context
from signals.promql import Expr, innodb, series

__all__ = ["CONFIG", "DS", "GREEN", "YELLOW", "ORANGE", "RED", "NEUTRAL", "Link", "Mapping", "Query", "View", "panel",
           "dashboard",
           "DATASOURCE_UID", "REPLAY_DATASOURCE_UID", "ALERT_ANNOTATION", "ALERT_ANNOTATION_FORMAT",
           "CAPTURE_ANNOTATION", "CAPTURE_ANNOTATION_FORMAT", "SETTINGS_ANNOTATION", "SETTINGS_ANNOTATION_FORMAT",
           "SETTINGS_CHANGE", "EARLIER",
           "earlier_legend"]

DATASOURCE_UID = "innodb-prometheus"  # provisioning/grafana/datasources/prometheus.yml
REPLAY_DATASOURCE_UID = "innodb-replay"  # the same file: the Prometheus `innodb-replay import` serves
DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
TAG = "innodb"

GREEN, YELLOW, ORANGE, RED = "green", "yellow", "orange", "red"
NEUTRAL = "blue"  # a stat with no alert behind it: a deliberate colour that says neither good nor bad
ALERT_ANNOTATION = "Alerts"
# How the alert annotation labels its marks. The SDK has no setters for the Prometheus annotation's
# formats, so generate.py adds these to the JSON.
ALERT_ANNOTATION_FORMAT = {"titleFormat": "{{alertname}}", "textFormat": "{{severity}}: {{alertname}}",
                           "tagKeys": "severity", "step": "30s", "useValueForTime": False}
# Warnings and criticals only: the info alerts (InnoDBCounterDisabled fires for each counter a stock server
# leaves off, twenty and more) would cover every panel and bury the ones that matter.
FIRING = series("ALERTS", 'alertstate="firing",severity!="info"')
CAPTURE_ANNOTATION = "Evidence captured"
# A mark where the exporter captured the raw texts of a page (its /captures lists them): the series holds
# the capture's start, in seconds, which Grafana takes as the mark's time.
LAST_CAPTURE = innodb("innodb_exporter_last_capture_timestamp_seconds") * 1000
CAPTURE_ANNOTATION_FORMAT = {"titleFormat": "Evidence captured", "textFormat": "raw texts at /captures on the exporter",
                             "step": "15s", "useValueForTime": True}
SETTINGS_ANNOTATION = "Settings changes"
# A mark at each change of a setting the exporter watches: the series holds the change's time in seconds
# (when the exporter read the new value, at most a minute after a SET GLOBAL; a restart's, the server's start).
SETTINGS_CHANGE = innodb("innodb_setting_last_change_timestamp_seconds")
SETTINGS_ANNOTATION_FORMAT = {"titleFormat": "{{setting}}: {{from}} → {{to}}",
                              "textFormat": "{{setting}} changed from {{from}} to {{to}} (restart={{restart}}; a SET "
                                            "GLOBAL is marked up to a minute after it was made)",
                              "tagKeys": "setting", "step": "15s", "useValueForTime": True}

# Compare draws each query twice; the second is shifted by $offset and named "<legend> ($offset earlier)".
EARLIER = f" ({OFFSET} earlier)"
# The override's regexp on the display name: it matches an earlier series' whole name, and no other's,
# whether Grafana anchors the pattern or searches with it.
EARLIER_NAMES = ".* earlier\\)"
DASHED = {"fill": "dash", "dash": [10, 10]}


def earlier_legend(legend: str) -> str:
    return legend + EARLIER


@dataclass(frozen=True)
class Mapping:
    """A value shown as a text in a colour (Grafana's value mapping): the class codes of the bottleneck."""

    value: int
    text: str
    color: str


@dataclass(frozen=True)
class Link:
    """A data link: where a click on a value goes."""

    title: str
    url: str

    def json(self) -> dict:
        return {"title": self.title, "url": self.url}


@dataclass(frozen=True)
class Query:
    """One query of a panel: a signal or a helper expression, and its legend."""

    expr: Signal | Expr
    legend: str
    absent_on_mariadb: str = ""  # why this series never exists on MariaDB, when it does not
    only_while: str = ""  # what must be happening for this series to exist at all (data, not flavour)
    limit: bool = False  # a limit the other series are read against: a line, never filled
    color: str = ""  # a fixed colour (limits: how close to trouble they are)
    dimension: str = ""  # what the value measures, where the metric's name does not say (see the unit test)
    mappings: tuple[Mapping, ...] = ()  # this query's own value mappings, in place of the view's
    links: tuple[Link, ...] = ()  # where a click on this query's values goes

    def render(self, offset: str = "") -> str:
        return self.expr.render(panel_context(offset=offset))


@dataclass(frozen=True)
class View:
    """What a panel shows and how: its queries, the unit of their values and what healthy looks like."""

    title: str
    queries: tuple[Query, ...]
    unit: str
    description: str  # what healthy looks like, and the alert that watches it
    kind: str = "timeseries"  # or "stat"
    base: str = GREEN  # the colour below the first threshold
    steps: tuple[tuple[float, str], ...] = ()  # thresholds above the base: (value, colour), ascending
    min: float | None = None
    max: float | None = None
    soft_min: float | None = None  # the axis shows at least down to here...
    soft_max: float | None = None  # ...and up to here, so that a flat line at zero is read as zero
    stacked: bool = False  # only for parts of one whole (never across Compare's two windows)
    no_data_on_mariadb: str = ""  # why the panel stays empty on MariaDB, when it does (in the description)
    no_value: str = ""  # the short reason Grafana shows where the data would be, when it can be empty
    fill: int = 10  # opacity of the area under each line, in %
    log_scale: bool = False  # values spread over decades (latencies: µs averages, 100 ms maxima)
    many_series: bool = False  # a legend as a table, one row per series, so that none is cut
    mappings: tuple[Mapping, ...] = ()  # every value it takes, as a text in a colour (stat, state-timeline)
    value_links: tuple[tuple[int, tuple[Link, ...]], ...] = ()  # a stat's links, by the value it shows

    @property
    def full_description(self) -> str:
        notes = [f"No data on MariaDB: {self.no_data_on_mariadb}"] if self.no_data_on_mariadb else []
        notes += [f"No '{query.legend}' on MariaDB: {query.absent_on_mariadb}"
                  for query in self.queries if query.absent_on_mariadb]
        notes += [f"'{query.legend}' only while {query.only_while}." for query in self.queries if query.only_while]
        return "\n\n".join([self.description, *notes])


def thresholds(base: str, steps) -> ThresholdsConfig:
    return ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(
        [Threshold(value=None, color=base)] + [Threshold(value=v, color=c) for v, c in steps])


def _stat(view: View, title: str):
    p = stat.Panel().title(title).graph_mode(BigValueGraphMode.AREA).color_mode(BigValueColorMode.BACKGROUND)
    if view.mappings:  # a state named by its mapping: the name, and no sparkline of codes
        p = p.graph_mode(BigValueGraphMode.NONE).text_mode(BigValueTextMode.VALUE)
    if view.steps:
        return p.thresholds(thresholds(view.base, view.steps))
    # No alert behind it: one fixed, neutral colour, not Grafana's default red above 80.
    return (p.thresholds(thresholds(NEUTRAL, ())).color_scheme(FieldColor().mode(FieldColorModeId.FIXED)
                                                                 .fixed_color(NEUTRAL)))


def _timeseries(view: View, title: str, compare: bool):
    mode = LegendDisplayMode.TABLE if view.many_series or compare else LegendDisplayMode.LIST
    legend = VizLegendOptions().display_mode(mode).placement(LegendPlacement.BOTTOM).show_legend(True)
    p = timeseries.Panel().title(title).fill_opacity(view.fill).line_width(1).legend(legend)
    if view.stacked and not compare:
        p = p.stacking(StackingConfig().mode(StackingMode.NORMAL)).fill_opacity(40)
    if view.steps:
        p = (p.thresholds(thresholds(view.base, view.steps))
             .thresholds_style(GraphThresholdsStyleConfig().mode(GraphThresholdsStyleMode.LINE)))
    if view.log_scale:
        p = p.scale_distribution(ScaleDistributionConfig().type(ScaleDistribution.LOG).log(10))
    if view.soft_min is not None:
        p = p.axis_soft_min(view.soft_min)
    if view.soft_max is not None:
        p = p.axis_soft_max(view.soft_max)
    return p


def _state_timeline(view: View, title: str):
    """One row per series, each span coloured and named by the value mappings."""
    legend = (VizLegendOptions().show_legend(False).display_mode(LegendDisplayMode.LIST)
              .placement(LegendPlacement.BOTTOM))
    return (statetimeline.Panel().title(title).show_value(VisibilityMode.AUTO).merge_values(True).row_height(0.85)
            .fill_opacity(85).line_width(0).legend(legend))


def _mappings(mappings: tuple[Mapping, ...]) -> list:
    return [ValueMap(options={str(m.value): ValueMappingResult(text=m.text, color=m.color, index=number)
                              for number, m in enumerate(mappings)})]


def _mappings_json(mappings: tuple[Mapping, ...]) -> list[dict]:
    return [{"type": "value", "options": {str(m.value): {"text": m.text, "color": m.color, "index": number}
                                          for number, m in enumerate(mappings)}}]


def panel(view: View, width: int = 12, height: int = 8, compare: bool = False, title_suffix: str = ""):
    """The panel for a view; on Compare each query is drawn twice: now, and shifted back by $offset (dashed)."""
    title = view.title + title_suffix
    if view.kind == "stat":
        p = _stat(view, title)
    elif view.kind == "state-timeline":
        p = _state_timeline(view, title)
    else:
        p = _timeseries(view, title, compare)
    p = p.description(view.full_description).datasource(DS).unit(view.unit).height(height).span(width)
    if view.mappings:
        p = p.mappings(_mappings(view.mappings))
    for value, links in view.value_links:  # Grafana's "fields with values" matcher: the link of the value shown
        p = p.with_override(MatcherConfig(id_val="byValue", options={"reducer": "lastNotNull", "op": "eq",
                                                                      "value": value}),
                            [DynamicConfigValue(id_val="links", value=[link.json() for link in links])])
    if view.no_value:
        p = p.no_value(view.no_value)
    if view.min is not None:
        p = p.min(view.min)
    if view.max is not None:
        p = p.max(view.max)
    ref = iter("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    for query in view.queries:
        refs = [next(ref)]
        p = p.with_target(prometheus.Dataquery().expr(query.render()).legend_format(query.legend).ref_id(refs[0]))
        if compare:
            refs.append(next(ref))
            p = p.with_target(prometheus.Dataquery().expr(query.render(OFFSET))
                              .legend_format(earlier_legend(query.legend)).ref_id(refs[1]))
        if query.mappings or query.links:
            properties = [DynamicConfigValue(id_val="mappings", value=_mappings_json(query.mappings))] \
                if query.mappings else []
            if query.links:
                properties.append(DynamicConfigValue(id_val="links", value=[link.json() for link in query.links]))
            for r in refs:
                p = p.override_by_query(r, properties)
        if query.limit or query.color:
            properties = [DynamicConfigValue(id_val="custom.fillOpacity", value=0)] if query.limit else []
            if query.limit:
                properties.append(DynamicConfigValue(id_val="custom.lineWidth", value=2))
            if query.color:
                properties.append(DynamicConfigValue(id_val="color",
                                                     value={"mode": "fixed", "fixedColor": query.color}))
            for r in refs:
                p = p.override_by_query(r, properties)
    if compare and view.kind == "timeseries":
        p = p.override_by_regexp(EARLIER_NAMES, [DynamicConfigValue(id_val="custom.lineStyle", value=DASHED),
                                                  DynamicConfigValue(id_val="custom.fillOpacity", value=0)])
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
                    .expr(FIRING.render(panel_context())))
        .annotation(AnnotationQuery().name(CAPTURE_ANNOTATION).datasource(DS).enable(True).icon_color("purple")
                    .expr(LAST_CAPTURE.render(panel_context())))
        .annotation(AnnotationQuery().name(SETTINGS_ANNOTATION).datasource(DS).enable(True).icon_color("orange")
                    .expr((SETTINGS_CHANGE * 1000).render(panel_context())))
        .link(DashboardLink("InnoDB").type(DashboardLinkType.DASHBOARDS).tags([TAG]).as_dropdown(False)
              .include_vars(True).keep_time(True))
    )
