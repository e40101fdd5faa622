"""The dashboards: current with their code, valid for Grafana 11 and 12 file provisioning, and free of
what a real Grafana showed wrong (issue 11): colours, offsets, stacking, units, empty panels, layout."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess

import pytest
import yaml

from dashboards import compare, contention, generate, host, redo
from dashboards.common import ABSENT, EARLIER_NAMES, NOTHING_EARLIER_LEGEND, View
from signals import Signal
from signals import innodb as s
from signals.promql import Aggregation, Binary, Call, Num, Range, Record, Series, Str
from support.golden import TESTS

ROOT = os.path.dirname(TESTS)
GRAFANA = os.path.join(ROOT, "dashboards", "grafana")
FILES = sorted(glob.glob(os.path.join(GRAFANA, "*.json")))
MODULES = generate.MODULES
# A selector in a query: a metric name and its matchers, then a range, an @ modifier, an offset.
SELECTOR = re.compile(r"(?P<sel>[a-zA-Z_:][a-zA-Z0-9_:]*\{[^}]*\})(?P<range>\[[^\]]+\])?(?P<at> @ end\(\))?"
                      r"(?P<offset> offset \$offset)?")


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def dashboard(uid):
    return load(os.path.join(GRAFANA, f"{uid}.json"))


def panels():
    for path in FILES:
        d = load(path)
        for p in d["panels"]:
            yield d, p


def test_index_lists_the_data_sources_and_the_dashboards_in_reading_order():
    index = load(os.path.join(ROOT, "dashboards", "index.json"))
    assert set(index) == {"datasources", "dashboards"}
    with open(os.path.join(ROOT, "provisioning", "grafana", "datasources", "prometheus.yml")) as f:
        sources = {s["name"]: s["uid"] for s in yaml.safe_load(f)["datasources"]}
    assert index["datasources"] == {"prometheus": sources["Prometheus"], "replay": sources["Replay"]}
    assert [d["uid"] for d in index["dashboards"]] == [m.UID for m in MODULES]
    assert index["dashboards"][0]["uid"] == "innodb-overview" and index["dashboards"][-1]["uid"] == "innodb-compare"
    for entry in index["dashboards"]:
        assert set(entry) == {"uid", "title"} and dashboard(entry["uid"])["title"] == entry["title"]


def test_uids_are_stable_unique_and_named_after_the_file():
    uids = [load(f)["uid"] for f in FILES]
    assert len(set(uids)) == len(uids) == len(MODULES)
    for path, uid in zip(FILES, uids):
        assert re.fullmatch(r"[a-z0-9-]{1,40}", uid) and os.path.basename(path) == f"{uid}.json"


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_dashboard_is_valid_for_file_provisioning(path):
    d = load(path)
    assert d["title"].startswith("InnoDB / ") and isinstance(d["schemaVersion"], int)
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["instance"]["query"] == "label_values(innodb_up, instance)"
    assert any(a["name"] == "Alerts" and "ALERTS{" in a["expr"] for a in d["annotations"]["list"])
    assert any(link["tags"] == ["innodb"] and link["includeVars"] for link in d["links"])
    ids = [p["id"] for p in d["panels"]]
    assert len(set(ids)) == len(ids) and 0 not in ids
    for p in d["panels"]:
        assert p["type"] in ("timeseries", "stat", "state-timeline")
        assert set(p["gridPos"]) == {"h", "w", "x", "y"} and 0 < p["gridPos"]["w"] <= 24
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"], f"{p['title']} has no query"
        refs = [t["refId"] for t in p["targets"]]
        assert len(set(refs)) == len(refs) and all(refs)
        for t in p["targets"]:
            assert t["expr"].strip() and t["legendFormat"].strip(), p["title"]
        assert p["fieldConfig"]["defaults"].get("unit"), f"{p['title']} has no unit"
        assert "Healthy" in p["description"], f"{p['title']}: the description does not say what healthy looks like"


def test_every_selector_selects_the_dashboards_instance_and_its_job():
    for d, p in panels():
        for t in p["targets"]:
            selectors = [m.group("sel") for m in SELECTOR.finditer(t["expr"])]
            assert selectors, t["expr"]
            for selector in selectors:
                assert 'instance="$instance"' in selector, f"{d['uid']} / {p['title']}: {selector}"
                # ALERTS and the bottleneck's rules (aggregated by instance) have no job label.
                assert selector.startswith(("ALERTS{", "instance:innodb_bottleneck:", "instance_class:innodb_bottleneck:")) \
                    or re.search(r'\bjob="(innodb|mysqld|node)"', selector), selector


def test_panel_descriptions_name_their_alert_where_one_watches():
    alerts = set()
    for path in glob.glob(os.path.join(ROOT, "alerts", "rules", "*.yml")):
        with open(path, encoding="utf-8") as f:
            alerts |= {r["alert"] for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "alert" in r}
    named = {a for _, p in panels() for a in alerts if a in p["description"]}
    assert alerts - named - {"InnoDBCounterDisabled"} == set(), "alerts no panel points to"


# --- issue 11, item by item ---------------------------------------------------------------------

def test_every_stat_has_explicit_thresholds_or_a_neutral_colour():  # 1
    stats = [(d, p) for d, p in panels() if p["type"] == "stat"]
    assert len(stats) >= 10
    for d, p in stats:
        defaults = p["fieldConfig"]["defaults"]
        steps = defaults.get("thresholds", {}).get("steps", [])
        assert steps and steps[0]["value"] is None, f"{p['title']}: Grafana's default thresholds (red at 80) apply"
        values = [s["value"] for s in steps[1:]]
        assert None not in values and values == sorted(values), f"{p['title']}: steps {steps}"
        if len(steps) == 1:  # no alert behind it: one fixed colour, neither good nor bad
            assert defaults.get("color", {}).get("mode") == "fixed", f"{p['title']} has no deliberate colour"
            assert defaults["color"]["fixedColor"] not in ("red", "orange", "green"), p["title"]


def _shifted(expr: str) -> str:
    """``expr`` with ``offset $offset`` after every selector (and its range and @ modifier)."""
    return SELECTOR.sub(lambda m: m.group(0) + " offset $offset", expr)


def _compare_pairs():
    """(panel, [(now, earlier)]) of Compare; not the earlier window's marker, nor the exporter's reasons for a
    metric's absence (one per panel, of now)."""
    d = dashboard(compare.UID)
    for p in d["panels"]:
        targets = [t for t in p["targets"] if t["legendFormat"] != NOTHING_EARLIER_LEGEND and ABSENT not in t["expr"]]
        assert len(targets) % 2 == 0, p["title"]
        yield p, list(zip(targets[0::2], targets[1::2]))


