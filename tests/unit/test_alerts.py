"""The rules: current with their generator, valid, unit-tested alert by alert, each with a runbook."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import yaml

from signals import CONFIG
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


def test_overrides_go_through_the_config_only(tmp_path):
    subprocess.run([sys.executable, os.path.join(ALERTS, "mixin.py"), "--out", str(tmp_path),
                    "--set", "history_high=500", "--set", "history_for=30s"], check=True)
    growing = [r for r in rules(str(tmp_path)) if r.get("alert") == "InnoDBHistoryListGrowing"][0]
    assert "> 500" in growing["expr"] and growing["for"] == "30s"
    bad = subprocess.run([sys.executable, os.path.join(ALERTS, "mixin.py"), "--out", str(tmp_path),
                          "--set", "no_such_threshold=1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "no_such_threshold" in bad.stderr


def test_runbook_links_are_absolute_and_built_from_one_setting(tmp_path):
    for rule in rules():
        if "alert" in rule:
            url = rule["annotations"]["runbook_url"]
            assert url == f"{CONFIG['runbook_base_url']}#{rule['alert'].lower()}" and url.startswith("https://")
    base = "https://git.example.org/dba/innodb-stack/-/blob/main/docs/runbooks.md"
    subprocess.run([sys.executable, os.path.join(ALERTS, "mixin.py"), "--out", str(tmp_path),
                    "--set", f"runbook_base_url={base}"], check=True)
    assert {r["annotations"]["runbook_url"] for r in rules(str(tmp_path)) if "alert" in r} == \
        {f"{base}#{r['alert'].lower()}" for r in rules() if "alert" in r}


def test_job_selectors_come_from_the_config(tmp_path):
    subprocess.run([sys.executable, os.path.join(ALERTS, "mixin.py"), "--out", str(tmp_path),
                    "--set", 'innodb_selector=job="db-innodb"'], check=True)
    changed = rules(str(tmp_path))
    assert not any('job="innodb"' in r["expr"] for r in changed)
    assert sum('job="db-innodb"' in r["expr"] for r in changed) == sum('job="innodb"' in r["expr"] for r in rules())


def test_every_selector_of_every_rule_carries_the_job_selector():
    for rule in rules():
        selectors = re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*\{[^}]*\}", rule["expr"])
        assert selectors or ":" in rule["expr"], rule["expr"]  # or it reads recording rules only
        for selector in selectors:
            if ":" in selector.split("{")[0]:  # another rule's output: selected by its own labels
                continue
            # The host's series (the bottleneck's host class, REDO's device fallback) come from the node job.
            job = 'job="node"' if re.match(r"node_", selector) or "redo_device" in selector else 'job="innodb"'
            assert job in selector, f"{selector} in {rule['expr']}"


def test_warning_and_critical_levels_differ_only_in_threshold_and_duration():
    by_name = {}
    for rule in rules():
        if "alert" in rule:
            by_name.setdefault(rule["alert"], []).append(rule)
    pairs = {name: levels for name, levels in by_name.items() if len(levels) == 2}
    assert set(pairs) == {"InnoDBCheckpointAgeHigh", "InnoDBSemaphoreWaitLong"}
    for name, (warning, critical) in pairs.items():
        assert (warning["labels"]["severity"], critical["labels"]["severity"]) == ("warning", "critical")
        w_expr, w_threshold = warning["expr"].rsplit(" > ", 1)
        c_expr, c_threshold = critical["expr"].rsplit(" > ", 1)
        assert w_expr == c_expr and float(w_threshold) < float(c_threshold), name


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


# --- the next bottleneck ---------------------------------------------------------------------------

def _bottleneck_cases():
    """Case (instance) -> {class: state}, and -> winner, as alerts/tests/bottleneck_test.yml expects them."""
    with open(os.path.join(ALERTS, "tests", "bottleneck_test.yml"), encoding="utf-8") as f:
        test = yaml.safe_load(f)["tests"][0]
    states, winners = {}, {}
    for case in test["promql_expr_test"]:
        for sample in case["exp_samples"]:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', sample["labels"]))
            if sample["labels"].startswith("instance:"):
                winners[labels["instance"]] = sample["value"]
            else:
                states.setdefault(labels["instance"], {})[labels["class"]] = sample["value"]
    return states, winners


def test_every_class_is_shown_holding_and_clear_and_undecidable_where_a_flavour_lacks_it():
    from signals import bottleneck as b

    states, winners = _bottleneck_cases()
    for c in b.CLASSES:
        seen = {case[c.key] for case in states.values()}
        assert {0, 1, -1} <= seen, f"{c.key}: {seen}"
        assert any(w == c.code for w in winners.values()), f"{c.key} never wins"
    assert {0, 1, -1} <= {case["healthy"] for case in states.values()} and {0, -1} <= set(winners.values())


def test_the_precedence_is_shown_for_every_neighbouring_pair():
    from signals import bottleneck as b

    states, winners = _bottleneck_cases()
    for higher, lower in zip(b.CLASSES, b.CLASSES[1:]):
        both = [case for case, s in states.items() if s[higher.key] == 1 and s[lower.key] == 1]
        assert any(winners[case] == higher.code for case in both), f"no case shows {higher.key} over {lower.key}"


def test_the_winner_is_the_first_class_that_holds_in_every_case():
    from signals import bottleneck as b

    states, winners = _bottleneck_cases()
    for case, s in states.items():
        holding = [c.code for c in b.CLASSES if s[c.key] == 1]
        expected = holding[0] if holding else min(s[c.key] for c in b.CLASSES)
        assert winners[case] == expected and s["healthy"] == (0 if holding else 1 if expected == 0 else -1), case


def test_the_bottleneck_rules_read_only_exported_series_and_the_winner_reads_their_states():
    """promtool create-blocks-from rules (replay) cannot read another rule's output in the same run: the
    classes must be computable in one run, the winner and healthy in a second."""
    with open(os.path.join(ALERTS, "rules", "bottleneck.yml"), encoding="utf-8") as f:
        group = yaml.safe_load(f)["groups"][0]["rules"]
    recorded = {r["record"] for r in rules() if "record" in r}
    classes, second = group[:8], group[8:]
    assert [r["labels"]["class"] for r in classes] == ["redo", "write_io", "free_pages", "read_io", "latch",
                                                       "transactions", "purge", "host"]
    for rule in classes:
        assert not any(name in rule["expr"] for name in recorded), rule["labels"]
    assert all("instance_class:innodb_bottleneck:state" in r["expr"] for r in second)


def test_every_class_has_a_runbook_section():
    from signals import bottleneck as b

    with open(os.path.join(ROOT, "docs", "runbooks.md"), encoding="utf-8") as f:
        headings = re.findall(r"^## (Bottleneck: .+)$", f.read(), re.M)
    slugs = {"".join(ch for ch in h.lower().replace(" ", "-") if ch.isalnum() or ch in "-_") for h in headings}
    for c in b.CLASSES + (b.HEALTHY_CLASS, b.UNKNOWN_CLASS):
        assert b.runbook_anchor(c) in slugs, f"docs/runbooks.md has no '## Bottleneck: {c.name}'"
