"""The native stack end to end on Prometheus 3: real MariaDB under sysbench, both exporters, Prometheus 3.16
(stack/tools.py builds it) with the stack's rules, Alertmanager with its routes. Every target is up, every
dashboard query evaluates, alerts fire for real and arrive in Alertmanager (API v2), which has the exporter
capture the evidence (issue 13): the status texts of a checkpoint-age page, the transaction behind a purge
page. (test_dashboards_live.py runs the dashboards on Debian's Prometheus 2.42.)

Thresholds and durations are lowered for the test through alerts/mixin.py's CONFIG (``--set``), the
one place where they are set; no rule is edited.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request

import pytest

from stack.tools import TOOLS
from support.dashboards import check_panels
from support.servers import wait_for
from support.transactions import hold_read_view

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stack(alerting_stack):
    return alerting_stack


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def prometheus_alerts(stack) -> list[dict]:
    return get_json(stack.s.url("prometheus") + "/api/v1/alerts")["data"]["alerts"]


def alertmanager_alerts(stack) -> list[dict]:
    return get_json(stack.s.url("alertmanager") + "/api/v2/alerts")


def query(stack, expr: str) -> list:
    return get_json(stack.s.url("prometheus") + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))["data"]["result"]


def firing(stack, name: str) -> list[dict]:
    return [a for a in prometheus_alerts(stack) if a["labels"]["alertname"] == name and a["state"] == "firing"]


def in_alertmanager(stack, name: str, state: str = "active") -> list[dict]:
    return [a for a in alertmanager_alerts(stack) if a["labels"]["alertname"] == name and a["status"]["state"] == state]


def test_every_target_is_up_within_a_minute(stack):
    def all_up():
        targets = get_json(stack.s.url("prometheus") + "/api/v1/targets")["data"]["activeTargets"]
        jobs = {t["labels"]["job"]: t["health"] for t in targets}
        return set(jobs) == {"innodb", "mysqld", "node", "prometheus", "alertmanager"} and set(jobs.values()) == {"up"}

    wait_for(all_up, 60, interval=2, what="every Prometheus target up")
    [build] = query(stack, "prometheus_build_info")
    assert build["metric"]["version"] == TOOLS["prometheus"].version  # the stack runs Prometheus 3


def test_every_dashboard_query_evaluates_on_prometheus_3(stack):
    """As test_dashboards_live.py on Debian's Prometheus: two minutes of scrapes, every rate window filled."""
    wait_for(lambda: time.time() > stack.started + 120, 140, interval=5, what="two minutes of data")
    check = check_panels(stack.s.url("prometheus"), stack.s.address("mariadb"), 120, 15, "1m")
    assert check.problems == [], "\n".join(check.problems)
    assert sorted(check.empty_panels) == sorted(check.declared_empty)


def test_checkpoint_age_alert_fires_and_reaches_alertmanager(stack):
    instance = stack.s.address("mariadb")
    # Checkpoint age swings with the machine's other work: on a busy one it took more than 4 minutes to stay
    # past 75 % for the 30 s the test's rules ask.
    wait_for(lambda: firing(stack, "InnoDBCheckpointAgeHigh"), 420, interval=5, what="InnoDBCheckpointAgeHigh firing")
    alert = firing(stack, "InnoDBCheckpointAgeHigh")[0]
    assert alert["labels"]["instance"] == instance and alert["labels"]["job"] == "innodb"
    assert float(alert["value"]) > 0.75
    wait_for(lambda: in_alertmanager(stack, "InnoDBCheckpointAgeHigh"), 60, interval=2,
             what="InnoDBCheckpointAgeHigh in Alertmanager")
    received = in_alertmanager(stack, "InnoDBCheckpointAgeHigh")[0]
    assert received["annotations"]["runbook_url"].endswith("#innodbcheckpointagehigh")
    assert instance in received["annotations"]["description"]
    # Alertmanager sent it to the exporter, which captured the raw texts of that moment.
    wait_for(lambda: captures_of(stack, "InnoDBCheckpointAgeHigh"), 90, interval=2, what="the capture of the page")
    capture = captures_of(stack, "InnoDBCheckpointAgeHigh")[0]
    assert capture["instance"] == instance and len(capture["snapshots"]) == 2
    status_text = capture_file(stack, capture, "1-engine-innodb-status.txt")
    assert "Log sequence number" in status_text and "END OF INNODB MONITOR OUTPUT" in status_text


