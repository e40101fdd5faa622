"""Every query of every dashboard panel against the live native stack (MariaDB under sysbench, both
exporters, node_exporter, Prometheus), with the dashboard variables substituted as Grafana would.

A panel or a series that cannot have data on MariaDB says so in its description ("No data on MariaDB:",
"No '<legend>' on MariaDB:"); the test holds the panels to exactly that, and at most a tenth of them may
be empty.
"""

from __future__ import annotations

import glob
import json
import os
import time
import urllib.parse
import urllib.request

import pytest

from support.golden import TESTS

pytestmark = pytest.mark.integration
ROOT = os.path.dirname(TESTS)
OFFSET = "1m"  # the Compare dashboard's $offset: a window the stack has data for
RATE_INTERVAL = "1m"  # $__rate_interval: 4 x the data source's 15 s time interval


@pytest.fixture(scope="module")
def stack(native_stack):
    return native_stack


def substitute(expr: str, instance: str) -> str:
    for name, value in (("${instance}", instance), ("$instance", instance), ("$__rate_interval", RATE_INTERVAL),
                        ("${offset}", OFFSET), ("$offset", OFFSET), ("$__interval", "15s")):
        expr = expr.replace(name, value)
    assert "$" not in expr, f"a variable the test does not know: {expr}"
    return expr


def query_range(stack, expr: str) -> dict:
    end = time.time()
    params = {"query": expr, "start": end - 120, "end": end, "step": 15}
    url = stack.s.url("prometheus") + "/api/v1/query_range?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        return json.load(exc)


def test_every_panel_query_evaluates_and_returns_data(stack):
    instance = stack.s.address("mariadb")
    panels, empty_panels, declared_empty, problems = 0, [], [], []
    for path in sorted(glob.glob(os.path.join(ROOT, "dashboards", "*.json"))):
        with open(path, encoding="utf-8") as f:
            dashboard = json.load(f)
        for panel in dashboard["panels"]:
            panels += 1
            where = f"{dashboard['uid']} / {panel['title']}"
            description = panel["description"]
            panel_declared = "No data on MariaDB:" in description
            if panel_declared:
                declared_empty.append(where)
            with_data = 0
            for target in panel["targets"]:
                answer = query_range(stack, substitute(target["expr"], instance))
                if answer.get("status") != "success":
                    problems.append(f"{where}: {target['expr']} failed: {answer.get('error')}")
                    continue
                if answer["data"]["result"]:
                    with_data += 1
                    continue
                legend = target["legendFormat"].removesuffix(f" ({'$offset'} earlier)")
                if not panel_declared and f"No '{legend}' on MariaDB" not in description:
                    problems.append(f"{where}: no data for '{target['legendFormat']}': {target['expr']}")
            if with_data == 0:
                empty_panels.append(where)
            elif panel_declared:
                problems.append(f"{where} says it has no data on MariaDB, but it has")
    assert problems == [], "\n".join(problems)
    assert sorted(empty_panels) == sorted(declared_empty)
    print(f"\n{panels} panels; no data on MariaDB, as their descriptions say: {empty_panels}")
    assert len(empty_panels) <= panels / 10, f"{len(empty_panels)} of {panels} panels have no data on MariaDB"


def test_alert_annotation_query_evaluates(stack):
    answer = query_range(stack, substitute('ALERTS{alertstate="firing",instance="$instance"}',
                                           stack.s.address("mariadb")))
    assert answer["status"] == "success"


def test_instance_variable_lists_the_server(stack):
    url = stack.s.url("prometheus") + "/api/v1/label/instance/values?" + urllib.parse.urlencode(
        {"match[]": "innodb_up"})
    with urllib.request.urlopen(url, timeout=10) as response:
        assert json.load(response)["data"] == [stack.s.address("mariadb")]