def test_every_earlier_query_is_its_now_query_shifted_by_exactly_the_offset():  # 2
    pairs = [pair for _, pairs in _compare_pairs() for pair in pairs]
    assert len(pairs) >= len(compare.VIEWS)
    for now, earlier in pairs:
        assert "offset" not in now["expr"], now["expr"]
        assert earlier["expr"] == _shifted(now["expr"]), f"{earlier['legendFormat']}: not {now['expr']} shifted"
        assert all(m.group("offset") for m in SELECTOR.finditer(earlier["expr"]))
        assert earlier["legendFormat"] == now["legendFormat"] + " ($offset earlier)"


def test_the_shift_check_sees_a_forgotten_offset():
    now = 'rate(mysql_global_status_queries{job="mysqld",instance="$instance"}[$__rate_interval])'
    assert _shifted(now) != now  # the QPS bug: an "earlier" query equal to "now" fails the test above
    assert _shifted(now) == now.replace("])", "] offset $offset)")


def test_compare_never_stacks_and_draws_every_earlier_series_dashed():  # 3
    for p, pairs in _compare_pairs():
        if p["type"] == "state-timeline":  # rows of states, one per window, and the marker: no lines to dash
            assert [t["legendFormat"] for t in p["targets"]] == ["Limited by", "Limited by ($offset earlier)",
                                                                 NOTHING_EARLIER_LEGEND]
            continue
        custom = p["fieldConfig"]["defaults"].get("custom", {})
        assert custom.get("stacking", {}).get("mode", "none") == "none", f"{p['title']} stacks the two windows"
        dashed = [o for o in p["fieldConfig"]["overrides"] if o["matcher"]["id"] == "byRegexp"
                  and {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}} in o["properties"]]
        assert len(dashed) == 1 and dashed[0]["matcher"]["options"] == EARLIER_NAMES, p["title"]
        for now, earlier in pairs:  # on the display names, variables substituted; anchored or not
            for offset in compare.OFFSETS:
                assert re.fullmatch(EARLIER_NAMES, earlier["legendFormat"].replace("$offset", offset))
                assert not re.search(EARLIER_NAMES, now["legendFormat"].replace("$offset", offset))


