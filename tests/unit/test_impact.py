"""innodb-replay impact on synthetic series, without a Prometheus: a step is found, a flat series is within
noise, another change in the windows is named, a restart is refused unless asked for; the noise band's
arithmetic; the winner of the bottleneck classes; the queries it sends."""

from __future__ import annotations

import json
import math
import random

import pytest

from innodb_exporter.sources.global_status import SETTINGS_MAX_AGE
from innodb_replay import cli, impact
from innodb_replay.impact import ImpactError
from innodb_replay.readings import FIGURES_FILE, Mark, PrometheusReadings, Queries, fill

QUERIES = Queries()
T0 = 1_800_000_000.0  # the change's mark
INSTANCE = "db1:3306"
SCRAPE = 5.0
_random = random.Random(29)
NOISE = [_random.gauss(0, 1) for _ in range(100_003)]  # the same noise on every run


class Synthetic:
    """Readings of one server whose figures follow ``levels`` (figure key -> value before, value after the
    change), each second's value plus Gaussian noise of ``noise`` (a share of the level), seeded by the second:
    the same question always gets the same answer."""

    def __init__(self, levels: dict[str, tuple[float, float]], change_at: float, noise: float = 0.03,
                 marks: tuple[Mark, ...] = (), starts: tuple[float, ...] = (T0 - 86400,), down=()):
        self.levels, self.change_at, self.noise = levels, change_at, noise
        self.marks, self.start_times, self.down = marks, starts, down
        self.asked: list[tuple] = []

    def _value(self, key: str, second: int) -> float:
        before, after = self.levels[key]
        level = before if second < self.change_at else after
        return level * (1 + self.noise * NOISE[(second * 7919 + len(key) * 104729) % len(NOISE)])

    def averages(self, figure, instance, ends, length):
        self.asked.append((figure.key, tuple(ends), length))
        if figure.key not in self.levels:
            return [None] * len(ends)
        return [sum(self._value(figure.key, s) for s in range(int(end - length) + 1, int(end) + 1)) / int(length)
                for end in ends]

    def up_samples(self, instance, start, end):
        out, t = [], math.ceil(start / SCRAPE) * SCRAPE
        while t <= end:
            out.append((t, 0.0 if any(a <= t < b for a, b in self.down) else 1.0))
            t += SCRAPE
        return out

    def starts(self, instance, start, end):
        return [t for t in self.start_times if t <= end]

    def changes(self, instance, start, end, seen_until):
        return [m for m in self.marks if start <= m.at <= end]

    def class_states(self, instance, start, end, step):
        moments = [round((start + i * step) * 1000) for i in range(int((end - start) // step) + 1)]
        redo = {t: 1.0 if t < self.change_at * 1000 else 0.0 for t in moments}
        return {1: redo, 2: {t: 0.0 for t in moments}, 3: {t: -1.0 for t in moments}}


def mark(setting="innodb_flush_log_at_trx_commit", before="1", after="2", at=T0, restart=False) -> Mark:
    return Mark(setting, before, after, at, restart)


def run(readings, change=None, window=600.0, settle=60.0, **kw):
    change = change or mark()
    return impact.measure(readings, QUERIES, INSTANCE, change, change.at, window, settle, T0 + 7200, **kw)


def by_key(result):
    return {r.key: r for r in result.rows}


def test_a_step_in_throughput_is_better_beyond_the_noise_band_and_a_step_in_checkpoint_age_is_worse():
    readings = Synthetic({"transactions": (500, 1500), "queries": (9000, 9000), "checkpoint_age": (0.2, 0.6)}, T0)
    rows = by_key(run(readings))
    tps = rows["transactions"]
    assert tps.verdict == impact.BETTER
    assert tps.change_pct == pytest.approx(200, abs=2)
    assert 0 < tps.noise_pct < 5
    assert rows["checkpoint_age"].verdict == impact.WORSE
    assert rows["queries"].verdict == impact.WITHIN
    assert rows["redo_fsync_latency"].verdict == impact.NOT_MEASURED  # a server that does not time them


def test_a_flat_series_is_within_noise_in_every_figure_however_noisy():
    for noise in (0.01, 0.1, 0.3):
        readings = Synthetic({f.key: (100.0, 100.0) for f in QUERIES.figures if f.unit != "ratio"}, T0, noise)
        rows = run(readings).rows
        assert {r.verdict for r in rows if r.before is not None} == {impact.WITHIN}, noise


def test_before_ends_a_settings_interval_and_a_scrape_before_the_mark_and_after_starts_a_settling_time_after():
    result = run(Synthetic({"transactions": (1, 1)}, T0), mark(at=T0 + 0.0004), window=300, settle=90)
    w = result.windows
    assert w.before[1] == T0 - SETTINGS_MAX_AGE - SCRAPE
    assert w.before[1] - w.before[0] == w.after[1] - w.after[0] == 300
    assert w.after[0] == T0 + 90  # in whole milliseconds
    assert w.batches == 10 and w.batch_ends()[-1] == w.before[1]
    assert "(5m, 90s after the change)" in impact.table(result)  # in whole seconds, whatever the mark's fraction


def test_a_change_made_at_a_given_moment_ends_before_there():
    readings = Synthetic({"transactions": (1, 1)}, T0)
    result = impact.measure(readings, QUERIES, INSTANCE, None, T0, 600, 60, T0 + 7200)
    assert result.windows.before[1] == T0 and result.change is None


def test_another_change_inside_the_windows_is_named():
    other = mark("innodb_io_capacity", "200", "400", T0 + 300)
    late = mark("innodb_lru_scan_depth", "1024", "256", T0 + 60 + 600 + 30)  # made inside after, marked past it
    far = mark("innodb_purge_threads", "4", "8", T0 + 5000)
    readings = Synthetic({"transactions": (1, 1)}, T0, marks=(mark(), other, late, far))
    result = run(readings)
    assert result.confounders == [other, late]
    text = impact.table(result)
    assert "innodb_io_capacity 200 → 400 at" in text and "innodb_purge_threads" not in text


def test_a_restart_inside_the_windows_is_refused_unless_asked_for():
    restart_at = T0 + 200
    readings = Synthetic({"transactions": (100, 100)}, T0, starts=(T0 - 86400, restart_at),
                         down=((restart_at - 20, restart_at),))
    with pytest.raises(ImpactError, match=r"restarted at .*--across-restart"):
        run(readings)
    result = run(readings, across_restart=True)
    assert result.restarts == [restart_at]
    assert "compared across a restart" in impact.table(result)


def test_a_change_across_a_restart_ends_before_with_the_old_servers_last_scrape():
    started = T0
    readings = Synthetic({"transactions": (100, 120)}, T0, starts=(T0 - 86400, started),
                         down=((started - 30, started),))
    change = mark("innodb_buffer_pool_size", "134217728", "268435456", started, restart=True)
    with pytest.raises(ImpactError, match="restarted"):
        run(readings, change)
    result = run(readings, change, across_restart=True)
    assert result.windows.before[1] == started - 30 - SCRAPE  # the last scrape that found it up
    assert result.restarts == [started]  # the mark and the start time gauge name one restart
    assert "(across a restart)" in impact.table(result)


def test_windows_too_short_for_a_band_or_not_over_yet_are_refused_with_what_to_give():
    readings = Synthetic({"transactions": (1, 1)}, T0)
    with pytest.raises(ImpactError, match="--window 90s or more"):
        run(readings, window=60)
    with pytest.raises(ImpactError, match="from now: wait"):
        impact.measure(readings, QUERIES, INSTANCE, mark(), T0, 600, 60, T0 + 300)


def test_the_band_is_t_times_the_spread_of_the_sub_window_means():
    assert impact.band([1.0, 2.0, 3.0]) == pytest.approx(impact.T99[2] * 1.0 * math.sqrt(2 / 3))
    assert impact.band([5.0, 5.0, 5.0, None]) == 0
    assert impact.band([1.0, None, 2.0]) is None  # fewer than three sub-windows with data


def test_verdicts_follow_each_figures_direction():
    assert impact.verdict("higher", 100, 120, 5) == impact.BETTER
    assert impact.verdict("lower", 100, 120, 5) == impact.WORSE
    assert impact.verdict("lower", 0, 0.5, 0) == impact.WORSE  # any free page wait where there was none
    assert impact.verdict("higher", 100, 104, 5) == impact.WITHIN
    assert impact.verdict("higher up to 1", 0.5, 0.9, 0.1) == impact.BETTER
    assert impact.verdict("higher up to 1", 1.2, 2.0, 0.1) == impact.BOTH_FOLLOW
    assert impact.verdict("higher", None, 1, 1) == impact.NOT_MEASURED
    assert impact.verdict("higher", 1, 2, None) == impact.NO_BAND


def test_the_bottleneck_is_the_first_class_that_holds_else_the_lowest_state():
    assert impact.winner({1: 0, 2: 1, 5: 1}) == 2
    assert impact.winner({1: 0, 2: 0}) == 0
    assert impact.winner({1: 0, 2: -1}) == -1
    assert impact.winner({}) is None
    result = run(Synthetic({"transactions": (1, 1)}, T0))
    assert result.classes_before == [(1, 1.0)]
    assert result.classes_after == [(-1, 1.0)]
    assert "REDO bound 100%" in impact.table(result)


def test_the_json_holds_the_table():
    result = run(Synthetic({"transactions": (500, 1500)}, T0))
    doc = json.loads(json.dumps(impact.document(result)))
    tps = next(f for f in doc["figures"] if f["key"] == "transactions")
    assert tps["verdict"] == "better" and doc["noise"]["sub_windows"] == 10
    assert doc["change"]["setting"] == "innodb_flush_log_at_trx_commit"


def test_figures_json_fills_in_the_instance_and_window_and_nothing_else():
    with open(FIGURES_FILE, encoding="utf-8") as f:
        doc = json.load(f)
    assert {f["key"] for f in doc["figures"]} >= {"transactions", "queries", "rows_read", "rows_changed",
                                                  "checkpoint_age", "flush_rate", "free_page_waits",
                                                  "redo_fsync_latency", "history_length"}
    for figure in QUERIES.figures:
        query = fill(figure.expr, 'we"ird\\host:1', 30)
        assert "$" not in query and 'instance="we\\"ird\\\\host:1"' in query and "[30000ms]" in query
    for c in QUERIES.classes:
        assert '"$1"' in fill(c.expr, INSTANCE) or "$" not in fill(c.expr, INSTANCE)


class Answers:
    """A Prometheus API that answers from a table and keeps the queries."""

    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def get(self, path, **params):
        self.asked.append((path, params))
        data = self.answer(path, params)
        return data if path == "/api/v1/series" else {"result": data}


def test_the_latest_change_of_a_setting_is_the_largest_mark_of_its_series():
    readings = PrometheusReadings("http://prometheus.example:9090", QUERIES)
    readings.prometheus = Answers(lambda path, params: [
        {"metric": {"setting": "innodb_io_capacity", "from": "200", "to": "400", "restart": "0"}, "value": [0, "100"]},
        {"metric": {"setting": "innodb_io_capacity", "from": "400", "to": "200", "restart": "0"}, "value": [0, "250"]},
    ])
    latest = readings.latest_change(INSTANCE, "innodb_io_capacity", T0, 86400)
    assert latest == Mark("innodb_io_capacity", "400", "200", 250.0, False)
    [(path, params)] = readings.prometheus.asked
    assert params["query"] == ('max_over_time(innodb_setting_last_change_timestamp_seconds{job="innodb",'
                               'instance="db1:3306",setting="innodb_io_capacity"}[86400s])')


def test_averages_over_sub_windows_are_one_range_query_read_by_time():
    readings = PrometheusReadings("http://prometheus.example:9090", QUERIES)
    readings.prometheus = Answers(lambda path, params: [{"metric": {}, "values": [[100.0, "1"], [130.0, "NaN"]]}])
    figure = QUERIES.figures[0]
    assert readings.averages(figure, INSTANCE, [100.0, 130.0, 160.0], 30) == [1.0, None, None]
    [(path, params)] = readings.prometheus.asked
    assert path == "/api/v1/query_range" and params["step"] == "30.000" and "[30000ms]" in params["query"]


@pytest.mark.parametrize("argv, message", [
    (["impact"], "one of the arguments --setting --at is required"),
    (["impact", "--at", "now", "--window", "ten"], "a duration: 90s, 10m, 1h"),
    (["impact", "--at", "now", "--settle=-1m"], "between 0 and 31 days"),
])
def test_bad_flags_are_refused_with_what_to_give(argv, message, capsys):
    with pytest.raises(SystemExit):
        cli.main(argv)
    assert message in capsys.readouterr().err


def test_an_unreachable_prometheus_is_one_line_naming_it(capsys):
    assert cli.main(["impact", "--setting", "innodb_io_capacity", "--prometheus", "http://127.0.0.1:1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("innodb-replay impact: cannot reach Prometheus at http://127.0.0.1:1") and "\n" == err[-1]


def test_the_server_is_the_only_one_the_prometheus_watches_or_must_be_named():
    readings = PrometheusReadings("http://prometheus.example:9090", QUERIES)
    readings.prometheus = Answers(lambda path, params: [{"__name__": "innodb_up", "instance": "db1:3306"}] * 2)
    assert cli._only_instance(readings, T0) == "db1:3306"
    assert readings.prometheus.asked[0][1]["match[]"] == 'innodb_up{job="innodb"}'
    readings.prometheus = Answers(lambda path, params: [{"instance": "db1:3306"}, {"instance": "db2:3306"}])
    with pytest.raises(ImpactError, match="give --instance, one of db1:3306, db2:3306"):
        cli._only_instance(readings, T0)
    readings.prometheus = Answers(lambda path, params: [])
    with pytest.raises(ImpactError, match="no server"):
        cli._only_instance(readings, T0)
