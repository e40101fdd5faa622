"""Every query of every dashboard panel against the live native stack (MariaDB under sysbench, both
exporters, node_exporter, Prometheus), with the dashboard variables substituted as Grafana would
(dashboards/preview.py does it the same way), and every dashboard drawn as an operator would see it.

A panel or a series that cannot have data on MariaDB says so in its description ("No data on MariaDB:",
"No '<legend>' on MariaDB:") and, where the data would be, by the exporter's statement of the reason
(innodb_exporter_metric_absent, a legend row or a stat's value, which must answer here) or a no-value text;
the test holds the panels to exactly that, and at most a tenth of them may be empty.
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
from dashboards.common import ABSENT, NOTHING_EARLIER_LEGEND
from stack import devices
from stack.settings import demo_name
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


def query(stack, target: dict, values: dict) -> dict:
    """The target as Grafana asks for it: over the range, or at its end when it is an instant query."""
    expr = preview.substitute(target["expr"], values)
    if target.get("instant"):
        return preview.query_instant(stack.s.url("prometheus"), expr, time.time())
    return query_range(stack, expr)


def test_every_panel_query_evaluates_and_returns_data(stack):
    instance = stack.s.address("mariadb")
    values = preview.variables(instance, RANGE, STEP, OFFSET)
    panels, empty_panels, declared_empty, problems = 0, [], [], []
    for path in sorted(glob.glob(os.path.join(ROOT, "dashboards", "grafana", "*.json"))):
        with open(path, encoding="utf-8") as f:
            dashboard = json.load(f)
        for panel in dashboard["panels"]:
            panels += 1
            where = f"{dashboard['uid']} / {panel['title']}"
            description = panel["description"]
            panel_declared = "No data on MariaDB:" in description
            if panel_declared:
                declared_empty.append(where)
            with_data, instants = 0, []
            for target in panel["targets"]:
                answer = query(stack, target, values)
                if answer.get("status") != "success":
                    problems.append(f"{where}: {target['expr']} failed: {answer.get('error')}")
                    continue
                if target.get("instant"):  # one query per value the stat can show: one of them answers
                    instants.append(bool(answer["data"]["result"]))
                    continue
                if ABSENT in target["expr"]:  # the exporter's reason for a series declared absent on MariaDB
                    if not answer["data"]["result"]:
                        problems.append(f"{where}: the exporter gives no reason for '{target['legendFormat']}'")
                    continue
                if target["legendFormat"] == NOTHING_EARLIER_LEGEND:  # Compare's mark of an empty earlier window
                    continue
                if answer["data"]["result"]:
                    with_data += 1
                    continue
                legend = target["legendFormat"].removesuffix(" ($offset earlier)")
                if f"'{legend}' only while" in description:  # a series of what happens, not of the flavour
                    continue
                if not panel_declared and f"No '{legend}' on MariaDB" not in description:
                    problems.append(f"{where}: no data for '{target['legendFormat']}': {target['expr']}")
            if instants and instants.count(True) != 1:
                problems.append(f"{where}: {instants.count(True)} of its instant queries answer, not one")
            if with_data == 0 and not instants:
                empty_panels.append(where)
            elif panel_declared:
                problems.append(f"{where} says it has no data on MariaDB, but it has")
    assert problems == [], "\n".join(problems)
    assert sorted(empty_panels) == sorted(declared_empty)
    print(f"\n{panels} panels; no data on MariaDB, as their descriptions say: {empty_panels}")
    assert len(empty_panels) <= panels / 10, f"{len(empty_panels)} of {panels} panels have no data on MariaDB"


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
