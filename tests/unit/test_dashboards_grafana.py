"""The dashboards as a real Grafana draws them (issue 30, looked at in Grafana 9.4 on MariaDB 10.11 and MySQL 9),
point by point, held against the generated JSON and the rules of Grafana's own code that each test names.
None of them reads dashboards/preview.py: the preview imitates Grafana, and a test that passed because the
imitation draws something would prove nothing about Grafana."""

from __future__ import annotations

import colorsys
import glob
import json
import os
import re
import subprocess

import pytest
import yaml

from dashboards import checkpoint, colors, compare, contention, generate, legend, overview, redo
from dashboards.common import (ABSENT, EARLIER_NAMES, EARLIER_SUFFIX, LIMIT_LINE, NOTHING_EARLIER_LEGEND, NOT_PROVIDED,
                               View)
from dashboards.grafana_version import FIELD_MATCHERS
from signals import bottleneck as b
from signals import innodb as s
from support.golden import TESTS
from test_dashboards import dimension

ROOT = os.path.dirname(TESTS)
GRAFANA = os.path.join(ROOT, "dashboards", "grafana")
SUFFIX = " (now and $offset earlier)"  # Compare's panel titles


def load(uid: str) -> dict:
    with open(os.path.join(GRAFANA, f"{uid}.json"), encoding="utf-8") as f:
        return json.load(f)


def panels(kind: str | None = None):
    for module in generate.MODULES:
        d = load(module.UID)
        for p in d["panels"]:
            if kind is None or p["type"] == kind:
                yield d, p


def drawn():
    """(dashboard uid, view, panel JSON, on Compare) for every panel, the view it was built from beside it."""
    for module in generate.MODULES:
        on_compare = module is compare
        for p in load(module.UID)["panels"]:
            title = p["title"].removesuffix(SUFFIX) if on_compare else p["title"]
            view = next(v for v in module.VIEWS if v.title == title)
            yield module.UID, view, p, on_compare


def overrides(p: dict, matcher: str | None = None):
    for o in p["fieldConfig"]["overrides"]:
        if matcher is None or o["matcher"]["id"] == matcher:
            yield o["matcher"]["options"], {prop["id"]: prop["value"] for prop in o["properties"]}


def by_ref(p: dict, ref: str) -> dict:
    """The properties the overrides of query ``ref`` set, later ones winning."""
    found = {}
    for options, props in overrides(p, "byFrameRefID"):
        if options == ref:
            found.update(props)
    return found


# Grafana's named colours as its dark theme draws them (createVisualizationColors.ts), for hues.
HEX = {**colors.NAMED, "blue": "#5794F2", "purple": "#B877D9", "text": colors.REFERENCE}


