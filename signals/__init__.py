"""The vocabulary shared by the rules (alerts/mixin.py) and the dashboards (dashboards/): one
configuration, a query helper that writes every selector, window and offset, and the signals an alert
and its panel both refer to (the idea of grafana/jsonnet-libs ``signals/``, in Python).
"""

from __future__ import annotations

from .config import CONFIG
from .promql import Context
from .signal import Signal

__all__ = ["CONFIG", "Context", "Signal", "rule_context", "panel_context", "RATE_INTERVAL", "OFFSET"]

RATE_INTERVAL = "$__rate_interval"  # Grafana's: at least four scrapes of the data source's interval
OFFSET = "$offset"  # the Compare dashboard's variable


def _jobs(cfg: dict) -> dict:
    return {source: cfg[f"{source}_selector"] for source in ("innodb", "mysqld", "node")}


def rule_context(cfg: dict, window: str | None = None) -> Context:
    """Rules select by job only (each series keeps its instance) and use their own window."""
    return Context(jobs=_jobs(cfg), window=window or cfg["alert_rate_window"])


def panel_context(cfg: dict = CONFIG, offset: str = "") -> Context:
    """Panels select the dashboard's instance, use Grafana's rate interval, and on Compare an offset."""
    return Context(jobs=_jobs(cfg), window=RATE_INTERVAL, instance='instance="$instance"', offset=offset)
