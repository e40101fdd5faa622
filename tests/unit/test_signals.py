"""The query helper and the signals: every selector, window and offset is written by the helper."""

from __future__ import annotations

import glob
import os
import re

import pytest

from signals import CONFIG, panel_context, rule_context
from signals import innodb as s
from signals.promql import binary, innodb, max_without, node, rate, series, top_over_range
from support.golden import TESTS

ROOT = os.path.dirname(TESTS)


def test_a_signal_renders_for_a_rule_a_panel_and_an_earlier_window():
    latency = s.REDO_FSYNC_LATENCY
    assert latency.render(rule_context(CONFIG, "5m")) == (
        'rate(innodb_redo_file_misc_seconds_total{job="innodb"}[5m]) / rate(innodb_redo_file_misc_operations_total{job="innodb"}[5m])'
        ' or max without (stat) (avg_over_time(innodb_redo_fsync_latency_seconds{job="innodb",stat="avg"}[5m]))')
    assert latency.render(panel_context()) == (
        'rate(innodb_redo_file_misc_seconds_total{job="innodb",instance="$instance"}[$__rate_interval])'
        ' / rate(innodb_redo_file_misc_operations_total{job="innodb",instance="$instance"}[$__rate_interval])'
        ' or max without (stat) (avg_over_time('
        'innodb_redo_fsync_latency_seconds{job="innodb",instance="$instance",stat="avg"}[$__rate_interval]))')
    earlier = latency.render(panel_context(offset="$offset"))
    assert earlier.count(" offset $offset") == 3 == earlier.count("}[")


def test_records_are_named_by_their_window_and_referred_to_bare_in_rules():
    window = CONFIG["record_rate_window"]
    assert s.REDO_WRITTEN.record_name(CONFIG) == f"instance:innodb_redo_written_bytes:rate{window}"
    shorter = dict(CONFIG, alert_rate_window="2m")
    assert s.FREE_PAGE_WAITS.record_name(shorter) == "instance:innodb_free_page_waits:rate2m"
    assert (s.CHECKPOINT_AGE_RATIO.recorded(CONFIG) > 0.75).render(rule_context(CONFIG)) == \
        "instance:innodb_checkpoint_age:ratio > 0.75"
    with pytest.raises(ValueError):
        s.HISTORY_LENGTH.record_name(CONFIG)


def test_binary_operators_are_parenthesised_by_precedence():
    a, b, c = innodb("a"), innodb("b"), innodb("c")
    ctx = rule_context(CONFIG)
    assert ((a + b) / c).render(ctx) == '(a{job="innodb"} + b{job="innodb"}) / c{job="innodb"}'
    assert (a + b / c).render(ctx) == 'a{job="innodb"} + b{job="innodb"} / c{job="innodb"}'
    assert (a - (b - c)).render(ctx) == 'a{job="innodb"} - (b{job="innodb"} - c{job="innodb"})'
    assert ((a > 1) & (b > 0) | c).render(ctx) == 'a{job="innodb"} > 1 and b{job="innodb"} > 0 or c{job="innodb"}'
    assert (a & (b | c)).render(ctx) == 'a{job="innodb"} and (b{job="innodb"} or c{job="innodb"})'
    assert binary(a, "/", b, "ignoring(state)").render(ctx) == 'a{job="innodb"} / ignoring(state) b{job="innodb"}'
    assert max_without(("kind",), a).render(ctx) == 'max without (kind) (a{job="innodb"})'


def test_each_source_has_its_job_and_alerts_have_none():
    ctx = panel_context()
    assert node("up").render(ctx) == 'up{job="node",instance="$instance"}'
    assert series("ALERTS", 'alertstate="firing"').render(ctx) == 'ALERTS{instance="$instance",alertstate="firing"}'
    with pytest.raises(TypeError):
        rate(rate(innodb("x_total")))