def captures_of(stack, alertname: str) -> list[dict]:
    listing = get_json(stack.s.url("innodb_exporter") + "/api/captures")["captures"]
    return [c for c in listing if alertname in {a["labels"]["alertname"] for a in c["alerts"]}]


def capture_file(stack, capture: dict, name: str) -> str:
    with urllib.request.urlopen(f"{stack.s.url('innodb_exporter')}/captures/{capture['id']}/{name}", timeout=10) as r:
        return r.read().decode()


@pytest.fixture(scope="module")
def held_transaction(stack):
    """A transaction with a read view that has written (so it has an id of its own), held open while sysbench
    writes: purge cannot pass it. Yields its id."""
    conn, trx_id = hold_read_view(stack)
    yield trx_id
    conn.rollback()
    conn.close()


def test_purge_lag_alert_fires_while_a_transaction_is_held_open(stack, request):
    before = query(stack, "innodb_history_list_length")
    assert before and float(before[0]["value"][1]) < 5000, "history was already long before the transaction"
    assert not firing(stack, "InnoDBHistoryListGrowing")
    trx_id = request.getfixturevalue("held_transaction")
    wait_for(lambda: firing(stack, "InnoDBHistoryListGrowing"), 300, interval=5, what="InnoDBHistoryListGrowing firing")
    wait_for(lambda: in_alertmanager(stack, "InnoDBHistoryListGrowing"), 60, interval=2,
             what="InnoDBHistoryListGrowing in Alertmanager")
    oldest = query(stack, "innodb_oldest_transaction_seconds")
    assert float(oldest[0]["value"][1]) > 60  # what holds purge back is visible too
    # The capture of the page names the transaction that holds purge back, with its age.
    wait_for(lambda: captures_of(stack, "InnoDBHistoryListGrowing"), 90, interval=2, what="the capture of the page")
    capture = captures_of(stack, "InnoDBHistoryListGrowing")[0]
    rows = [line.split("\t") for line in capture_file(stack, capture, "1-innodb-trx.tsv").splitlines()]
    held = [dict(zip(rows[0], row)) for row in rows[1:] if row[0] == trx_id]
    assert held and int(held[0]["age_seconds"]) > 60, rows[:3]


def test_stopping_the_exporter_fires_the_down_alert_and_silences_the_others(stack, held_transaction):
    assert firing(stack, "InnoDBHistoryListGrowing")
    stack.services["innodb_exporter"].stop()
    wait_for(lambda: in_alertmanager(stack, "InnoDBExporterDown"), 120, interval=2,
             what="InnoDBExporterDown in Alertmanager")
    down = in_alertmanager(stack, "InnoDBExporterDown")[0]
    assert down["labels"]["instance"] == stack.s.address("mariadb")
    # The history alert reads a window of past samples, so it still fires; Alertmanager holds it back.
    suppressed = in_alertmanager(stack, "InnoDBHistoryListGrowing", "suppressed")
    assert suppressed and suppressed[0]["status"]["inhibitedBy"] == [down["fingerprint"]]
    others = [a for a in alertmanager_alerts(stack) if a["labels"].get("instance") == down["labels"]["instance"]
              and a["labels"]["alertname"] != "InnoDBExporterDown"]
    assert all(a["status"]["state"] == "suppressed" for a in others), [(a["labels"], a["status"]) for a in others]
