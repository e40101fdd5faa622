"""Past one Prometheus: the native stack with STACK_STORE=victoriametrics, for real.

Prometheus ships every sample with remote_write to a VictoriaMetrics single node; vmalert evaluates the
stack's generated rules, unchanged, against it, writes what it records back into it and alerts through
the stack's Alertmanager beside Prometheus, its alerts told apart by the label alertgroup that vmalert
adds. Every dashboard query is then evaluated against the store's Prometheus-compatible API and compared
with Prometheus' answer over the same window.

The stack is conftest's alerting_stack, which test_stack_e2e.py uses after this module: an 8 MB REDO
under unthrottled sysbench, so that checkpoint age lives near its limit, and the alert's `for` lowered
through alerts/mixin.py --set.
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
from support.golden import TESTS
from support.servers import wait_for

pytestmark = pytest.mark.integration
ROOT = os.path.dirname(TESTS)
ALERT = "InnoDBCheckpointAgeHigh"
# The window both sources are compared over, at the data source's step, and the Compare dashboard's
# $offset: short, so that it fits after vmalert's first recording (vmalert records only from its start).
RANGE, STEP, OFFSET = 60, 15, 30
# VictoriaMetrics answers for the present only after -search.latencyOffset (30 s by default): the
# window ends before that.
SETTLED = 40


@pytest.fixture(scope="module")
def stack(alerting_stack):
    return alerting_stack


def get_json(url: str, **params):
    with urllib.request.urlopen(url + ("?" + urllib.parse.urlencode(params) if params else ""), timeout=30) as r:
        return json.load(r)


def query(stack, service: str, expr: str) -> list[dict]:
    return get_json(stack.s.url(service) + "/api/v1/query", query=expr)["data"]["result"]


def alertmanager_alerts(stack, name: str) -> list[dict]:
    """Alerts Alertmanager holds (active, or suppressed by an inhibition: received either way)."""
    return [a for a in get_json(stack.s.url("alertmanager") + "/api/v2/alerts") if a["labels"]["alertname"] == name]


def test_prometheus_writes_every_job_to_the_store(stack):
    jobs = {"innodb", "mysqld", "node", "prometheus", "alertmanager"}
    wait_for(lambda: {r["metric"]["job"] for r in query(stack, "victoriametrics", "up == 1")} == jobs, 120,
             interval=3, what="every job's `up` in VictoriaMetrics")
    instance = stack.s.address("mariadb")
    stored = query(stack, "victoriametrics", "innodb_up")
    assert [r["metric"] for r in stored] == [{"__name__": "innodb_up", "instance": instance, "job": "innodb"}]
    failed = query(stack, "prometheus", "prometheus_remote_storage_samples_failed_total")
    assert failed and all(float(r["value"][1]) == 0 for r in failed), failed


def test_vmalert_fires_the_checkpoint_age_alert_into_alertmanager(stack):
    instance = stack.s.address("mariadb")

    def vmalert_firing():
        alerts = get_json(stack.s.url("vmalert") + "/api/v1/alerts")["data"]["alerts"] or []
        return [a for a in alerts if a["name"] == ALERT and a["state"] == "firing"]

    fired = wait_for(vmalert_firing, 300, interval=5, what=f"{ALERT} firing in vmalert")[0]
    assert fired["labels"]["instance"] == instance and fired["labels"]["alertgroup"] == "innodb.checkpoint"
    assert float(fired["value"]) > 0.75

    def both_in_alertmanager():
        received = alertmanager_alerts(stack, ALERT)
        ours = [a for a in received if a["labels"].get("alertgroup") == "innodb.checkpoint"]
        prometheus = [a for a in received if "alertgroup" not in a["labels"]]
        return (ours, prometheus) if ours and prometheus else None

    ours, prometheus = wait_for(both_in_alertmanager, 120, interval=3,
                                what=f"{ALERT} from vmalert and from Prometheus in Alertmanager")
    for alert in ours:
        assert alert["labels"]["instance"] == instance and alert["labels"]["job"] == "innodb"
        assert alert["labels"]["severity"] in ("warning", "critical")
        assert alert["generatorURL"].startswith(stack.s.url("vmalert"))
        assert alert["annotations"]["runbook_url"].endswith("#innodbcheckpointagehigh")
        assert instance in alert["annotations"]["description"]
    assert not any(a["generatorURL"].startswith(stack.s.url("vmalert")) for a in prometheus)
    assert not {a["fingerprint"] for a in ours} & {a["fingerprint"] for a in prometheus}
    # The store holds the alert and the recorded series once, as vmalert wrote them: Prometheus' own
    # stay local (write_relabel_configs in write-targets.sh).
    wait_for(lambda: query(stack, "victoriametrics", f'ALERTS{{alertname="{ALERT}",alertstate="firing"}}'), 60,
             interval=3, what="the firing alert's ALERTS series in the store")
    assert query(stack, "victoriametrics", 'ALERTS{alertgroup=""} or ALERTS_FOR_STATE{alertgroup=""}') == []
    # One sample per vmalert evaluation (every 15 s) in the last minute, not two (Prometheus' too).
    evaluations = query(stack, "victoriametrics", "count_over_time(instance:innodb_checkpoint_age:ratio[1m])")
    assert len(evaluations) == 1 and float(evaluations[0]["value"][1]) <= 60 / 15 + 1, evaluations


def test_every_dashboard_query_works_on_the_store(stack):
    """The same series from the store as from Prometheus, query by query, over the same settled window,
    and every panel that does not say it has no data on MariaDB has some."""
    recorded = wait_for(lambda: preview.query_range(stack.s.url("victoriametrics"), "instance:innodb_checkpoint_age:ratio",
                                                    stack.started, time.time(), 5)["data"]["result"], 120, interval=5,
                        what="vmalert's first recording in the store")
    first = float(recorded[0]["values"][0][0])
    end = -(-(first + OFFSET + RANGE) // STEP) * STEP  # the window and its offset after vmalert's start
    wait_for(lambda: time.time() > end + SETTLED, max(0, end + SETTLED - time.time()) + 10, interval=2,
             what="the window to settle in the store")
    values = preview.variables(stack.s.address("mariadb"), RANGE, STEP, f"{OFFSET}s")

    def both(expr: str) -> tuple[dict, dict]:
        expr = preview.substitute(expr, values)
        return tuple(preview.query_range(stack.s.url(source), expr, end - RANGE, end, STEP)
                     for source in ("prometheus", "victoriametrics"))

    queries, problems, differences, empty = 0, [], [], []
    for path in sorted(glob.glob(os.path.join(ROOT, "dashboards", "grafana", "*.json"))):
        with open(path, encoding="utf-8") as f:
            dashboard = json.load(f)
        for panel in dashboard["panels"]:
            with_data = 0
            for target in panel["targets"]:
                queries += 1
                where = f"{dashboard['uid']} / {panel['title']} / {target['legendFormat']}"
                ours, store = both(target["expr"])
                if store.get("status") != "success":
                    problems.append(f"{where}: fails on the store: {store.get('error')}: {target['expr']}")
                    continue
                same, difference = same_series(target["expr"], ours["data"]["result"], store["data"]["result"])
                if not same:
                    problems.append(f"{where}: {difference}: {target['expr']}")
                elif difference:
                    differences.append(f"{where}: {difference}")
                with_data += bool(store["data"]["result"])
            if not with_data and "No data on MariaDB:" not in panel["description"]:
                empty.append(f"{dashboard['uid']} / {panel['title']}")
        for annotation in dashboard["annotations"]["list"]:
            if annotation.get("expr"):  # ALERTS: vmalert's in the store, Prometheus' own in Prometheus
                store = both(annotation["expr"])[1]
                if store.get("status") != "success":
                    problems.append(f"{dashboard['uid']} / annotation {annotation['name']}: {store.get('error')}")
    assert problems == [], "\n".join(problems)
    assert empty == [], f"panels without data that do not say so: {empty}"
    print(f"\n{queries} panel queries: the same series on the store as on Prometheus; MetricsQL differences: "
          + "; ".join(differences))


def same_series(expr: str, ours: list[dict], store: list[dict]) -> tuple[bool, str]:
    """(whether the store answered with the series Prometheus did, which MetricsQL difference it showed).

    Two differences pass, and only these: *_over_time functions keep the metric name on the store (no
    legend shows it), and MetricsQL's rate() does not extrapolate, so a top-10 by rate may pick another
    tenth among near-equal rates (the same number of series, then).
    """
    expected, got = ({frozenset(r["metric"].items()) for r in result} for result in (ours, store))
    if got == expected:
        return True, ""
    unnamed = {labels - {("__name__", dict(labels).get("__name__"))} for labels in got}
    if unnamed == expected:
        return True, "the metric name kept"
    if "topk(" in expr and len(got) == len(expected):
        return True, "another top 10"
    return False, f"only on Prometheus {sorted(map(sorted, expected - got))}, only on the store {sorted(map(sorted, got - expected))}"
