"""The dashboards: current with their code, and valid for Grafana 11 and 12 file provisioning."""

from __future__ import annotations

import glob
import json
import os
import re

import pytest
import yaml

from dashboards import generate
from support.golden import TESTS

ROOT = os.path.dirname(TESTS)
FILES = sorted(glob.glob(os.path.join(ROOT, "dashboards", "*.json")))


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def test_committed_json_is_what_the_code_generates():
    generated = generate.dashboards()
    assert sorted(generated) == sorted(os.path.basename(f) for f in FILES)
    for name, text in generated.items():
        with open(os.path.join(ROOT, "dashboards", name), encoding="utf-8") as f:
            assert f.read() == text, f"dashboards/{name} is stale: python -m dashboards.generate"


def test_uids_are_stable_unique_and_named_after_the_file():
    uids = [load(f)["uid"] for f in FILES]
    assert len(set(uids)) == len(uids)
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
        assert p["type"] in ("timeseries", "stat")
        assert set(p["gridPos"]) == {"h", "w", "x", "y"} and 0 < p["gridPos"]["w"] <= 24
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"], f"{p['title']} has no query"
        refs = [t["refId"] for t in p["targets"]]
        assert len(set(refs)) == len(refs) and all(refs)
        for t in p["targets"]:
            assert t["expr"].strip() and t["legendFormat"].strip(), p["title"]
        assert p["fieldConfig"]["defaults"].get("unit"), f"{p['title']} has no unit"
        assert "Healthy" in p["description"], f"{p['title']}: the description does not say what healthy looks like"


def test_panel_descriptions_name_their_alert_where_one_watches():
    alerts = set()
    for path in glob.glob(os.path.join(ROOT, "alerts", "rules", "*.yml")):
        with open(path, encoding="utf-8") as f:
            alerts |= {r["alert"] for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "alert" in r}
    named = set()
    for path in FILES:
        for p in load(path)["panels"]:
            named |= {a for a in alerts if a in p["description"]}
    assert alerts - named - {"InnoDBCounterDisabled"} == set(), "alerts no panel points to"


def test_grafana_provisioning_points_at_the_dashboards_and_the_fixed_datasource_uid():
    with open(os.path.join(ROOT, "provisioning", "grafana", "datasources", "prometheus.yml")) as f:
        sources = yaml.safe_load(f)["datasources"]
    assert sources[0]["uid"] == "innodb-prometheus" and sources[0]["type"] == "prometheus"
    with open(os.path.join(ROOT, "provisioning", "grafana", "dashboards", "innodb.yml")) as f:
        provider = yaml.safe_load(f)["providers"][0]
    assert provider["folder"] == "InnoDB" and provider["options"]["path"] == "${DASHBOARDS_DIR}"
    with open(os.path.join(ROOT, "docker-compose.yml")) as f:
        grafana = yaml.safe_load(f)["services"]["grafana"]
    assert "./provisioning/grafana:/etc/grafana/provisioning:ro" in grafana["volumes"]
    assert "./dashboards:/var/lib/grafana/dashboards:ro" in grafana["volumes"]
    assert grafana["environment"]["DASHBOARDS_DIR"] == "/var/lib/grafana/dashboards"
