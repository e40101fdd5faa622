"""The name contract, without servers: every metric name the signals, the rules and the dashboards use is
a family our exporter declares, a recording rule the rules declare, or on signals/external.py's lists of
what mysqld_exporter, node_exporter and Prometheus give."""

from __future__ import annotations

import json
import re

import pytest

from innodb_exporter.capture import service as capture
from innodb_exporter.metrics import counters, model, settings
from innodb_exporter.metrics.counter_types import TYPES
from innodb_exporter.scraping import health
from alerts import mixin
from dashboards import generate
from signals import CONFIG, Signal, bottleneck, external, host, impact, innodb, panel_context

_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
             "group_right", "inf", "nan", "atan2"}
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MODIFIERS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NUMBERS = re.compile(r"(?<![\w:])\d[\w.]*")  # numbers and durations: 0.75, 1e3, 5m
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def metric_names(promql: str) -> set[str]:
    """The metric names a PromQL expression (or a Grafana query) selects."""
    text = re.sub(r"\blabel_values\(\s*([^,()]*?)\s*(?:,\s*\w+\s*)?\)", r"\1", promql)  # Grafana's variable query
    text = _STRINGS.sub(" ", text)
    text = re.sub(r"\$\{?\w+\}?", " ", text)  # Grafana variables
    text = re.sub(r"\{[^{}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\[\]]*\]", " ", text)  # ranges and subqueries
    text = _MODIFIERS.sub(" ", text)
    text = _NUMBERS.sub(" ", text)
    out = set()
    for match in _NAME.finditer(text):
        following = text[match.end():].lstrip()
        if match.group() not in _KEYWORDS and not following.startswith("("):
            out.add(match.group())
    return out


def test_metric_names_reads_selectors_not_functions_labels_or_numbers():
    assert metric_names('sum by (instance) (rate(a_total{job="x",b=~"c|d"}[5m] offset $offset)) / on (instance) '
                        'group_left () max_over_time(b:c:d{instance="$instance"}[${__range}]) > bool 0.75e3 '
                        'or label_replace(vector(1), "x", "$1", "y", "(.*)") unless ALERTS') == {"a_total", "b:c:d",
                                                                                                     "ALERTS"}
    assert metric_names("label_values(innodb_up{job=\"innodb\"}, instance)") == {"innodb_up"}


def exporter_families() -> set[str]:
    declared = {m.family.name for m in model.METRICS} | {f.name for f in health.FAMILIES} | \
        {f.name for f in capture.FAMILIES} | {f.name for f in settings.FAMILIES}
    # Every INNODB_METRICS counter becomes innodb_metrics_<name>, typed by counter_types.
    return declared | {counters.metric_name(name, kind) for name, kind in TYPES.items()}


# What the code makes now, not the committed files: a name misspelt in the code fails here at once
# (tests/unit/test_generated.py holds the committed files to the code).
RULES = mixin.build(CONFIG)
DASHBOARDS = {name: json.loads(text) for name, text in generate.dashboards().items()}


def recording_rules() -> set[str]:
    return {rule["record"] for content in RULES.values() for group in content["groups"] for rule in group["rules"]
            if "record" in rule}


def _rule_queries():
    for name, content in RULES.items():
        for group in content["groups"]:
            for rule in group["rules"]:
                yield f"alerts/rules/{name}: {rule.get('alert') or rule['record']}", rule["expr"]


def _dashboard_queries():
    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("expr", "query") and isinstance(value, str):
                    yield where, value
                elif key == "query" and isinstance(value, dict) and isinstance(value.get("query"), str):
                    yield where, value["query"]
                else:
                    yield from walk(value, where)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item, where)

    for name, data in sorted(DASHBOARDS.items()):
        for panel in data.get("panels", []):
            yield from walk(panel.get("targets", []), f"{name}: {panel.get('title')!r}")
        for variable in data.get("templating", {}).get("list", []):
            if variable.get("type") == "query":  # not the data source variable
                yield from walk({"variable": variable}, f"{name}: ${variable['name']}")
        yield from walk(data.get("annotations", {}), f"{name}: annotations")


def _signal_queries():
    for module in (innodb, host, bottleneck):
        for attribute, value in vars(module).items():
            if isinstance(value, Signal):
                yield f"signals/{module.__name__.split('.')[-1]}.py: {attribute}", value.render(panel_context(CONFIG))


def _impact_queries():
    """What innodb-replay impact sends (figures.json)."""
    doc = impact.document()
    for figure in doc["figures"]:
        yield f"signals/impact.py: {figure['key']}", figure["expr"]
    for c in doc["bottleneck"]["classes"]:
        yield f"signals/impact.py: class {c['key']}", c["expr"]
    for key in ("changes", "starts", "up", "instances"):
        yield f"signals/impact.py: {key}", doc[key]


QUERIES = list(_rule_queries()) + list(_dashboard_queries()) + list(_signal_queries()) + list(_impact_queries())


def test_there_are_queries_from_every_place():
    places = {where.split(":")[0].split("/")[0] for where, _ in QUERIES}
    assert {"alerts", "signals"} <= places and any(p.endswith(".json") for p in places)
    assert len(QUERIES) > 200


@pytest.mark.parametrize("where,query", QUERIES, ids=[where for where, _ in QUERIES])
def test_every_name_used_is_declared(where, query):
    known = exporter_families() | set(recording_rules()) | set(external.MYSQLD_EXPORTER) | \
        set(external.NODE_EXPORTER) | set(external.PROMETHEUS)
    unknown = sorted(metric_names(query) - known)
    assert not unknown, f"{where} uses {unknown}, which nothing declares (query: {query[:300]})"