def test_compare_offers_the_offsets_people_compare():
    offset = {v["name"]: v for v in dashboard(compare.UID)["templating"]["list"]}["offset"]
    assert offset["query"].split(",") == ["10m", "30m", "1h", "6h", "1d", "7d"]
    assert offset["allowCustomValue"] and offset["current"]["value"] == "1d"


# What a query's value measures, from the metric names: seconds, bytes, a count, per second of each,
# or a ratio of like to like. A query that the name cannot tell declares it (Query.dimension).
UNITS = {"s": {"s"}, "bytes": {"bytes"}, "bytes/s": {"Bps"}, "s/s": {"percentunit"}, "count": {"short", "none"},
         "count/s": {"ops", "iops", s.PAGES_PER_SECOND, s.QUERIES_PER_SECOND, "short"}, "ratio": {"percentunit"}}


def dimension(e) -> str | None:
    if isinstance(e, Signal):
        return dimension(e.expr)
    if isinstance(e, (Num, Str)):
        return None  # a constant fits anything
    if isinstance(e, (Series, Record)):
        name = e.name
        for suffix, dim in (("_seconds_total", "s"), ("_seconds", "s"), ("_bytes_total", "bytes"), ("_bytes", "bytes"),
                            ("_ratio", "ratio"), (":ratio", "ratio")):
            if name.endswith(suffix):
                return dim
        return "count"
    if isinstance(e, Range):
        return dimension(e.series)
    if isinstance(e, Call):
        inner = dimension(e.args[0])
        if e.function in ("rate", "increase", "deriv"):
            return {"s": "s/s", "bytes": "bytes/s", "count": "count/s"}[inner]
        return inner
    if isinstance(e, Aggregation):
        return "count" if e.op == "count" else dimension(e.expr)
    assert isinstance(e, Binary), e
    left, right = dimension(e.left), dimension(e.right)
    if e.op in ("and", "unless", ">", "<", "==", "!=", ">=", "<="):
        return left
    if e.op in ("or", "+", "-"):
        assert left == right or None in (left, right), f"{left} {e.op} {right}"
        return left or right
    assert e.op == "/", e.op
    if left == right:
        return "ratio"
    if right is None or right == "count":  # per CPU, per instance
        return left
    if (left, right) == ("s/s", "count/s"):
        return "s"  # time per operation
    raise AssertionError(f"{left} / {right}")


def views():
    for module in MODULES:
        for view in getattr(module, "VIEWS"):
            yield module, view


def test_every_unit_matches_what_its_queries_measure():  # 4
    checked = 0
    for module, view in views():
        for query in view.queries:
            dim = query.dimension or dimension(query.expr)
            allowed = UNITS[dim] | ({"suffix:× io_capacity"} if dim == "ratio" else set())
            assert view.unit in allowed, f"{module.UID} / {view.title} / {query.legend}: {dim} in {view.unit}"
            checked += 1
    assert checked > 80