def test_top_over_range_ranks_once_for_the_whole_range_and_shifts_with_the_offset():
    top = top_over_range(10, innodb("innodb_latch_waits_total"), ("kind", "name"))
    assert top.render(panel_context(offset="$offset")) == (
        'rate(innodb_latch_waits_total{job="innodb",instance="$instance"}[$__rate_interval] offset $offset)'
        ' and on (kind, name) topk(10, rate(innodb_latch_waits_total{job="innodb",instance="$instance"}'
        '[$__range] @ end() offset $offset))')


# A selector typed into a string: a metric name followed by a label matcher, a rate window or an offset.
HAND_WRITTEN = re.compile(r"""["'][^"'\n]*(\b[a-z_:]+\{[a-z_]+=|\[(\$__rate_interval|\d+[smhd])\]|\boffset \$)""")


def test_no_selector_window_or_offset_is_written_by_hand():
    sources = [os.path.join(ROOT, "alerts", "mixin.py"), *glob.glob(os.path.join(ROOT, "dashboards", "*.py")),
               *glob.glob(os.path.join(ROOT, "signals", "*.py"))]
    found = []
    for path in sources:
        if os.path.basename(path) in ("promql.py", "preview.py"):  # the helper itself, and the drawing tool
            continue
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if HAND_WRITTEN.search(line):
                    found.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_the_pattern_would_see_a_hand_written_selector():
    for line in ('q("rate(x_total{job=\\"innodb\\"}[5m])")', "e = 'innodb_up[$__rate_interval]'",
                 'f"x offset $offset"'):
        assert HAND_WRITTEN.search(line), line


# --- the next bottleneck ---------------------------------------------------------------------------

def test_thresholds_the_exporter_also_judges_by_are_declared_once_below_both():
    from innodb_tuning import THRESHOLDS

    shared = {"pending_io_high": "pending_io", "history_high": "history",
              "long_transaction_seconds": "long_transaction_seconds",
              "latch_waiting_threads": "latch_waiting_threads", "lock_wait_share": "lock_wait_share"}
    with open(os.path.join(ROOT, "signals", "config.py"), encoding="utf-8") as f:
        source = f.read()
    for key, field in shared.items():
        assert CONFIG[key] == getattr(THRESHOLDS, field)
        assert re.search(rf'"{key}": THRESHOLDS\.{field},', source), f"{key} is not taken from innodb_tuning"


def test_classes_are_in_their_order_of_precedence_each_with_a_reason_and_required_evidence():
    from signals import bottleneck as b

    assert [c.code for c in b.CLASSES] == list(range(1, len(b.CLASSES) + 1))
    assert all(c.why for c in b.CLASSES)
    measures = b.evidence(CONFIG)
    assert set(measures) | {"latch"} == {c.key for c in b.CLASSES}
    for key, evidence in measures.items():
        assert any(m.required for m in evidence), key
    assert (b.HEALTHY, b.UNKNOWN) == (0, -1) and b.HEALTHY_CLASS.code == 0 and b.UNKNOWN_CLASS.code == -1


def test_a_class_is_not_decidable_rather_than_clear_where_its_evidence_is_missing():
    """A class's 0 exists only where every required measure exists (an `and` of them all); elsewhere -1."""
    from signals import bottleneck as b

    ctx = rule_context(CONFIG, "1m")
    for key, measures in b.evidence(CONFIG).items():
        state = b.classify(measures)
        assert state.op == "or" and state.right.render(ctx) == 'max by (instance) (innodb_up{job="innodb"}) * 0 - 1'
        decided, required = state.left.right, [m for m in measures if m.required]
        conjuncts = []
        while decided.op == "and":
            conjuncts.append(decided.right)
            decided = decided.left
        conjuncts.append(decided.left)  # the first, times 0
        assert decided.op == "*" and decided.right.value == 0, key
        assert sorted(c.render(ctx) for c in conjuncts) == sorted(m.holds.render(ctx) for m in required), key
