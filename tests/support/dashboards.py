"""Every query of every dashboard panel against a live Prometheus (or anything answering its query API),
with the dashboard variables substituted as Grafana would (dashboards/preview.py does it the same way).

A panel or a series that cannot have data on MariaDB says so in its description ("No data on MariaDB:",
"No '<legend>' on MariaDB:") and, where the data would be, by the exporter's statement of the reason
(innodb_exporter_metric_absent, a legend row or a stat's value, which must answer here) or a no-value text;
``check_panels`` holds the panels to exactly that.
"""

from __future__ import annotations

import glob
import json
import os
import time
from dataclasses import dataclass, field

from dashboards import preview
from dashboards.common import ABSENT, NOTHING_EARLIER_LEGEND

from .golden import TESTS

ROOT = os.path.dirname(TESTS)


def dashboards() -> list[dict]:
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "dashboards", "grafana", "*.json"))):
        with open(path, encoding="utf-8") as f:
            out.append(json.load(f))
    return out


def panel_queries() -> list[tuple[str, dict, dict]]:
    """(where, panel, target) for every panel query of every dashboard."""
    return [(f"{d['uid']} / {p['title']}", p, t) for d in dashboards() for p in d["panels"] for t in p["targets"]]


@dataclass
class PanelCheck:
    panels: int = 0
    empty_panels: list[str] = field(default_factory=list)  # panels without data
    declared_empty: list[str] = field(default_factory=list)  # panels that say they have none on MariaDB
    problems: list[str] = field(default_factory=list)


def query(url: str, target: dict, values: dict, range_s: int, step: int) -> dict:
    """The target as Grafana asks for it: over the range, or at its end when it is an instant query."""
    expr, end = preview.substitute(target["expr"], values), time.time()
    if target.get("instant"):
        return preview.query_instant(url, expr, end)
    return preview.query_range(url, expr, end - range_s, end, step)


def check_panels(url: str, instance: str, range_s: int, step: int, offset: str) -> PanelCheck:
    """Every panel query over the last ``range_s`` seconds: each evaluates, and has data unless its panel says
    it cannot on MariaDB."""
    values = preview.variables(instance, range_s, step, offset)
    check = PanelCheck()
    for dashboard in dashboards():
        for panel in dashboard["panels"]:
            check.panels += 1
            where = f"{dashboard['uid']} / {panel['title']}"
            description = panel["description"]
            panel_declared = "No data on MariaDB:" in description
            if panel_declared:
                check.declared_empty.append(where)
            with_data, instants = 0, []
            for target in panel["targets"]:
                answer = query(url, target, values, range_s, step)
                if answer.get("status") != "success":
                    check.problems.append(f"{where}: {target['expr']} failed: {answer.get('error')}")
                    continue
                if target.get("instant"):  # one query per value the stat can show: one of them answers
                    instants.append(bool(answer["data"]["result"]))
                    continue
                if ABSENT in target["expr"]:  # the exporter's reason for a series declared absent on MariaDB
                    if not answer["data"]["result"]:
                        check.problems.append(f"{where}: the exporter gives no reason for '{target['legendFormat']}'")
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
                    check.problems.append(f"{where}: no data for '{target['legendFormat']}': {target['expr']}")
            if instants and instants.count(True) != 1:
                check.problems.append(f"{where}: {instants.count(True)} of its instant queries answer, not one")
            if with_data == 0 and not instants:
                check.empty_panels.append(where)
            elif panel_declared:
                check.problems.append(f"{where} says it has no data on MariaDB, but it has")
    return check