def test_a_panel_that_draws_a_signal_uses_the_signals_unit():
    drawn = [(view, q.expr) for _, view in views() for q in view.queries if isinstance(q.expr, Signal)]
    assert len(drawn) >= 20
    for view, signal in drawn:
        assert view.unit == signal.unit, f"{view.title}: {signal.name} is in {signal.unit}"


def test_ratios_that_are_not_shares_are_not_percentages():  # 5
    who = next(v for _, v in views() if v.title.startswith("Who requests flushing"))
    assert who.unit != "percentunit"  # 13 times innodb_io_capacity is not 1300 %
    assert {q.legend for q in who.queries} == {"for the dirty pages level", "for REDO (checkpoint age)"}
    busy = next(v for _, v in views() if v.title == "Disk busy")
    assert busy.unit == "percentunit" and all(dimension(q.expr) == "s/s" for q in busy.queries)  # 4


def test_no_threshold_line_at_zero_or_below():  # 5: the hit ratio drew one at 0 %
    for d, p in panels():
        for step in p["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])[1:]:
            assert step["value"] > 0, f"{d['uid']} / {p['title']}"


def test_hit_ratio_axis_shows_the_band_that_matters():  # 5
    hit = next(p for _, p in panels() if p["title"] == "Buffer pool hit ratio")
    defaults = hit["fieldConfig"]["defaults"]
    assert defaults["custom"]["axisSoftMin"] >= 0.9 and defaults.get("min") is None and defaults["max"] == 1


def test_panels_healthy_at_zero_keep_a_small_axis():  # 5: a flat zero drew a 0-100 axis
    zero_healthy = [p for _, p in panels() if p["type"] == "timeseries"
                    and re.search(r"Healthy: (zero|0)\b", p["description"])]
    assert len(zero_healthy) >= 4
    for p in zero_healthy:
        assert p["fieldConfig"]["defaults"]["custom"].get("axisSoftMax") is not None, p["title"]


LIMIT = re.compile(r"flush point|max checkpoint age|REDO capacity|^CPUs$|^target:")


def test_limit_lines_are_lines_not_fills():  # 6
    limits = 0
    for d, p in panels():
        for t in p["targets"]:
            if LIMIT.search(t["legendFormat"]):
                limits += 1
                fills = [prop["value"] for o in p["fieldConfig"]["overrides"]
                         if o["matcher"] == {"id": "byFrameRefID", "options": t["refId"]}
                         for prop in o["properties"] if prop["id"] == "custom.fillOpacity"]
                assert fills == [0], f"{d['uid']} / {p['title']} / {t['legendFormat']} is filled"
    assert limits >= 10


def test_panels_that_can_be_empty_say_why_where_the_data_would_be_and_take_half_a_row():  # 7
    """The flavour is named in the description; where the data would be, the exporter's statement of the reason
    (which only that server gives) or a no-value text true of every server (issue 30, point 6)."""
    declared = 0
    for d, p in panels():
        no_value = p["fieldConfig"]["defaults"].get("noValue", "")
        if "No data on MariaDB:" in p["description"]:
            declared += 1
            assert no_value or any(ABSENT in t["expr"] for t in p["targets"]), f"{d['uid']} / {p['title']} says nothing"
        if no_value:
            assert p["gridPos"]["w"] < 24, f"{d['uid']} / {p['title']} takes a full row for nothing"
    assert declared >= 4


def test_top_n_panels_rank_once_over_the_range():  # 8
    tops = 0
    for d, p in panels():
        for t in p["targets"]:
            for match in re.finditer(r"topk\(\d+, ", t["expr"]):
                tops += 1
                ranking = t["expr"][match.end():]
                assert re.match(r"rate\([^\[]+\[\$__range\] @ end\(\)", ranking), t["expr"]
                assert re.search(r"\band on \(", t["expr"][:match.start()]), t["expr"]
    assert tops >= 3


def test_top_latches_legends_fit():  # 8
    for view in (contention.LATCH_TIME, contention.LATCH_COUNT):
        assert view.legend_rows() == contention.TOP and [q.legend for q in view.queries] == ["{{name}}"]


def test_sync_array_panels_do_not_carry_other_signals():  # 8
    for view in (contention.SEMAPHORES, contention.SPINS):
        assert view.no_data_on_mariadb and not any(q.absent_on_mariadb for q in view.queries)
        assert all("innodb_semaphore_" in q.render() for q in view.queries)


def test_every_row_fills_the_24_columns():  # 9
    for path in FILES:
        d = load(path)
        rows = {}
        for p in d["panels"]:
            rows.setdefault(p["gridPos"]["y"], []).append(p["gridPos"])
        for y, row in rows.items():
            if all(g["y"] == y for g in row):
                assert sum(g["w"] for g in row) == 24, f"{d['uid']}: the row at y={y} leaves a hole"


# The suffixes each of Grafana's provisioning readers takes (pkg/services/provisioning/*/config_reader.go);
# alerting warns about any other at every start ("file has invalid suffix", issue 30).
READERS = {"alerting": (".yaml", ".yml", ".json"), "datasources": (".yaml", ".yml"), "dashboards": (".yaml", ".yml"),
           "notifiers": (".yaml", ".yml"), "plugins": (".yaml", ".yml")}


def test_the_folders_grafana_reads_hold_only_files_it_reads():  # 9; issue 30, point 10
    base = os.path.join(ROOT, "provisioning", "grafana")
    for folder, suffixes in READERS.items():
        files = os.listdir(os.path.join(base, folder))
        assert files, f"{folder}: Grafana logs an error for a missing folder, and git keeps no empty one"
        for name in files:
            assert name.endswith(suffixes), f"provisioning/grafana/{folder}/{name}: Grafana does not read it"
            with open(os.path.join(base, folder, name), encoding="utf-8") as f:
                assert yaml.safe_load(f)["apiVersion"] == 1, name
    assert set(os.listdir(base)) == set(READERS) | {"README.md"}  # the notes beside the folders, not in them


def test_redo_fsync_panels_show_the_servers_measure_and_the_hosts_for_the_data_device():  # the fsync fallback
    for view in (redo.FSYNC_LATENCY, redo.FSYNCS):
        server = [q for q in view.queries if q.legend.startswith("server:")]
        hosts = [q for q in view.queries if q.legend.startswith("host {{device}}:")]
        assert server and hosts and len(server) + len(hosts) == len(view.queries)
        assert all(q.absent_on_mariadb for q in server) and not any(q.absent_on_mariadb for q in hosts)
        for q in hosts:
            expr = q.render()
            assert 'label_replace(up{job="node",instance="$instance",redo_device!=""}, "device", "$1", "redo_device"' \
                   in expr and "and on (instance, device)" in expr
            assert 'unless on (instance) up{job="node",instance="$instance",redo_device!=""}' in expr
    assert "host" in redo.FSYNC_LATENCY.title and "server" in redo.FSYNC_LATENCY.title
    assert {"node_disk_flush_requests_time_seconds_total", "node_disk_write_time_seconds_total"} <= set(
        re.findall(r"node_disk_\w+", " ".join(q.render() for q in redo.FSYNC_LATENCY.queries)))


def test_write_targets_labels_the_node_target_with_the_data_device(tmp_path):
    script = os.path.join(ROOT, "provisioning", "prometheus", "write-targets.sh")
    for device, expected in (("nvme0n1", {"instance": "db1:3306", "redo_device": "nvme0n1"}),
                             ("", {"instance": "db1:3306", "redo_device": ""})):
        subprocess.run(["sh", script, str(tmp_path)], check=True,
                       env=dict(os.environ, MYSQL_ADDRESS="db1:3306", REDO_DEVICE=device))
        with open(tmp_path / "node.yml") as f:
            assert yaml.safe_load(f)[0]["labels"] == expected


def test_grafana_provisioning_points_at_the_dashboards_and_the_fixed_datasource_uid():
    with open(os.path.join(ROOT, "provisioning", "grafana", "datasources", "prometheus.yml")) as f:
        sources = yaml.safe_load(f)["datasources"]
    assert sources[0]["uid"] == "innodb-prometheus" and sources[0]["type"] == "prometheus"
    with open(os.path.join(ROOT, "provisioning", "grafana", "dashboards", "innodb.yml")) as f:
        provider = yaml.safe_load(f)["providers"][0]
    # Only the folder of dashboards: Grafana takes any other JSON file (index.json) for a broken dashboard.
    assert provider["folder"] == "InnoDB" and provider["options"]["path"] == "${DASHBOARDS_DIR}/grafana"
    with open(os.path.join(ROOT, "docker-compose.yml")) as f:
        grafana = yaml.safe_load(f)["services"]["grafana"]
    assert "./provisioning/grafana:/etc/grafana/provisioning:ro" in grafana["volumes"]
    assert "./dashboards:/var/lib/grafana/dashboards:ro" in grafana["volumes"]
    assert grafana["environment"]["DASHBOARDS_DIR"] == "/var/lib/grafana/dashboards"


def test_views_are_the_panels():
    """Every view a module declares is drawn, and the tests above read the same objects Grafana gets."""
    for module in MODULES:
        titles = [p["title"] for p in dashboard(module.UID)["panels"]]
        for view in module.VIEWS:
            assert isinstance(view, View)
            assert any(t.startswith(view.title) for t in titles), f"{module.UID}: {view.title} is not drawn"
    host_titles = [p["title"] for p in dashboard(host.UID)["panels"]]
    assert "Disk busy" in host_titles and "Disk latency" in host_titles


def test_alert_marks_and_the_alerts_stat_leave_out_info_alerts_and_count_an_alert_once(promtool, tmp_path):
    """Evaluated by promtool on ALERTS as Prometheus writes them: a stock server's InnoDBCounterDisabled
    (info, one per disabled counter) neither marks the panels nor counts, and an alert firing at both its
    levels counts once."""
    annotations = {a["expr"] for path in FILES for a in load(path)["annotations"]["list"] if "ALERTS" in a.get("expr", "")}
    stat = next(p for p in dashboard("innodb-overview")["panels"] if p["title"] == "Alerts firing")
    assert len(annotations) == 1
    firing = 'ALERTS{{alertname="{}",alertstate="firing",severity="{}",instance="db1"}}'
    inputs = [{"series": firing.format("InnoDBCounterDisabled", "info").replace('"}', f'",counter="c{i}"}}'),
               "values": "1x5"} for i in range(20)]
    inputs += [{"series": firing.format("InnoDBCheckpointAgeHigh", severity), "values": "1x5"}
               for severity in ("warning", "critical")]
    inputs.append({"series": firing.format("InnoDBLongTransaction", "warning").replace("db1", "db2"), "values": "1x5"})

    def at_db1(expr):
        return expr.replace("$instance", "db1")

    case = {"rule_files": [], "evaluation_interval": "1m", "tests": [{"interval": "1m", "input_series": inputs,
            "promql_expr_test": [
                {"expr": at_db1(stat["targets"][0]["expr"]), "eval_time": "2m", "exp_samples": [{"labels": "{}", "value": 1}]},
                {"expr": f"count({at_db1(annotations.pop())})", "eval_time": "2m",
                 "exp_samples": [{"labels": "{}", "value": 2}]},
            ]}]}
    (tmp_path / "alerts_test.yml").write_text(yaml.safe_dump(case))
    out = subprocess.run([promtool, "test", "rules", "alerts_test.yml"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
