"""House defaults for every dashboard: the data source and instance variables, units, colours, and the
``View`` each panel is built from.

A ``View`` is declared once (its queries, unit, description) and turned into a Grafana panel by
``panel()``. Its queries are signals (signals/) or expressions written with the same query helper, so
the selectors, ``$__rate_interval`` and, on Compare, ``offset $offset`` are written by the helper and
never by hand. Thresholds come from signals/config.py, so a panel turns red where its alert fires.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grafana_foundation_sdk.builders import prometheus, stat, statetimeline, timeseries
from grafana_foundation_sdk.builders.common import (
    GraphThresholdsStyleConfig,
    ReduceDataOptions,
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
    DashboardSpecialValueMapOptions,
    DataSourceRef,
    DynamicConfigValue,
    FieldColorModeId,
    SpecialValueMap,
    SpecialValueMatch,
    Threshold,
    ThresholdsMode,
    ValueMap,
    ValueMappingResult,
    VariableRefresh,
    VariableSort,
)

from innodb_exporter.metrics.model import METRICS
from innodb_exporter.metrics.model import Series as FixedSeries
from signals import CONFIG, OFFSET, Signal, panel_context
from signals.promql import Call, Expr, Series, innodb, max_by, series

from . import colors, legend

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
EARLIER_SUFFIX = r"(?: \(.* earlier\))?"  # after a name's pattern: that series now, or earlier
DASHED = {"fill": "dash", "dash": [10, 10]}
LIMIT_LINE = {"fill": "dot", "dash": [0, 10]}  # limits and targets: dots, where series are solid or dashed


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
    limit: bool = False  # a limit the other series are read against: a dotted line, never filled
    color: str = ""  # a fixed colour; a limit's is one of colors.LIMITS, a series' comes from colors.SERIES
    dimension: str = ""  # what the value measures, where the metric's name does not say (see the unit test)
    mappings: tuple[Mapping, ...] = ()  # this query's own value mappings, in place of the view's
    links: tuple[Link, ...] = ()  # where a click on this query's values goes
    values: tuple[str, ...] = ()  # the values of the label its legend names, each a series of its own colour
    series: int = 0  # at most this many series, where its legend's label has no declared values (a top N)
    right_axis: str = ""  # drawn on an axis of its own on the right, with this label (values far apart)

    def render(self, offset: str = "") -> str:
        return self.expr.render(panel_context(offset=offset))

    @property
    def rows(self) -> int:
        """How many series, so legend rows, it gives at most."""
        return len(self.values) or self.series or 1


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
    no_value: str = ""  # the short reason Grafana shows where the data would be: for every flavour alike
    fill: int = 10  # opacity of the area under each line, in %
    log_scale: bool = False  # values spread over decades (latencies: µs averages, 100 ms maxima)
    decimals: int | None = None  # 0 for counts: no 0.5 on the axis of threads or transactions
    axis_label: str = ""  # the left axis' label, where a query has an axis of its own on the right
    mappings: tuple[Mapping, ...] = ()  # every value it takes, as a text in a colour (stat, state-timeline)
    value_links: tuple[tuple[int, tuple[Link, ...]], ...] = ()  # a stat's links, by the value it shows

    @property
    def full_description(self) -> str:
        notes = [f"No data on MariaDB: {self.no_data_on_mariadb}"] if self.no_data_on_mariadb else []
        notes += [f"No '{query.legend}' on MariaDB: {query.absent_on_mariadb}"
                  for query in self.queries if query.absent_on_mariadb]
        notes += [f"'{query.legend}' only while {query.only_while}." for query in self.queries if query.only_while]
        return "\n\n".join([self.description, *notes])

    @property
    def not_measured(self) -> tuple[Query, ...]:
        """The queries whose absence the exporter states (innodb_exporter_metric_absent), each with the reason."""
        return tuple(q for q in self.queries if q.absent_on_mariadb) + (
            (self.queries[0],) if self.no_data_on_mariadb and _metrics(self.queries[0]) else ())

    def legend_rows(self, compare: bool = False) -> int:
        """The rows of its legend: every series (twice on Compare, with the earlier window's note), and a row
        for each metric the server does not measure."""
        rows = sum(q.rows for q in self.queries)
        return (2 * rows + 1 if compare else rows) + len(self.not_measured)


# Why a metric of fixed series has no value, as the exporter says it (docs/metrics.md): a legend row of the panel,
# or, for a stat, its value where the server does not have the number at all.
ABSENT = "innodb_exporter_metric_absent"
NOT_PROVIDED = "Not measured by this server"
# Compare: where nothing was recorded of this server in the earlier window (the stack younger than $offset).
NOTHING_EARLIER = Call("absent", (innodb("innodb_up"),))
NOTHING_EARLIER_LEGEND = f"nothing recorded {OFFSET} earlier"


def _metrics(query: Query) -> tuple[str, ...]:
    """The exporter's metrics of fixed series a query reads, in order."""
    fixed = {m.name for m in METRICS if isinstance(m.builder, FixedSeries)}
    found: list[str] = []

    def walk(node):
        if isinstance(node, Signal):
            walk(node.expr)
        elif isinstance(node, Series):
            if node.source == "innodb" and node.name in fixed and node.name not in found:
                found.append(node.name)
        elif isinstance(node, Expr):
            for value in vars(node).values():
                for item in value if isinstance(value, tuple) else (value,):
                    if isinstance(item, (Expr, Signal)):
                        walk(item)

    walk(query.expr)
    return tuple(found)


def not_measured_query(query: Query, stat: bool = False) -> Query:
    """A series for each reason the exporter gives for not having the query's metrics; a stat's, only where the
    server does not have them at all (not_provided)."""
    names = "|".join(_metrics(query))
    reason = ',reason="not_provided"' if stat else ""
    name = colors.LABEL.sub(lambda m: m.group(1), query.legend)  # a label's name where its value would be
    return Query(max_by(("reason",), innodb(ABSENT, f'metric=~"{names}"{reason}')),
                 f"{name}: no value ({{{{reason}}}})")


def thresholds(base: str, steps) -> ThresholdsConfig:
    return ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(
        [Threshold(value=None, color=base)] + [Threshold(value=v, color=c) for v, c in steps])


# No value is never drawn in a healthy colour: a stat without data is grey, whatever its thresholds' base.
NO_VALUE_GREY = SpecialValueMap(DashboardSpecialValueMapOptions(SpecialValueMatch.NULL_AND_NAN,
                                                                ValueMappingResult(color=colors.NOT_MEASURED)))


def _stat(view: View, title: str):
    # The last value that is not null: the last point of a rate is often empty, which "last" would show as no value.
    p = (stat.Panel().title(title).graph_mode(BigValueGraphMode.AREA).color_mode(BigValueColorMode.BACKGROUND)
         .reduce_options(ReduceDataOptions().calcs(["lastNotNull"]).values(False)))
    if view.mappings:  # a state named by its mapping: the name, and no sparkline of codes
        p = p.graph_mode(BigValueGraphMode.NONE).text_mode(BigValueTextMode.VALUE)
    if view.steps:  # the alert's colour as the background, which Grafana would cross with a bright sparkline
        return p.thresholds(thresholds(view.base, view.steps)).graph_mode(BigValueGraphMode.NONE)
    # No alert behind it: one fixed, neutral colour, not Grafana's default red above 80; the value's colour on
    # the panel's background, so that its sparkline stays a faint shape behind the value, not a bright one on it.
    return (p.thresholds(thresholds(NEUTRAL, ())).color_mode(BigValueColorMode.VALUE)
            .color_scheme(FieldColor().mode(FieldColorModeId.FIXED).fixed_color(NEUTRAL)))


def _timeseries(view: View, title: str, compare: bool, where: str):
    legend_ = (VizLegendOptions().display_mode(LegendDisplayMode.TABLE).show_legend(True)
               .placement(LegendPlacement(where)).calcs(list(legend.CALCS))
               .sort_by(legend.SORT_BY).sort_desc(True))
    p = timeseries.Panel().title(title).fill_opacity(view.fill).line_width(1).legend(legend_)
    if view.stacked and not compare:
        p = p.stacking(StackingConfig().mode(StackingMode.NORMAL)).fill_opacity(40)
    if view.steps:  # dashed, in colours no series takes (colors.py)
        p = (p.thresholds(thresholds(view.base, view.steps))
             .thresholds_style(GraphThresholdsStyleConfig().mode(GraphThresholdsStyleMode.DASHED)))
    if view.log_scale:
        p = p.scale_distribution(ScaleDistributionConfig().type(ScaleDistribution.LOG).log(10))
    if view.soft_min is not None:
        p = p.axis_soft_min(view.soft_min)
    if view.soft_max is not None:
        p = p.axis_soft_max(view.soft_max)
    if view.axis_label:
        p = p.axis_label(view.axis_label)
    return p


def _state_timeline(view: View, title: str):
    """One row per series, each span coloured and named by the value mappings."""
    legend_ = (VizLegendOptions().show_legend(False).display_mode(LegendDisplayMode.LIST)
               .placement(LegendPlacement.BOTTOM))
    return (statetimeline.Panel().title(title).show_value(VisibilityMode.AUTO).merge_values(True).row_height(0.85)
            .fill_opacity(85).line_width(0).legend(legend_))


def _mappings(mappings: tuple[Mapping, ...]) -> list:
    return [ValueMap(options={str(m.value): ValueMappingResult(text=m.text, color=m.color, index=number)
                              for number, m in enumerate(mappings)})]


def _mappings_json(mappings: tuple[Mapping, ...]) -> list[dict]:
    return [{"type": "value", "options": {str(m.value): {"text": m.text, "color": m.color, "index": number}
                                          for number, m in enumerate(mappings)}}]


def _fixed(colour: str) -> DynamicConfigValue:
    return DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": colour})


def _pattern(name: str) -> str:
    """A display name as a regular expression both Python and JavaScript read alike, now or earlier; the labels
    and variables of a legend ({{device}}, $offset) match whatever Grafana writes in their place."""
    parts = re.split(r"(\{\{\s*\w+\s*\}\}|\$\w+)", name)
    return "".join(".*" if number % 2 else re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", part)
                   for number, part in enumerate(parts)) + EARLIER_SUFFIX


def _colours(query: Query) -> list[tuple[str | None, str]]:
    """(display-name pattern, colour) of a query's series; pattern None for all of them (colors.py)."""
    if query.color:
        return [(None, query.color)]
    if query.legend in colors.SERIES:
        return [(None, colors.SERIES[query.legend])]
    labels = colors.LABEL.findall(query.legend)
    if query.values:
        return [(_pattern(colors.LABEL.sub(value, query.legend)), colors.SERIES[colors.LABEL.sub(value, query.legend)])
                for value in query.values]
    if labels:
        return []  # an open set (latch names, devices): Grafana's palette, on a panel without limits
    raise KeyError(f"no colour for the series '{query.legend}': add it to dashboards/colors.py")


# A series hidden from the plot that only says something in the legend (and a value mapping says what).
HIDDEN = DynamicConfigValue(id_val="custom.hideFrom", value={"legend": False, "tooltip": True, "viz": True})


def _note(text: str) -> list[DynamicConfigValue]:
    return [HIDDEN, _fixed(colors.NOT_MEASURED),
            DynamicConfigValue(id_val="mappings", value=[{"type": "value", "options": {"1": {"text": text}}}])]


def _series_style(p, query: Query, refs: list[str]):
    """A timeseries query's colours (colors.py), its limit line or its axis of its own."""
    properties = []
    if query.limit:  # a limit: a dotted line, in a colour no series takes
        properties += [DynamicConfigValue(id_val="custom.fillOpacity", value=0),
                       DynamicConfigValue(id_val="custom.lineWidth", value=2),
                       DynamicConfigValue(id_val="custom.lineStyle", value=LIMIT_LINE)]
    if query.right_axis:  # by name: by query, the frame's time field would take the label, and the x axis
        p = p.override_by_regexp(_pattern(query.legend), [
            DynamicConfigValue(id_val="custom.axisPlacement", value="right"),
            DynamicConfigValue(id_val="custom.axisLabel", value=query.right_axis)])
    by_name = []
    for pattern, colour in _colours(query):
        if pattern is None:
            properties.append(_fixed(colour))
        else:
            by_name.append((pattern, colour))
    for r in refs if properties else ():
        p = p.override_by_query(r, properties)
    for pattern, colour in by_name:
        p = p.override_by_regexp(pattern, [_fixed(colour)])
    return p


def _not_measured(p, view: View, query: Query, ref: str):
    """The exporter's reason for not having a query's metrics, in the panel: a stat's value, a legend's row."""
    why = not_measured_query(query, stat=view.kind == "stat")
    p = p.with_target(prometheus.Dataquery().expr(why.render()).legend_format(why.legend).ref_id(ref))
    if view.kind == "stat":
        return p.override_by_query(ref, [DynamicConfigValue(id_val="mappings", value=[{"type": "value", "options": {
            "1": {"text": NOT_PROVIDED, "color": colors.NOT_MEASURED}}}])])
    return p.override_by_query(ref, _note("absent"))


def _nothing_earlier(p, view: View, ref: str):
    """Compare: where nothing was recorded $offset earlier, a grey band behind the lines, or a timeline's row."""
    p = p.with_target(prometheus.Dataquery().expr(Query(NOTHING_EARLIER, "").render(OFFSET))
                      .legend_format(NOTHING_EARLIER_LEGEND).ref_id(ref))
    if view.kind != "timeseries":
        return p.override_by_query(ref, [DynamicConfigValue(id_val="mappings", value=[{"type": "value", "options": {
            "1": {"text": "nothing recorded in the earlier window", "color": colors.NOT_MEASURED}}}])])
    # On an axis of its own from 0 to 1, by name (by query, the time field would take the axis too): the plot's
    # whole height.
    p = p.override_by_regexp(_pattern(NOTHING_EARLIER_LEGEND), [
        DynamicConfigValue(id_val="custom.axisPlacement", value="hidden"),
        DynamicConfigValue(id_val="min", value=0), DynamicConfigValue(id_val="max", value=1)])
    return p.override_by_query(ref, [
        DynamicConfigValue(id_val="custom.fillOpacity", value=15),
        DynamicConfigValue(id_val="custom.lineWidth", value=0),
        DynamicConfigValue(id_val="custom.hideFrom", value={"legend": False, "tooltip": True, "viz": False}),
        _fixed(colors.NOT_MEASURED),
        DynamicConfigValue(id_val="mappings", value=[{"type": "value", "options": {"1": {"text": "no data"}}}])])


def panel(view: View, width: int = 12, height: int = 8, compare: bool = False, title_suffix: str = ""):
    """The panel for a view; on Compare each query is drawn twice: now, and shifted back by $offset (dashed).

    A timeseries panel grows to the height at which its legend shows every row (legend.py)."""
    title = view.title + title_suffix
    if view.kind == "stat":
        p = _stat(view, title)
    elif view.kind == "state-timeline":
        p = _state_timeline(view, title)
    else:
        where, height = legend.layout(view.legend_rows(compare), height, width)
        p = _timeseries(view, title, compare, where)
    p = p.description(view.full_description).datasource(DS).unit(view.unit).height(height).span(width)
    if view.kind == "stat":
        p = p.mappings(_mappings(view.mappings) + [NO_VALUE_GREY] if view.mappings else [NO_VALUE_GREY])
    elif view.mappings:
        p = p.mappings(_mappings(view.mappings))
    if view.no_value:
        p = p.no_value(view.no_value)
    if view.min is not None:
        p = p.min(view.min)
    if view.max is not None:
        p = p.max(view.max)
    if view.decimals is not None:
        p = p.decimals(view.decimals)
    ref = iter("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    for query in view.queries:
        if view.value_links:
            # Grafana 9.4 has no matcher by value ("byValue" came in 10.x): one instant query per value the stat
            # can show, of which only the one that holds answers, each with its links by query.
            for value, links in view.value_links:
                r = next(ref)
                p = p.with_target(prometheus.Dataquery().expr(Query(query.expr.equals(value), "").render())
                                  .legend_format(query.legend).ref_id(r).instant())
                p = p.override_by_query(r, [DynamicConfigValue(id_val="links", value=[link.json() for link in links])])
            continue
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
        if view.kind == "timeseries":
            p = _series_style(p, query, refs)
    for query in view.not_measured:
        p = _not_measured(p, view, query, next(ref))
    if compare:
        p = _nothing_earlier(p, view, next(ref))
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
