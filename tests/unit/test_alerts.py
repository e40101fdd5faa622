"""The rules: current with their generator, valid, unit-tested alert by alert, each with a runbook."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import yaml

from support.golden import TESTS

ROOT = os.path.dirname(TESTS)
ALERTS = os.path.join(ROOT, "alerts")


def rules(directory=os.path.join(ALERTS, "rules")):
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*.yml"))):
        with open(path, encoding="utf-8") as f:
            for group in yaml.safe_load(f)["groups"]:
                out.extend(group["rules"])
    return out


def test_committed_rules_are_what_the_mixin_generates(tmp_path):
    subprocess.run([sys.executable, os.path.join(ALERTS, "mixin.py"), "--out", str(tmp_path)], check=True)
    committed = sorted(os.listdir(os.path.join(ALERTS, "rules")))
    assert sorted(os.listdir(tmp_path)) == committed
    for name in committed:
        with open(os.path.join(ALERTS, "rules", name), encoding="utf-8") as a, open(tmp_path / name, encoding="utf-8") as b:
            assert a.read() == b.read(), f"alerts/rules/{name} is stale: python alerts/mixin.py"


def test_overrides_go_through_the_config_only(tmp_path):
    subprocess.run([sys.executable, os.path.join(ALERTS, "mixin.py"), "--out", str(tmp_path),
                    "--set", "history_high=500", "--set", "history_for=30s"], check=True)
    growing = [r for r in rules(str(tmp_path)) if r.get("alert") == "InnoDBHistoryListGrowing"][0]
    assert "> 500" in growing["expr"] and growing["for"] == "30s"
    bad = subprocess.run([sys.executable, os.path.join(ALERTS, "mixin.py"), "--out", str(tmp_path),
                          "--set", "no_such_threshold=1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "no_such_threshold" in bad.stderr


def test_promtool_check_rules(promtool):
    out = subprocess.run([promtool, "check", "rules", *sorted(glob.glob(os.path.join(ALERTS, "rules", "*.yml")))],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_promtool_test_rules(promtool):
    tests = sorted(glob.glob(os.path.join(ALERTS, "tests", "*_test.yml")))
    out = subprocess.run([promtool, "test", "rules", *tests], capture_output=True, text=True, cwd=ALERTS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_alert_and_severity_has_a_firing_test_and_a_silent_one():
    fired, silent = set(), set()
    for path in glob.glob(os.path.join(ALERTS, "tests", "*_test.yml")):
        with open(path, encoding="utf-8") as f:
            for test in yaml.safe_load(f)["tests"]:
                for case in test.get("alert_rule_test", []):
                    if case["exp_alerts"]:
                        fired |= {(a["exp_labels"]["alertname"], a["exp_labels"]["severity"]) for a in case["exp_alerts"]}
                    else:
                        silent.add(case["alertname"])
    alerts = {(r["alert"], r["labels"]["severity"]) for r in rules() if "alert" in r}
    assert alerts - fired == set(), "alerts never shown firing"
    assert {name for name, _ in alerts} - silent == set(), "alerts never shown silent before their `for`"


def test_every_alert_follows_the_mixin_conventions_and_has_a_runbook():
    with open(os.path.join(ROOT, "docs", "runbooks.md"), encoding="utf-8") as f:
        sections = set(re.findall(r"^## (\S+)$", f.read(), re.M))
    for rule in rules():
        if "alert" not in rule:
            assert re.fullmatch(r"[a-z_]+:[a-z_]+:[a-z0-9_]+", rule["record"]), rule["record"]
            continue
        name = rule["alert"]
        assert re.fullmatch(r"InnoDB[A-Z][A-Za-z]+", name)
        assert rule["labels"]["severity"] in ("critical", "warning", "info")
        assert rule["annotations"]["summary"].endswith(".")
        assert "{{ $labels.instance }}" in rule["annotations"]["description"]
        assert rule["annotations"]["runbook_url"].endswith("#" + name.lower())
        assert name in sections, f"docs/runbooks.md has no section for {name}"
