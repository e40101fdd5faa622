"""Every query of every dashboard panel against a live Prometheus (or anything answering its query API),
with the dashboard variables substituted as Grafana would (dashboards/preview.py does it the same way).

A panel or a series that cannot have data on MariaDB says so in its description ("No data on MariaDB:",
"No '<legend>' on MariaDB:") and, for a panel, in its no-value text; ``check_panels`` holds the panels to
exactly that.
"""

from __future__ import annotations

import glob
import json
import os
import time
from dataclasses import dataclass, field

from dashboards import preview

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


def check_panels(url: str, instance: str, range_s: int, step: int, offset: str) -> PanelCheck:
    """Every panel query over the last ``range_s`` seconds: each evaluates, and has data unless its panel says
    it cannot on MariaDB."""
    values = preview.variables(instance, range_s, step, offset)
    end = time.time()
    check = PanelCheck()
    for dashboard in dashboards():
        for panel in dashboard["panels"]:
            check.panels += 1
            where = f"{dashboard['uid']} / {panel['title']}"
            description = panel["description"]
            panel_declared = "No data on MariaDB:" in description
            if panel_declared:
                check.declared_empty.append(where)
                if "MariaDB" not in panel["fieldConfig"]["defaults"]["noValue"]:
                    check.problems.append(f"{where}: its no-value text does not say MariaDB has no data")
            with_data = 0
            for target in panel["targets"]:
                answer = preview.query_range(url, preview.substitute(target["expr"], values), end - range_s, end, step)
                if answer.get("status") != "success":
                    check.problems.append(f"{where}: {target['expr']} failed: {answer.get('error')}")
                    continue
                if answer["data"]["result"]:
                    with_data += 1
                    continue
                legend = target["legendFormat"].removesuffix(" ($offset earlier)")
                if f"'{legend}' only while" in description:  # a series of what happens, not of the flavour
                    continue
                if not panel_declared and f"No '{legend}' on MariaDB" not in description:
                    check.problems.append(f"{where}: no data for '{target['legendFormat']}': {target['expr']}")
            if with_data == 0:
                check.empty_panels.append(where)
            elif panel_declared:
                check.problems.append(f"{where} says it has no data on MariaDB, but it has")
    return check
