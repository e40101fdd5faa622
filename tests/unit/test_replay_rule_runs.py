"""innodb-replay import computes the recording rules a bundle lacks, in as many promtool runs as their
dependencies need (promtool cannot read a rule's output in the run that computes it)."""

from __future__ import annotations

import os

import pytest
import yaml

from innodb_replay import cli
from innodb_replay.importer import ReplayImportError, missing_rule_runs, read_rules, write_rules
from support.golden import TESTS

RULES = os.path.join(os.path.dirname(TESTS), "alerts", "rules")
STACK_RULES = [os.path.join(RULES, "recording.yml"), os.path.join(RULES, "bottleneck.yml")]
STATE, WINNER = "instance_class:innodb_bottleneck:state", "instance:innodb_bottleneck:class"


def names(run):
    return [(r["record"], r.get("labels", {}).get("class")) for r in run]


def test_a_recorded_bundle_gets_every_rule_the_classes_first_then_what_reads_them():
    runs = missing_rule_runs(read_rules(STACK_RULES), present={"innodb_up", "node_cpu_seconds_total"})
    first = names(runs[0])
    assert ("instance:innodb_checkpoint_age:ratio", None) in first
    assert [c for r, c in first if r == STATE] == ["redo", "write_io", "free_pages", "read_io", "latch",
                                                    "transactions", "purge", "host"]
    # healthy is recorded under the states' name and reads it: after the classes; the winner reads that name too.
    assert names(runs[1]) == [(STATE, "healthy")] and names(runs[2]) == [(WINNER, None)] and len(runs) == 3


def test_an_export_that_carries_the_recording_rules_gets_only_the_bottleneck():
    with open(STACK_RULES[0], encoding="utf-8") as f:
        recorded = {r["record"] for g in yaml.safe_load(f)["groups"] for r in g["rules"]}
    runs = missing_rule_runs(read_rules(STACK_RULES), present=recorded | {"innodb_up"})
    assert {r["record"] for run in runs for r in run} == {STATE, WINNER}
    assert missing_rule_runs(read_rules(STACK_RULES), present=recorded | {STATE, WINNER}) == []


def test_a_name_inside_another_name_is_no_dependency_and_a_cycle_is_refused(tmp_path):
    rules = [{"record": "a:x:ratio", "expr": "b:x:ratio_total + 1"}, {"record": "b:x:ratio", "expr": "up"},
             {"record": "c:x:sum", "expr": "a:x:ratio * 2"}]
    path = write_rules(rules, str(tmp_path / "rules.yml"))
    assert [[r["record"] for r in run] for run in missing_rule_runs(read_rules([path]), set())] == \
        [["a:x:ratio", "b:x:ratio"], ["c:x:sum"]]
    cycle = write_rules([{"record": "a:y:z", "expr": "b:y:z"}, {"record": "b:y:z", "expr": "a:y:z"}],
                        str(tmp_path / "cycle.yml"))
    with pytest.raises(ReplayImportError, match="cycle"):
        missing_rule_runs(read_rules([cycle]), set())


def test_the_default_rules_are_the_checkout_s_wherever_import_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert [os.path.realpath(p) for p in cli.DEFAULT_RULES] == [os.path.realpath(p) for p in STACK_RULES]


@pytest.mark.parametrize("content, reason", [(None, "No such file"), ("groups: [", "not a Prometheus rule file"),
                                             ("just text", "not a Prometheus rule file")])
def test_a_rules_file_that_cannot_be_read_is_named(tmp_path, content, reason):
    path = tmp_path / "rules.yml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ReplayImportError, match=f"--rules {path}: {reason}"):
        read_rules([str(path)])
