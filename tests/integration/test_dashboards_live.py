"""Every query of every dashboard panel against the live native stack (MariaDB under sysbench, both
exporters, node_exporter, Debian's Prometheus 2.42), with the dashboard variables substituted as Grafana
would (support/dashboards.py), and every dashboard drawn as an operator would see it.

A panel or a series that cannot have data on MariaDB says so in its description ("No data on MariaDB:",
"No '<legend>' on MariaDB:") and, where the data would be, by the exporter's statement of the reason
(innodb_exporter_metric_absent, a legend row or a stat's value, which must answer here) or a no-value text;
the test holds the panels to exactly that, and at most a tenth of them may be empty. test_stack_e2e.py does
the same on Prometheus 3.
"""

from __future__ import annotations

import glob
import json
import os
import time
import urllib.parse
import urllib.request

import pytest

from dashboards import preview
from dashboards.common import ABSENT
from stack import devices
from stack.settings import demo_name
from support.dashboards import check_panels
from support.golden import TESTS
from support.servers import wait_for

pytestmark = pytest.mark.integration
ROOT = os.path.dirname(TESTS)
RANGE, STEP = 120, 15  # the last two minutes, at the data source's interval
OFFSET = "1m"  # the Compare dashboard's $offset: a window the stack has data for


@pytest.fixture(scope="module")
def stack(native_stack):
    return native_stack


def query_range(stack, expr: str) -> dict:
    end = time.time()
    return preview.query_range(stack.s.url("prometheus"), expr, end - RANGE, end, STEP)


def test_every_panel_query_evaluates_and_returns_data(stack):
    check = check_panels(stack.s.url("prometheus"), stack.s.address("mariadb"), RANGE, STEP, OFFSET)
    assert check.problems == [], "\n".join(check.problems)
    assert sorted(check.empty_panels) == sorted(check.declared_empty)
    print(f"\n{check.panels} panels; no data on MariaDB, as their descriptions say: {check.empty_panels}")
    assert len(check.empty_panels) <= check.panels / 10, \
        f"{len(check.empty_panels)} of {check.panels} panels have no data on MariaDB"


def test_redo_fsync_latency_shows_the_hosts_measure_of_the_data_directorys_disk(stack):
    """MariaDB does not time its REDO fsyncs: the panel shows the host's, for the labelled device only."""
    device = devices.block_device(stack.s.path(demo_name(stack.s.server)))
    assert device, "the demo server's data directory is on no block device the stack can name"
    url = stack.s.url("prometheus") + "/api/v1/query?" + urllib.parse.urlencode(
        {"query": f'up{{job="node",redo_device="{device}"}}'})
    with urllib.request.urlopen(url, timeout=10) as response:
        assert json.load(response)["data"]["result"], "the node target carries no redo_device label"
    with open(os.path.join(ROOT, "dashboards", "grafana", "innodb-redo.json"), encoding="utf-8") as f:
        latency = next(p for p in json.load(f)["panels"] if p["title"].startswith("REDO fsync latency"))
    values = preview.variables(stack.s.address("mariadb"), RANGE, STEP, OFFSET)
    reasons = set()
    for target in latency["targets"]:
        result = query_range(stack, preview.substitute(target["expr"], values))["data"]["result"]
        if target["legendFormat"].startswith("host"):
            assert {r["metric"]["device"] for r in result} == {device}, target["legendFormat"]
        elif ABSENT in target["expr"]:  # the panel says why the server's lines are empty
            reasons |= {r["metric"]["reason"] for r in result}
        else:
            assert result == [], f"MariaDB now times its REDO fsyncs: {target['legendFormat']}"
    assert reasons == {"not_provided"}  # the demo server is tuned: the server has no such number


def test_every_dashboard_draws(stack, tmp_path):
    """The preview an operator looks at: one PNG per dashboard, the same empty panels as above."""
    empty = preview.preview(stack.s.url("prometheus"), str(tmp_path), stack.s.address("mariadb"), "5m", OFFSET)
    assert sorted(empty) == sorted(os.path.basename(p)[:-5] for p in
                                   glob.glob(os.path.join(ROOT, "dashboards", "grafana", "*.json")))
    for uid in empty:
        assert os.path.getsize(tmp_path / f"{uid}.png") > 20_000, uid
    print("\nempty panels per dashboard on MariaDB: " + ", ".join(f"{uid} {len(t)}" for uid, t in empty.items()))


def test_annotation_queries_evaluate_and_mark_a_capture_at_its_time(stack):
    values = preview.variables(stack.s.address("mariadb"), RANGE, STEP, OFFSET)
    with open(os.path.join(ROOT, "dashboards", "grafana", "innodb-overview.json"), encoding="utf-8") as f:
        annotations = {a["name"]: a for a in json.load(f)["annotations"]["list"] if a.get("expr")}
    assert set(annotations) == {"Alerts", "Evidence captured", "Settings changes"}
    for annotation in annotations.values():
        assert query_range(stack, preview.substitute(annotation["expr"], values))["status"] == "success"
    # A capture (as Alertmanager's webhook asks for one), then its mark: the series' value is its time in ms.
    alert = {"status": "firing", "labels": {"alertname": "InnoDBLongTransaction", "instance": stack.s.address("mariadb")}}
    request = urllib.request.Request(stack.s.url("innodb_exporter") + "/capture", method="POST",
                                     data=json.dumps({"version": "4", "alerts": [alert]}).encode())
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202
    captured_at = time.time()

    def marks() -> list:
        return query_range(stack, preview.substitute(annotations["Evidence captured"]["expr"], values))["data"]["result"]

    wait_for(marks, 60, what="the capture's mark")
    newest = float(marks()[0]["values"][-1][1]) / 1000
    assert captured_at - 900 < newest <= captured_at  # this capture, or one taken minutes before (cool-down)


def test_instance_variable_lists_the_server(stack):
    url = stack.s.url("prometheus") + "/api/v1/label/instance/values?" + urllib.parse.urlencode(
        {"match[]": "innodb_up"})
    with urllib.request.urlopen(url, timeout=10) as response:
        assert json.load(response)["data"] == [stack.s.address("mariadb")]