def hue(colour: str) -> float | None:
    """The hue in degrees; None for a grey."""
    code = HEX.get(colour, colour)
    red, green, blue = (int(code[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, _, saturation = colorsys.rgb_to_hls(red, green, blue)
    return None if saturation < 0.2 else h * 360


def apart(a: str, b: str) -> float:
    """How far apart two colours are in hue (360 for a grey and a colour: no hue to confuse)."""
    ha, hb = hue(a), hue(b)
    if ha is None or hb is None:
        return 0.0 if ha is hb else 360.0
    return min(abs(ha - hb), 360 - abs(ha - hb))


# --- 1. a matcher Grafana 9.4 knows (the oldest version: test_grafana_version.py) -----------------------------

def test_every_override_uses_a_field_matcher_grafana_9_4_knows():
    matchers = {o["matcher"]["id"] for _, p in panels() for o in p["fieldConfig"]["overrides"]}
    assert matchers and matchers <= FIELD_MATCHERS, matchers - FIELD_MATCHERS


def test_what_limits_the_server_now_links_each_class_through_its_own_query():
    """9.4 has no matcher by value: one instant query per class, only the one that holds answers, and its
    links by query (byFrameRefID)."""
    stat = next(p for _, p in panels("stat") if p["title"] == overview.LIMITS_NOW.title)
    classes = b.CLASSES + (b.HEALTHY_CLASS, b.UNKNOWN_CLASS)
    assert len(stat["targets"]) == len(classes) and stat["options"]["graphMode"] == "none"
    for target, c in zip(stat["targets"], classes):
        assert target["instant"] is True
        assert re.fullmatch(rf"{re.escape(b.WINNER)}\{{instance=\"\$instance\"\}} == {c.code}",
                            target["expr"]), target["expr"]
        links = by_ref(stat, target["refId"])["links"]
        assert [link["title"] for link in links][-1] == f"{c.name}: runbook"
        assert all(link["title"].startswith(c.name) for link in links)
    texts = stat["fieldConfig"]["defaults"]["mappings"][0]["options"]
    assert {texts[str(c.code)]["text"] for c in classes} == {c.name for c in classes}


# --- 2. not measured is never drawn in a healthy colour ---------------------------------------------------

def null_colour(p: dict) -> str:
    """The colour Grafana gives a stat without a value: a special mapping's that matches null, else the colour
    scheme's for -Infinity (Grafana 9.4, packages/grafana-data/src/field/displayProcessor.ts)."""
    defaults = p["fieldConfig"]["defaults"]
    for mapping in defaults.get("mappings", []):
        if mapping["type"] == "special" and mapping["options"]["match"] in ("null", "null+nan"):
            if mapping["options"]["result"].get("color"):
                return mapping["options"]["result"]["color"]
    if defaults.get("color", {}).get("mode") == "fixed":
        return defaults["color"]["fixedColor"]
    return defaults["thresholds"]["steps"][0]["color"]


def test_a_stat_without_a_value_is_grey_never_a_healthy_colour():
    stats = [p for _, p in panels("stat")]
    assert len(stats) >= 12
    for p in stats:
        assert null_colour(p) == colors.NOT_MEASURED, p["title"]
        assert hue(colors.NOT_MEASURED) is None
        # and the value shown is the last one that is not null: "last" shows no value on a missing last point
        assert p["options"]["reduceOptions"]["calcs"] == ["lastNotNull"], p["title"]


def test_a_stat_the_server_cannot_fill_says_so_in_grey_from_the_exporters_own_statement():
    semaphore = next(p for _, p in panels("stat") if p["title"] == overview.SEMAPHORE.title)
    value, why = semaphore["targets"]
    assert why["expr"] == ('max by (reason) (innodb_exporter_metric_absent{job="innodb",instance="$instance",'
                           'metric=~"innodb_semaphore_longest_wait_seconds",reason="not_provided"})')
    shown = by_ref(semaphore, why["refId"])["mappings"][0]["options"]["1"]
    assert shown == {"text": NOT_PROVIDED, "color": colors.NOT_MEASURED}
    assert semaphore["fieldConfig"]["defaults"]["thresholds"]["steps"][0]["color"] == "green"  # 0 s: healthy


# --- 3. limits and series never share a colour; a kind keeps its colour ----------------------------------

def series_colours(p: dict) -> tuple[dict[str, str], bool]:
    """(legend or name pattern -> fixed colour, whether some series keeps Grafana's palette) of a timeseries."""
    fixed, palette = {}, False
    legends = {t["refId"]: t["legendFormat"] for t in p["targets"]}
    for ref, legend_ in legends.items():
        props = by_ref(p, ref)
        if props.get("custom.hideFrom", {}).get("viz") or legend_ == NOTHING_EARLIER_LEGEND:
            continue  # a legend row that says something, drawn nowhere; Compare's band, a fill behind the lines
        if "color" in props:
            fixed[legend_] = props["color"]["fixedColor"]
        else:
            named = [(pattern, props["color"]["fixedColor"]) for pattern, props in overrides(p, "byRegexp")
                     if "color" in props and re.fullmatch(pattern, colors.LABEL.sub("x", legend_)) is None
                     and pattern != EARLIER_NAMES]
            fixed.update(named)
            palette |= not named
    return fixed, palette


def limit_colours(p: dict) -> list[str]:
    steps = [step["color"] for step in p["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])[1:]]
    lines = [props["color"]["fixedColor"] for _, props in overrides(p, "byFrameRefID")
             if props.get("custom.lineStyle") == LIMIT_LINE]
    return steps + lines


def test_no_series_takes_a_colour_near_a_limit_or_threshold_on_its_panel():
    checked = 0
    for d, p in panels("timeseries"):
        limits = limit_colours(p)
        fixed, palette = series_colours(p)
        if not limits:
            continue
        assert not palette, f"{d['uid']} / {p['title']}: a series in Grafana's palette beside limits {limits}"
        for name, colour in fixed.items():
            if colour in limits:
                continue  # the limit line itself
            for limit in limits:
                checked += 1
                assert apart(colour, limit) >= 40, f"{d['uid']} / {p['title']}: {name} {colour} near {limit}"
    assert checked >= 60


def test_the_issues_collisions_are_gone():
    flush = next(p for _, p in panels("timeseries") if p["title"] == checkpoint.FLUSH_RATE.title)
    target = next(t for t in flush["targets"] if t["legendFormat"].startswith("target:"))
    target_colour = by_ref(flush, target["refId"])["color"]["fixedColor"]
    for kind in ("sync", "single_page"):
        pattern, props = next((o, pr) for o, pr in overrides(flush, "byRegexp") if re.fullmatch(o, kind))
        assert apart(props["color"]["fixedColor"], target_colour) >= 40
        assert re.fullmatch(pattern, kind + " (1d earlier)")
    hit = next(p for _, p in panels("timeseries") if p["title"] == "Buffer pool hit ratio")
    assert all(apart(c, "green") >= 40 for c in series_colours(hit)[0].values())
    latency = next(p for _, p in panels("timeseries") if p["title"] == redo.FSYNC_LATENCY.title)
    assert all(apart(c, "orange") >= 40 for c in series_colours(latency)[0].values())


def test_limits_are_dotted_thresholds_dashed_and_series_never_either():
    limits = 0
    for d, p in panels("timeseries"):
        if p["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])[1:]:
            assert p["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] == "dashed", p["title"]
        for t in p["targets"]:
            props = by_ref(p, t["refId"])
            if props.get("custom.lineStyle") == LIMIT_LINE:
                limits += 1
                assert props["custom.lineWidth"] == 2 and props["custom.fillOpacity"] == 0
                assert props["color"]["fixedColor"] in colors.LIMITS, t["legendFormat"]
            elif "color" in props and not props.get("custom.hideFrom", {}).get("viz") \
                    and t["legendFormat"] != NOTHING_EARLIER_LEGEND:
                assert props["color"]["fixedColor"] not in colors.LIMITS, f"{p['title']} / {t['legendFormat']}"
    assert limits >= 10
    assert not set(colors.SERIES.values()) & colors.LIMITS
    assert all(apart(series, limit) >= 40 for series in colors.SERIES.values() for limit in colors.LIMITS)


def test_each_kind_of_series_keeps_one_colour_on_every_dashboard():
    seen: dict[str, set[str]] = {}
    for d, p in panels("timeseries"):
        for t in p["targets"]:
            colour = by_ref(p, t["refId"]).get("color", {}).get("fixedColor")
            if colour:
                seen.setdefault(t["legendFormat"].removesuffix(" ($offset earlier)"), set()).add(colour)
        for pattern, props in overrides(p, "byRegexp"):
            if "color" in props:
                name = re.sub(r"\\(.)", r"\1", pattern.removesuffix(EARLIER_SUFFIX))
                seen.setdefault(name, set()).add(props["color"]["fixedColor"])
    assert len(seen) >= 60
    assert {name: c for name, c in seen.items() if len(c) > 1} == {}
    for kind in ("checkpoint age", "sync", "adaptive", "lru", "host {{device}}: flush", "log buffer waits",
                 "free page requests"):
        assert kind in seen, kind


def test_one_query_has_one_name_on_every_dashboard():
    """The kind a colour goes to is named alike wherever it is drawn (it was "free page requests" on one panel
    and "free page demand" on the other)."""
    names: dict[str, set[str]] = {}
    for d, p in panels("timeseries"):
        for t in p["targets"]:
            if "offset $offset" not in t["expr"]:
                names.setdefault(t["expr"], set()).add(t["legendFormat"])
    assert {expr: legends for expr, legends in names.items() if len(legends) > 1} == {}


def test_every_label_value_a_legend_is_coloured_by_is_one_the_exporter_declares():
    assert set(colors.label_values("innodb_flush_pages_total")) <= set(colors.FLUSH_KINDS)
    assert set(colors.label_values("innodb_flush_avg_seconds")) <= set(colors.FLUSH_KINDS)
    from innodb_exporter.parsers import innodb_status
    assert set(colors.SPIN_MODES) == set(innodb_status._SPIN_MODES.values())


# --- 4. scales: the server's line is not flattened by the host's; an empty server line says why -----------

def by_name(p: dict, name: str) -> dict:
    """The properties the name overrides (byRegexp, anchored as Grafana anchors it) set for a display name."""
    found = {}
    for pattern, props in overrides(p, "byRegexp"):
        if re.fullmatch(pattern, name):
            found.update(props)
    return found


def test_the_servers_fsyncs_and_the_hosts_flushes_have_an_axis_each():
    """By name, not by query: a query's override also reaches its frame's time field, whose axis label Grafana
    then writes under the x axis."""
    p = next(p for _, p in panels("timeseries") if p["title"] == redo.FSYNCS.title)
    host = by_name(p, "host vda: flushes/s")
    assert host["custom.axisPlacement"] == "right" and host["custom.axisLabel"].startswith("host")
    assert "custom.axisPlacement" not in by_name(p, "server: REDO fsyncs/s")
    assert not any("custom.axisPlacement" in props for _, props in overrides(p, "byFrameRefID"))
    assert p["fieldConfig"]["defaults"]["custom"]["axisLabel"].startswith("server")


def test_a_series_the_server_does_not_give_says_why_in_the_legend():
    """Where MariaDB leaves the server's lines empty, the exporter's statement of why (the metric and the reason)
    is a row of the legend, drawn nowhere else."""
    declared = 0
    for uid, view, p, _ in drawn():
        if p["type"] != "timeseries":
            continue
        for query in view.not_measured:
            declared += 1
            why = next(t for t in p["targets"] if t["legendFormat"].startswith(
                colors.LABEL.sub(lambda m: m.group(1), query.legend) + ": no value ("))
            assert why["expr"].startswith(f"max by (reason) ({ABSENT}{{") and "{{reason}}" in why["legendFormat"]
            metrics = re.search(r'metric=~"([^"]+)"', why["expr"])[1].split("|")
            assert metrics and all(m in query.render() for m in metrics)
            props = by_ref(p, why["refId"])
            assert props["custom.hideFrom"] == {"legend": False, "tooltip": True, "viz": True}
    assert declared >= 8
    latency = next(p for _, p in panels("timeseries") if p["title"] == redo.FSYNC_LATENCY.title)
    assert sum(": no value (" in t["legendFormat"] for t in latency["targets"]) == 2


# --- 5. legends: tables with values, sorted, every row visible -------------------------------------------

def test_every_legend_is_a_sorted_table_of_last_and_max():
    for _, p in panels("timeseries"):
        shown = p["options"]["legend"]
        assert shown["displayMode"] == "table" and shown["showLegend"], p["title"]
        assert shown["calcs"] == ["lastNotNull", "max"] and shown["sortBy"] == "Max" and shown["sortDesc"], p["title"]


def test_every_legend_fits_its_rows():
    checked = 0
    for uid, view, p, on_compare in drawn():
        if p["type"] != "timeseries":
            continue
        rows = view.legend_rows(on_compare)
        assert len(p["targets"]) <= rows, f"{uid} / {p['title']}: more queries than rows counted"
        where = p["options"]["legend"]["placement"]
        inside = legend.inside_px(p["gridPos"]["h"])
        room = inside * legend.BOTTOM_SHARE if where == "bottom" else inside
        assert legend.table_px(rows) <= room, f"{uid} / {p['title']}: {rows} rows in {room:.0f} px ({where})"
        checked += 1
    assert checked >= 45


def test_the_legends_the_issue_saw_cut_count_every_row():
    assert contention.LATCH_TIME.legend_rows() == contention.LATCH_COUNT.legend_rows() == contention.TOP
    assert contention.LATCH_TIME.legend_rows(compare=True) == 2 * contention.TOP + 1
    flush = checkpoint.FLUSH_RATE.legend_rows()
    assert flush == len(colors.label_values("innodb_flush_pages_total")) + 2


# --- 6. the text where the data would be matches the server or names none -------------------------------

FLAVOURS = re.compile(r"MariaDB|MySQL|Percona", re.IGNORECASE)


def test_no_value_texts_name_no_flavour():
    texts = 0
    for d, p in panels():
        no_value = p["fieldConfig"]["defaults"].get("noValue", "")
        texts += bool(no_value)
        assert not FLAVOURS.search(no_value), f"{d['uid']} / {p['title']}: {no_value}"
        for _, props in overrides(p):
            for mapping in props.get("mappings", []):
                for result in mapping.get("options", {}).values():
                    assert not FLAVOURS.search(result.get("text", "")), p["title"]
    assert texts >= 6


def test_a_panel_a_flavour_cannot_fill_says_why_where_its_data_would_be():
    """Either the exporter's own statement (a value or a legend row), which appears only on that server, or a
    no-value text that holds on every server."""
    declared = 0
    for uid, view, p, _ in drawn():
        if view.no_data_on_mariadb:
            declared += 1
            said = any(ABSENT in t["expr"] for t in p["targets"]) or p["fieldConfig"]["defaults"].get("noValue")
            assert said, f"{uid} / {p['title']}"
    assert declared >= 6


# --- 7. Compare says where the earlier window has no data ------------------------------------------------

def test_every_compare_panel_marks_where_nothing_was_recorded_earlier():
    for p in load(compare.UID)["panels"]:
        marker = next(t for t in p["targets"] if t["legendFormat"] == NOTHING_EARLIER_LEGEND)
        assert marker["expr"] == 'absent(innodb_up{job="innodb",instance="$instance"} offset $offset)'
        props = by_ref(p, marker["refId"])
        if p["type"] == "timeseries":  # a grey band on an axis of its own, the height of the plot
            axis = by_name(p, "nothing recorded 3d4h earlier")
            assert axis["custom.axisPlacement"] == "hidden" and (axis["min"], axis["max"]) == (0, 1)
            assert "custom.axisPlacement" not in by_name(p, "Queries per second (3d4h earlier)")
            assert props["custom.fillOpacity"] > 0 and props["custom.lineWidth"] == 0
            assert props["color"]["fixedColor"] == colors.NOT_MEASURED
        else:
            assert props["mappings"][0]["options"]["1"]["color"] == colors.NOT_MEASURED


def test_the_earlier_marker_holds_where_the_earlier_window_has_no_data(promtool, tmp_path):
    """On a server watched for 30 minutes, a day back has nothing: the marker holds; ten minutes back, it does not."""
    p = next(p for p in load(compare.UID)["panels"] if p["type"] == "timeseries")
    expr = next(t["expr"] for t in p["targets"] if t["legendFormat"] == NOTHING_EARLIER_LEGEND)

    def at(offset: str) -> str:
        return expr.replace("$instance", "db1:3306").replace("$offset", offset)

    case = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": [{"series": 'innodb_up{job="innodb",instance="db1:3306"}', "values": "1x30"}],
        "promql_expr_test": [
            {"expr": at("1d"), "eval_time": "30m",
             "exp_samples": [{"labels": '{job="innodb",instance="db1:3306"}', "value": 1}]},
            {"expr": at("10m"), "eval_time": "30m", "exp_samples": []}]}]}
    (tmp_path / "marker_test.yml").write_text(yaml.safe_dump(case))
    out = subprocess.run([promtool, "test", "rules", "marker_test.yml"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


# --- 8. axes: counts in whole numbers, seconds with a soft maximum ---------------------------------------

def test_counts_get_no_decimals():
    """Whole things (transactions, threads, pages) get whole ticks; the load average, a mean, is left its decimals."""
    counted = 0
    for uid, view, p, _ in drawn():
        if "node_load1" in " ".join(t["expr"] for t in p["targets"]):
            continue
        if p["type"] == "timeseries" and all((q.dimension or dimension(q.expr)) == "count" for q in view.queries):
            counted += 1
            assert p["fieldConfig"]["defaults"]["decimals"] == 0, f"{uid} / {p['title']}"
    assert counted >= 8


def test_seconds_get_a_soft_maximum():
    """Not on a logarithmic axis, where Grafana 9.4 takes no soft limit (UPlotScaleBuilder: rangeLog)."""
    timed = 0
    for d, p in panels("timeseries"):
        log = p["fieldConfig"]["defaults"]["custom"].get("scaleDistribution", {}).get("type") == "log"
        if p["fieldConfig"]["defaults"]["unit"] == "s" and not log:
            timed += 1
            assert p["fieldConfig"]["defaults"]["custom"].get("axisSoftMax", 0) > 0, f"{d['uid']} / {p['title']}"
    assert timed >= 5


# --- 9. the Overview --------------------------------------------------------------------------------------

def test_a_sparkline_is_never_drawn_bright_under_a_value():
    """Grafana 9.4 draws the sparkline of a stat coloured as its background in a brightened colour across the value
    (BigValueLayout's WideWithChartLayout): a stat with a sparkline colours its value, not its background."""
    for _, p in panels("stat"):
        if p["options"]["graphMode"] == "area":
            assert p["options"]["colorMode"] == "value", p["title"]


def test_one_signal_has_one_unit_on_every_dashboard():
    units: dict[str, set[str]] = {}
    for uid, view, p, _ in drawn():
        units.setdefault(view.title, set()).add(p["fieldConfig"]["defaults"]["unit"])
        for query in view.queries:
            if hasattr(query.expr, "unit") and len(view.queries) == 1:
                units.setdefault(query.expr.name, set()).add(p["fieldConfig"]["defaults"]["unit"])
    assert units["Dirty pages"] == {"percentunit"} == units[s.DIRTY_PAGES_RATIO.name]
    assert {title: u for title, u in units.items() if len(u) > 1} == {}


# --- the preview is no witness ------------------------------------------------------------------------

def test_the_preview_says_what_it_cannot_show():
    from dashboards import preview
    assert "cannot show" in preview.__doc__
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        assert "cannot show" in f.read()


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(GRAFANA, "*.json"))), ids=os.path.basename)
def test_views_and_json_agree_on_every_panel(path):
    uid = os.path.basename(path)[:-5]
    assert sum(1 for u, _, _, _ in drawn() if u == uid) == len(load(uid)["panels"])
    assert all(isinstance(v, View) for _, v, _, _ in drawn())
