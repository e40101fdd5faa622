"""The links ``import`` prints: the replay Prometheus' graph page, and the dashboards on the bundle's window.

The dashboards and the data source uids come from ``dashboards/index.json``, which the dashboards'
generator writes (``{"datasources": {"prometheus": uid, "replay": uid}, "dashboards": [{"uid", "title"},
...]}``, in the order the tuning procedure reads them): from the repository checkout this package runs
in, or ``--dashboards-index FILE``.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.parse
from dataclasses import dataclass

from innodb_bundle.manifest import Manifest

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # when run from one
CHECKOUT_INDEX = os.path.join(CHECKOUT, "dashboards", "index.json")


class DashboardIndexError(Exception):
    pass


@dataclass(frozen=True)
class DashboardIndex:
    path: str
    replay_datasource: str
    dashboards: tuple[tuple[str, str], ...]  # (uid, title), in reading order


def load_index(path: str) -> DashboardIndex:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise DashboardIndexError(f"cannot read the dashboards index {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise DashboardIndexError(f"the dashboards index {path} is not JSON: {exc}") from None
    try:
        replay = data["datasources"]["replay"]
        dashboards = tuple((d["uid"], d["title"]) for d in data["dashboards"])
    except (KeyError, TypeError):
        raise DashboardIndexError(f"the dashboards index {path} lacks datasources.replay or dashboards[].uid/title") from None
    if not isinstance(replay, str) or not all(isinstance(u, str) and isinstance(t, str) for u, t in dashboards):
        raise DashboardIndexError(f"the dashboards index {path} holds uids or titles that are not text")
    return DashboardIndex(path, replay, dashboards)


def find_index(explicit: str | None) -> DashboardIndex | None:
    """The index named on the command line (which must be readable), else the checkout's, else None."""
    if explicit:
        return load_index(explicit)
    return load_index(CHECKOUT_INDEX) if os.path.exists(CHECKOUT_INDEX) else None


def rate_panels(index_path: str) -> dict[str, list[str]]:
    """job -> "Dashboard: panel" for every panel that takes a rate over Grafana's $__rate_interval of that
    job's series, from the dashboards beside the index (grafana/*.json); empty where there are none."""
    out: dict[str, set[str]] = {}
    folder = os.path.join(os.path.dirname(index_path), "grafana")
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return {}
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        for panel in data.get("panels", []):
            exprs = [t.get("expr", "") for t in panel.get("targets", []) if isinstance(t, dict)]
            for expr in exprs:
                if "$__rate_interval" in expr:
                    for job in re.findall(r'job="([^"]+)"', expr):
                        out.setdefault(job, set()).add(f"{data.get('title')}: {panel.get('title')}")
    return {job: sorted(panels) for job, panels in out.items()}


def dashboard_urls(grafana_url: str, index: DashboardIndex, manifest: Manifest,
                   instance: str | None) -> list[tuple[str, str]]:
    """(title, URL) of each dashboard on the bundle's window, with the replay data source selected."""
    params = {"from": manifest.window_start_ms, "to": manifest.window_end_ms, "var-datasource": index.replay_datasource}
    if instance:
        params["var-instance"] = instance
    query = urllib.parse.urlencode(params)
    base = grafana_url.rstrip("/")
    return [(title, f"{base}/d/{urllib.parse.quote(uid)}?{query}") for uid, title in index.dashboards]


def prometheus_graph_url(prometheus_url: str, manifest: Manifest) -> str:
    """Prometheus' graph page on the bundle's window."""
    seconds = max(60, (manifest.window_end_ms - manifest.window_start_ms) // 1000)
    end = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(manifest.window_end_ms / 1000))
    params = {"g0.expr": "innodb_up", "g0.tab": "0", "g0.range_input": f"{seconds}s", "g0.end_input": end}
    return f"{prometheus_url}/graph?{urllib.parse.urlencode(params)}"
