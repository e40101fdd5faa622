"""dashboards/preview.py: Grafana's variables, units and overrides, and a whole run against a fake
Prometheus that answers some queries and not others."""

from __future__ import annotations

import glob
import json
import math
import os
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dashboards import preview


def test_variables_are_grafanas():
    values = preview.variables("db1:3306", 3600, 15, "1d")
    assert values["__rate_interval"] == "60s" and values["__range"] == "3600s"
    assert preview.variables("db1:3306", 86400, 144, "1d")["__rate_interval"] == "159s"  # step + scrape interval
    expr = ('rate(x{instance="$instance"}[$__rate_interval] offset ${offset})'
            ' or label_replace(y, "a", "$1", "b", "(.+)")')
    assert preview.substitute(expr, values) == \
        'rate(x{instance="db1:3306"}[60s] offset 1d) or label_replace(y, "a", "$1", "b", "(.+)")'
    with pytest.raises(KeyError):
        preview.substitute("x[$__unknown]", values)


def test_overrides_apply_in_order_and_the_regexp_is_anchored():
    panel = {"fieldConfig": {"defaults": {"custom": {"fillOpacity": 10}}, "overrides": [
        {"matcher": {"id": "byFrameRefID", "options": "B"}, "properties": [{"id": "custom.fillOpacity", "value": 0}]},
        {"matcher": {"id": "byRegexp", "options": ".* earlier\\)"},
         "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash"}}]}]}}
    now = preview.Series("qps", "A", [], [])
    earlier = preview.Series("qps (1d earlier)", "B", [], [])
    assert preview.field_config(panel, now)["custom"] == {"fillOpacity": 10}
    assert preview.field_config(panel, earlier)["custom"] == {"fillOpacity": 0, "lineStyle": {"fill": "dash"}}
    assert "lineStyle" not in preview.field_config(panel, preview.Series("earlier) x", "A", [], []))["custom"]


def test_threshold_colour_is_the_last_step_reached():
    thresholds = {"steps": [{"value": None, "color": "red"}, {"value": 1, "color": "green"}]}
    assert preview.threshold_colour(thresholds, 0) == preview.COLOURS["red"]
    assert preview.threshold_colour(thresholds, 1) == preview.COLOURS["green"]


class FakePrometheus(BaseHTTPRequestHandler):
    """Answers every range query with one flat series, except those on the sync array (no series); keeps the
    paths it was asked for in ``asked``."""

    asked: list[str] = []

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        params = urllib.parse.parse_qs(url.query)
        self.asked.append(url.path)
        if url.path.endswith("/label/instance/values"):
            body = {"status": "success", "data": ["db1:3306"]}
        elif url.path.endswith("/query"):  # an instant query: the bottleneck's class "Healthy" holds, no other
            holds = params["query"][0].endswith(" == 0")
            result = [{"metric": {"instance": "db1:3306"}, "value": [float(params["time"][0]), "0"]}] if holds else []
            body = {"status": "success", "data": {"resultType": "vector", "result": result}}
        else:
            assert "$" not in params["query"][0].replace('"$1"', "")
            start, end = float(params["start"][0]), float(params["end"][0])
            points = [[start + i * 15, "0.5"] for i in range(int((end - start) // 15))]
            empty = "innodb_semaphore_" in params["query"][0] and "longest" not in params["query"][0]
            result = [] if empty else [{"metric": {"instance": "db1:3306", "device": "vda"}, "values": points}]
            body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.mark.slow
def test_a_run_draws_every_dashboard_and_names_the_empty_panels(tmp_path):
    FakePrometheus.asked = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        empty = preview.preview(f"http://127.0.0.1:{server.server_port}", str(tmp_path), range_="10m")
    finally:
        server.shutdown()
    # Its work is bounded by the dashboards: the instance asked once, and each panel's queries once.
    ranges = instants = 0
    for path in glob.glob(os.path.join(preview.GRAFANA_DIR, "*.json")):
        with open(path, encoding="utf-8") as f:
            targets = [t for p in json.load(f)["panels"] for t in p.get("targets", [])]
        instants += sum(bool(t.get("instant")) for t in targets)
        ranges += sum(not t.get("instant") for t in targets)
    assert instants == 10  # What limits this server now: a query per class
    assert FakePrometheus.asked[0] == "/api/v1/label/instance/values"
    assert sorted(FakePrometheus.asked[1:]) == sorted(["/api/v1/query_range"] * ranges + ["/api/v1/query"] * instants)
    assert set(empty) == {"innodb-overview", "innodb-checkpoint", "innodb-buffer-pool", "innodb-purge", "innodb-redo",
                          "innodb-contention", "innodb-host", "innodb-compare"}
    assert empty["innodb-contention"] == ["Threads waiting for a latch (sync array)", "Spin rounds and OS waits"]
    assert all(titles == [] for uid, titles in empty.items() if uid != "innodb-contention")
    for uid in empty:
        assert (tmp_path / f"{uid}.png").stat().st_size > 10_000


def test_an_empty_panel_is_empty_and_nan_counts_as_no_value():
    assert preview.PanelData().empty
    assert preview.PanelData([preview.Series("x", "A", [1.0], [math.nan])]).empty
    assert not preview.PanelData([preview.Series("x", "A", [1.0], [0.0])]).empty


def test_a_matcher_the_oldest_grafana_lacks_is_drawn_as_the_blank_panel_it_gives_not_imitated():
    """Grafana 9.4 draws a stat with a "byValue" override blank; the preview must not draw what a newer Grafana
    would, or a look at it would pass where Grafana fails."""
    panel = {"type": "stat", "targets": [], "fieldConfig": {"defaults": {}, "overrides": [
        {"matcher": {"id": "byValue", "options": {"reducer": "lastNotNull", "op": "eq", "value": 1}}, "properties": []},
        {"matcher": {"id": "byFrameRefID", "options": "A"}, "properties": []}]}}
    assert preview.unknown_matchers(panel) == ["byValue"]
    data = preview.evaluate(panel, "http://127.0.0.1:9", {}, 0, 60, 15)
    assert data.blank and "byValue" in data.errors[0] and "9.4" in data.errors[0]


def test_a_missing_value_takes_the_special_mappings_colour_and_no_other_mapping():
    config = {"mappings": [{"type": "value", "options": {"1": {"text": "holds", "color": "red"}}},
                           {"type": "special", "options": {"match": "null+nan", "result": {"color": "#8E8E8E"}}}]}
    assert preview.mapped(config, None) == (None, "#8E8E8E") and preview.mapped(config, math.nan) == (None, "#8E8E8E")
    assert preview.mapped(config, 1.0) == ("holds", preview.COLOURS["red"]) and preview.mapped(config, 2.0) is None
