"""Settings changes on the dashboards: a mark on every dashboard at each change, and Compare centred on a
chosen change, its link's times worked out by promtool as Prometheus would for Grafana."""

from __future__ import annotations

import json
import re
import subprocess
from decimal import Decimal

import pytest
import yaml

from dashboards import compare, generate
from dashboards.common import SETTINGS_ANNOTATION
from innodb_exporter.metrics import settings
from innodb_exporter.sources.global_status import SETTINGS_MAX_AGE

DASHBOARDS = {name: json.loads(text) for name, text in generate.dashboards().items()}
MARK = 1000  # the change's mark, in seconds: promtool's series start at 0


def test_every_dashboard_marks_every_settings_change_at_its_time_with_what_changed():
    for name, d in DASHBOARDS.items():
        [mark] = [a for a in d["annotations"]["list"] if a["name"] == SETTINGS_ANNOTATION]
        assert mark["enable"] and mark["useValueForTime"], name
        assert mark["expr"].startswith(settings.LAST_CHANGE.name + '{job="innodb",instance="$instance"}'), name
        assert mark["expr"].endswith("* 1000"), name  # Grafana takes the value as milliseconds
        for label in settings.LAST_CHANGE.labels[:3]:
            assert "{{" + label + "}}" in mark["titleFormat"] + mark["textFormat"], name


def grafana_query_result(labels: dict, value: float, at_ms: int) -> str:
    """The text Grafana's query_result() makes of one sample (the Prometheus data source's
    metric_find_query.ts): the labels in braces, the value, the time in milliseconds."""
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + f"}} {prometheus_float(value)} {at_ms}"


def prometheus_float(value: float) -> str:
    """A sample value as Prometheus' API writes it (strconv 'f', shortest): never an exponent."""
    text = format(Decimal(repr(float(value))), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def js_regex(regex: str) -> re.Pattern:
    """A variable's /regex/ as Python reads it (named groups are spelt (?P<name>...) there)."""
    return re.compile(regex.strip("/").replace("(?<", "(?P<"))


def holds(promtool, tmp_path, expr: str, value: float, series=(), labels: str = "{}") -> None:
    """promtool finds ``expr`` equal to ``value`` at 20m, over ``series``."""
    case = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": list(series),
        "promql_expr_test": [{"expr": expr, "eval_time": "20m", "exp_samples": [{"labels": labels, "value": value}]}]}]}
    (tmp_path / "case.yml").write_text(yaml.safe_dump(case))
    out = subprocess.run([promtool, "test", "rules", "case.yml"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow  # five promtool runs
def test_compare_centred_on_a_change_shows_before_ending_at_it_and_after_from_the_settling_time(promtool, tmp_path):
    d = DASHBOARDS[f"{compare.UID}.json"]
    variables = {v["name"]: v for v in d["templating"]["list"]}
    labels = {"from": "1", "instance": "db1:3306", "job": "innodb", "restart": "0",
              "setting": "innodb_flush_log_at_trx_commit", "to": "2"}
    series = [{"series": settings.LAST_CHANGE.name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}",
               "values": f"_x16 {MARK}x10"}]  # seen at 16m, where it stays
    # The changes in the range, as Grafana lists them: the setting's name, and its mark as the value.
    listing = variables["change"]["query"].removeprefix("query_result(").removesuffix(")")
    listing = listing.replace("$instance", "db1:3306").replace("$__range", "30m")
    holds(promtool, tmp_path, listing, MARK, series, "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}")
    option = js_regex(variables["change"]["regex"]).search(grafana_query_result(labels, MARK, 20 * 60000))
    assert option and option.group("text") == labels["setting"] and float(option.group("value")) == MARK
    # The link's times, as the hidden variables have Prometheus add them up.
    chosen = {"change": option.group("value"), "settle": variables["settle"]["current"]["value"],
              "change_window": variables["change_window"]["current"]["value"]}
    settle, window = float(chosen["settle"]), float(chosen["change_window"])
    times = {"change_from": (MARK + settle) * 1000, "change_to": (MARK + settle + window) * 1000,
             "change_offset": settle + window + compare.MARK_LATE}
    for name, value in times.items():
        expr = variables[name]["query"].removeprefix("query_result(").removesuffix(")")
        for key, text in chosen.items():
            expr = expr.replace("${" + key + "}", text)
        holds(promtool, tmp_path, expr, value)
        option = js_regex(variables[name]["regex"]).search(grafana_query_result({}, value, 20 * 60000))
        assert float(option.group(1)) == value
    before = (times["change_from"] / 1000 - times["change_offset"], times["change_to"] / 1000 - times["change_offset"])
    # The dashed window ends where the change can have been made at the latest, as impact's before does.
    assert before == (MARK - compare.MARK_LATE - window, MARK - compare.MARK_LATE)
    assert compare.MARK_LATE >= SETTINGS_MAX_AGE + 5  # a settings interval and the innodb job's scrape
    link = next(link for link in d["links"] if link["type"] == "link")
    assert "from=${change_from}&to=${change_to}&var-offset=${change_offset}s" in link["url"]
    assert not link["includeVars"] and not link["keepTime"]


def test_a_change_not_chosen_yet_still_gives_valid_queries(promtool, tmp_path):
    variables = {v["name"]: v for v in DASHBOARDS[f"{compare.UID}.json"]["templating"]["list"]}
    expr = variables["change_from"]["query"].removeprefix("query_result(").removesuffix(")")
    holds(promtool, tmp_path, expr.replace("${change}", "").replace("${settle}", "60"), 60000)
