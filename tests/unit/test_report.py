"""``innodb-replay report`` without servers: spans, alerts as Prometheus fires them, the evidence of a
capture read from verbatim texts, the HTML (self-contained, well-formed, hostile text escaped), the
charts' PromQL and the runbook links. A report from a real Prometheus: tests/integration/test_report_live.py."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
import yaml

from alerts import mixin
from innodb_exporter.capture import snapshots
from innodb_replay.cli import main
from innodb_replay.report import build, charts, evidence, incident, page, runbooks
from innodb_replay.report.incident import AlertFired, ChartData, Drawn, Incident, Server, SettingChange, Span
from innodb_tuning import CLASS_NAMES
from signals import CONFIG, bottleneck as b
from support import golden
from support.bundles import START_MS, sound_bundle
from support.html_check import structure

STEP_MS = 15_000


# --- spans and alerts ------------------------------------------------------------------------------

def test_a_sample_stands_until_the_next_and_a_gap_ends_a_span():
    samples = [(0, 7.0), (15_000, 7.0), (30_000, 1.0), (45_000, 1.0), (200_000, 1.0), (215_000, 7.0)]
    got = incident.spans(samples, window_end_ms=220_000)
    assert [(s.start_ms, s.end_ms, s.value) for s in got] == [
        (0, 30_000, 7.0), (30_000, 60_000, 1.0),  # the gap after 45 s is more than 2.5 spacings: it ends there
        (200_000, 215_000, 1.0), (215_000, 220_000, 7.0)]  # the last one stands a spacing, not past the window


@pytest.mark.parametrize("held,for_s,fired", [
    (range(0, 10), 30, range(2, 10)),  # pending at 0, fires once 30 s have passed: from the third evaluation
    (range(0, 10), 0, range(0, 10)),  # no 'for': fires at once
    (range(0, 2), 30, range(0)),  # held for 15 s only: never fires
    ([0, 1, 2, 4, 5, 6, 7], 30, [2, 6, 7]),  # a missed evaluation makes it pending again
])
def test_an_alert_fires_after_its_expression_held_for_its_for(held, for_s, fired):
    times = [n * 15.0 for n in held]
    assert incident.firing(times, for_s, 15) == [n * 15.0 for n in fired]


def test_durations_read_as_prometheus_writes_them():
    assert incident.duration_seconds("1h30m") == 5400 and incident.duration_seconds("15s") == 15
    with pytest.raises(incident.ReportError):
        incident.duration_seconds("5 minutes")


def test_the_metric_names_of_the_stack_s_alerts_are_what_they_select():
    rules = {r["alert"]: r["expr"] for g in mixin.alerting_groups(CONFIG) for r in g["rules"]}
    assert incident.expression_names(rules["InnoDBHistoryListGrowing"]) == {"innodb_history_list_length"}
    assert incident.expression_names(rules["InnoDBCheckpointAgeHigh"]) == {"instance:innodb_checkpoint_age:ratio"}
    assert incident.expression_names(rules["InnoDBFlushingSlow"]) == {"innodb_flush_avg_seconds"}


class FakePrometheus:
    """Answers a range query with what an alert expression returned, and nothing else."""

    def __init__(self, results):
        self.results = results

    def query_range(self, expr, start_s, end_s, step_s):
        return self.results.get(expr, [])


def test_alerts_computed_from_the_rules_fire_after_for_and_name_what_they_lack():
    rules = [{"alert": "HistoryLong", "expr": "innodb_history_list_length > 10", "for": "30s",
              "labels": {"severity": "warning"}},
             {"alert": "NeedsACounter", "expr": "rate(innodb_not_here_total[5m]) > 0", "labels": {"severity": "info"}}]
    held = [(START_MS / 1000 + 15 * n, 11.0) for n in range(8)]
    prometheus = FakePrometheus({rules[0]["expr"]: [{"metric": {"instance": "db1:3306", "job": "innodb"},
                                                     "values": held}]})
    fired, notes = incident.computed_alerts(prometheus, rules, {"innodb_history_list_length"}, START_MS,
                                            START_MS + 600_000, progress=False)
    [alert] = fired["db1:3306"]
    assert (alert.name, alert.severity, alert.labels) == ("HistoryLong", "warning", {})
    assert [(s.start_ms, s.end_ms) for s in alert.spans] == [(START_MS + 30_000, START_MS + 120_000)]
    assert len(notes) == 1 and "NeedsACounter (innodb_not_here_total)" in notes[0]


# --- evidence ----------------------------------------------------------------------------------------

CAPTURE_ID = "20260921T064500.000Z-db1_3306"
HELD = "421337"


def capture_texts(status_fixture: str = "mariadb-10.2.11.txt") -> list[tuple[str, str]]:
    """A capture as export --captures keeps it: a verbatim status text, INNODB_TRX as the exporter writes it."""
    trx = snapshots.render(snapshots.READS[2], [
        ("421990", "RUNNING", "2026-09-21 06:45:00", 2, 41, None, 1, 3, 1, 1, "REPEATABLE READ", "<64 bytes, sha256 1f>"),
        (HELD, "RUNNING", "2026-09-21 06:03:10", 2510, 17, None, 0, 2, 0, 1, "REPEATABLE READ", None)],
        keep_text=True)  # the statement is given as the digest the exporter would have written
    manifest = {"id": CAPTURE_ID, "instance": "db1:3306", "server": "db1:3306", "started": "2026-09-21T06:45:00+00:00",
                "alerts": [{"labels": {"alertname": "InnoDBHistoryListGrowing", "severity": "warning"},
                            "startsAt": "2026-09-21T06:44:30Z"}],
                "query_text": False, "snapshots": [{"number": 1, "at": "2026-09-21T06:45:01+00:00",
                                                    "files": ["1-engine-innodb-status.txt", "1-innodb-trx.tsv"]}],
                "errors": [], "truncated": False}
    return [(f"{CAPTURE_ID}-1-engine-innodb-status.txt", golden.read_status(status_fixture)),
            (f"{CAPTURE_ID}-1-innodb-trx.tsv", trx), (f"{CAPTURE_ID}-capture.json", json.dumps(manifest))]


def test_a_capture_shows_its_oldest_transactions_latches_and_deadlock():
    [capture] = evidence.read(capture_texts())
    assert (capture.instance, capture.alerts) == ("db1:3306", [("InnoDBHistoryListGrowing", "warning")])
    rows, where = capture.longest()
    assert [(t.trx_id, t.seconds, t.thread_id) for t in rows] == [(HELD, 2510, "17"), ("421990", 2, "41")]
    assert where.startswith("INNODB_TRX")
    # MariaDB 10.2.11's SEMAPHORES: 15 threads waiting, most of them for one latch
    status = capture.snapshots[0].status
    by_latch = {}
    for wait in status.semaphores.waits:
        by_latch[wait.latch] = by_latch.get(wait.latch, 0) + 1
    top = max(by_latch.values())
    assert capture.latches()[0][1] == top and capture.latches()[0][0] in by_latch
    deadlock, number = capture.deadlock()
    assert number == 1 and [t.trx_id for t in deadlock.transactions] == ["36258", "36232"]


def test_recorded_status_texts_are_one_capture_and_read_their_transaction_list():
    text = golden.read_status("mysql-5.7.26-semaphores.txt")
    [recorded] = evidence.read([("2026-09-21T06-40-00.000Z-engine-innodb-status.txt", text),
                                ("2026-09-21T06-41-00.000Z-engine-innodb-status.txt", text)])
    assert recorded.recorded and [s.at for s in recorded.snapshots] == ["2026-09-21T06:40:00.000Z",
                                                                         "2026-09-21T06:41:00.000Z"]
    rows, where = recorded.longest()
    assert rows and "statement text can imitate" in where
    assert rows[0].seconds == max(int(a) for a in re.findall(r"ACTIVE (\d+) sec", text))


def test_a_capture_description_that_is_not_json_is_named_and_the_texts_still_read():
    texts = capture_texts()[:2] + [(f"{CAPTURE_ID}-capture.json", '{"instance": ' + "[" * 100_000)]
    [capture] = evidence.read(texts)
    assert capture.problems and capture.snapshots[0].status is not None


# --- the page ----------------------------------------------------------------------------------------

HOSTILE = '</pre></td><script>alert(1)</script><img src="http://evil.example/x.png">\x1b[2J'


def sample_incident(instance: str = "db1:3306") -> Incident:
    start = START_MS
    drawn = [ChartData(chart, 60, [Drawn(line.legend, n, [(start / 1000 + 60 * i, float(i % 7)) for i in range(60)])
                                   for n, line in enumerate(chart.lines)]) for chart in charts.CHARTS]
    server = Server(
        instance,
        classes=[Span(start, start + 900_000, 0), Span(start + 900_000, start + 2_400_000, 7),
                 Span(start + 2_400_000, start + 3_600_000, 6)],
        alerts=[AlertFired("InnoDBHistoryListGrowing", "warning", {}, [Span(start + 1_200_000, start + 3_000_000, 1)]),
                AlertFired("InnoDBLongTransaction", "warning", {"hostile": HOSTILE},
                           [Span(start + 2_500_000, start + 3_600_000, 1)])],
        captures_ms=[start + 1_500_000],
        changes=[SettingChange(start + 3_300_000, "innodb_purge_threads", "4", "8", "0")],
        charts=drawn, peaks=[])
    server.peaks = [incident._peak(peak, drawn) for peak in charts.PEAKS]
    return Incident(start, start + 3_600_000, [server], "ALERTS")


def render(inc: Incident, captures=(), styles=None) -> str:
    meta = page.Meta("the bundle test.zip (export of http://prometheus:9090)", "innodb-replay test",
                     "computed by promtool", styles=styles if styles is not None else build.class_styles())
    return page.render(inc, list(captures), runbooks.load(), meta)


def test_the_report_is_well_formed_and_needs_nothing_from_outside():
    text = render(sample_incident(), evidence.read(capture_texts()))
    checker = structure(text)
    assert checker.errors == [] and checker.stack == [], checker.errors[:5]
    assert not {"script", "link", "iframe", "object", "embed", "img"} & checker.tags
    # Links only within the file, or to the runbooks where they are published.
    assert all(link.startswith("a href=" + CONFIG["runbook_base_url"] + "#") for link in checker.outside), \
        checker.outside
    assert "url(" not in text and "@import" not in text
    assert text.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in text


def test_text_from_the_data_is_shown_never_obeyed():
    inc = sample_incident(instance='db"1<b>')
    texts = [(name, text.replace("DELETE FROM sbtest4", HOSTILE) if name.endswith(".txt") else text)
             for name, text in capture_texts("mariadb-11.4.5.txt")]
    text = render(inc, evidence.read(texts))
    checker = structure(text)
    assert checker.errors == [] and "script" not in checker.tags and "img" not in checker.tags
    assert "\x1b" not in text and HOSTILE.replace("\x1b", "\ufffd") in "".join(checker.text)
    assert 'db"1<b>' in "".join(checker.text)


def test_the_summary_names_each_class_alert_and_peak_with_its_duration():
    inc = sample_incident()
    text = render(inc)
    classes = re.findall(r'<tr class="class"><td><span[^>]*></span>([^<]+)</td><td data-ms="(\d+)">', text)
    assert classes == [("Healthy", "900000"), ("Purge bound", "1500000"), ("Transaction bound", "1200000")]
    alerts = re.findall(r'<tr class="alert"><td><a href="#runbook-([^"]+)">([^<]+)</a>.*?data-ms="(\d+)"', text)
    assert alerts == [("innodbhistorylistgrowing", "InnoDBHistoryListGrowing", "1800000"),
                      ("innodblongtransaction", "InnoDBLongTransaction", "1100000")]
    for peak in charts.PEAKS:
        assert f">{peak.title}</a>" in text
    assert "innodb_purge_threads</code> from 4 to 8" in text


def test_what_to_read_next_carries_the_runbook_sections_that_occurred():
    text = render(sample_incident())
    sections = runbooks.load()
    for heading in ("Bottleneck: Purge bound", "Bottleneck: Transaction bound", "InnoDBHistoryListGrowing",
                    "InnoDBLongTransaction"):
        assert f'<a href="{sections[heading].url}">{heading}</a>' in text
    assert "Bottleneck: REDO bound" not in text  # it never held
    purge = text.split("<a href=\"" + sections["Bottleneck: Purge bound"].url)[1].split("<h3")[0]
    assert "innodb_max_purge_lag" in purge  # the section itself, readable offline


def test_a_server_without_classes_says_why():
    inc = sample_incident()
    inc.servers[0].classes = []
    text = render(inc)
    assert "No bottleneck classes for this server in the window: computed by promtool" in text


def test_the_runbook_links_are_the_alerts_and_the_overview_s():
    sections = runbooks.load()
    rules = {r["alert"]: r for g in mixin.alerting_groups(CONFIG) for r in g["rules"]}
    for name, rule in rules.items():
        assert sections[name].url == rule["annotations"]["runbook_url"]
    for c in b.CLASSES + (b.HEALTHY_CLASS, b.UNKNOWN_CLASS):
        assert sections[b.runbook_heading(c)].url == f"{CONFIG['runbook_base_url']}#{b.runbook_anchor(c)}"


def test_the_runbooks_markdown_becomes_html():
    got = runbooks.html("**Means:** the *history* is `long`.\n\n1. first\n   continued\n2. second [link](x.md)")
    assert got == ("<p><strong>Means:</strong> the <em>history</em> is <code>long</code>.</p>\n"
                   "<ol><li>first continued</li><li>second link</li></ol>")


def test_the_classes_look_as_the_overview_draws_them():
    styles = build.class_styles()
    assert {code: name for code, (name, _) in styles.items()} == {
        c.code: CLASS_NAMES[c.key] for c in b.CLASSES + (b.HEALTHY_CLASS, b.UNKNOWN_CLASS)}
    assert len({colour for _, colour in styles.values()}) == len(styles)


# --- the charts' PromQL --------------------------------------------------------------------------------

def test_every_chart_query_is_promql_promtool_takes(tmp_path, promtool):
    rules = [{"record": f"report:{chart.key}:{n}:{step}", "expr": charts.query(line, 'db"1\\x', step)}
             for chart in charts.CHARTS for n, line in enumerate(chart.lines) for step in (5, 120)]
    path = tmp_path / "queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "report", "rules": rules}]}))
    out = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'instance="db\\"1\\\\x"' in rules[0]["expr"]  # the server's name quoted, whatever it holds


def test_a_point_stands_for_its_step_past_the_resolution():
    line = charts.BY_KEY["oldest"].lines[0]
    assert charts.query(line, "db1:3306", 15) == 'innodb_oldest_transaction_seconds{job="innodb",instance="db1:3306"}'
    assert charts.query(line, "db1:3306", 120) == (
        'max_over_time((innodb_oldest_transaction_seconds{job="innodb",instance="db1:3306"})[120s:15s])')
    assert charts.step_seconds(24 * 3600) == 120 and charts.step_seconds(1800) == 5


def test_the_bundle_is_read_for_the_metrics_the_charts_and_rules_read():
    names = charts.names()
    assert {"innodb_history_list_length", "innodb_checkpoint_age_bytes", "node_disk_flush_requests_total",
            "mysql_global_status_queries"} <= names
    assert not any(name.startswith(("$", "rate")) for name in names)


# --- the command -------------------------------------------------------------------------------------

def test_a_report_needs_one_source(tmp_path, capsys):
    assert main(["report", "--out", str(tmp_path / "r.html")]) == 1
    assert "give a bundle, or --prometheus URL" in capsys.readouterr().err
    bundle = str(tmp_path / "b.zip")
    sound_bundle(bundle)
    assert main(["report", bundle, "--prometheus", "http://127.0.0.1:9", "--out", str(tmp_path / "r.html")]) == 1
    assert not (tmp_path / "r.html").exists()


def test_a_hostile_bundle_is_refused_before_anything_starts(tmp_path, capsys):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04" + os.urandom(64))
    assert main(["report", str(bad), "--out", str(tmp_path / "r.html")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("innodb-replay report: ") and "not a complete bundle" in err
    assert not (tmp_path / "r.html").exists()


def test_the_report_benchmark_starts():
    out = subprocess.run([os.sys.executable, os.path.join(golden.TESTS, "..", "benchmarks", "report_benchmark.py"),
                          "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--hours" in out.stdout, out.stderr


def test_a_bundle_whose_charted_family_lies_is_refused_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    """The attacker writes the checksums too: a sample of innodb_up outside its chunk's window."""
    from support.bundles import read_members, write_bundle
    good = str(tmp_path / "good.zip")
    sound_bundle(good)
    manifest, members = read_members(good)
    first = members["samples/000001.om"].decode()
    line = next(x for x in first.splitlines() if x.startswith("innodb_up{"))
    members["samples/000001.om"] = first.replace(line, line.rsplit(" ", 1)[0] + " 1.000", 1).encode()
    hostile = str(tmp_path / "hostile.zip")
    write_bundle(hostile, manifest, members)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)
    assert main(["report", hostile, "--out", str(tmp_path / "r.html")]) == 1
    err = capsys.readouterr().err
    assert "innodb-replay report: " in err and "outside the chunk's window" in err, err
    assert not (tmp_path / "r.html").exists() and list(scratch.iterdir()) == []


class ReplayedPrometheus:
    """What a replay Prometheus answers for one server: its up series, its winner, its alerts; no chart data."""

    def __init__(self, winner, alerts):
        self.winner, self.alerts = winner, alerts
        self.queries: list[str] = []

    def series(self, match, start_ms, end_ms):
        return [{"__name__": "innodb_up", "instance": "db1:3306", "job": "innodb"}]

    def names(self, start_ms, end_ms):
        return {"innodb_up", "ALERTS", b.WINNER}

    def samples(self, selector, start_ms, end_ms):
        if selector.startswith(b.WINNER):
            return {(("instance", "db1:3306"),): self.winner}
        if selector.startswith("ALERTS"):
            return self.alerts
        return {}

    def query_range(self, expr, start_s, end_s, step_s):
        self.queries.append(expr)
        return []


def test_only_the_codes_the_rules_give_are_read_as_classes():
    # A bundle that carries a winner series of its own can put anything in it.
    winner = [(START_MS + 15_000 * n, v) for n, v in enumerate([7.0, 7.0, float("nan"), 99.0, float("inf"), 0.0])]
    alerts = {(("alertname", "InnoDBHistoryListGrowing"), ("alertstate", "firing"), ("instance", "db1:3306"),
               ("job", "innodb"), ("severity", "warning")): [(START_MS + 15_000, 1.0), (START_MS + 30_000, 1.0)]}
    prometheus = ReplayedPrometheus(winner, alerts)
    inc = incident.gather(prometheus, START_MS, START_MS + 600_000, [], progress=False)
    [server] = inc.servers
    assert {s.value for s in server.classes} == {7.0, 0.0} and inc.alerts_from == "ALERTS"
    assert [(a.name, a.severity, a.total_ms) for a in server.alerts] == [("InnoDBHistoryListGrowing", "warning", 30_000)]
    # Every chart's lines asked for, of this server only.
    assert len(prometheus.queries) == sum(len(c.lines) for c in charts.CHARTS)
    assert all('instance="db1:3306"' in q for q in prometheus.queries)
    text = render(inc)
    assert structure(text).errors == []


def test_a_bundle_of_thousands_of_tiny_captures_makes_a_file_of_bounded_size():
    texts = [(f"20260921T0645{n // 60:02d}.{n % 60:03d}Z-db1_3306-1-engine-innodb-status.txt", "x" * 10)
             for n in range(page.MAX_CAPTURES + 10)]
    text = render(sample_incident(), evidence.read(texts))
    assert text.count('<article id="capture-') == page.MAX_CAPTURES
    assert "10 more captures are in the source, not in this file." in text


def test_settings_changes_are_read_from_the_exporter_s_own_family_and_labels():
    from innodb_exporter.metrics import settings

    assert incident.SETTING_CHANGES.name == settings.LAST_CHANGE.name
    start = START_MS / 1000
    marks = [settings.Change("innodb_buffer_pool_size", "134217728", "268435456", start + 600, True),
             settings.Change("innodb_flush_log_at_trx_commit", "1", "2", start + 1200, False)]
    # As a Prometheus returns them: one series per setting, its value the time of the change at every sample,
    # the earlier change already replaced in the series that follows (outside the window: not reported).
    found = {tuple(zip(settings.LAST_CHANGE.labels, labels)): [(start + 15 * i, at) for i in range(5)]
             for labels, at in (m.sample() for m in marks)}
    found[tuple(zip(settings.LAST_CHANGE.labels, ("innodb_io_capacity", "200", "400", "0")))] = [(start, start - 60)]
    changes = incident._changes(found, START_MS, START_MS + 3_600_000)
    assert [(c.at_ms, c.setting, c.before, c.after) for c in changes] == [
        (START_MS + 600_000, "innodb_buffer_pool_size", "134217728", "268435456"),
        (START_MS + 1_200_000, "innodb_flush_log_at_trx_commit", "1", "2")]
    inc = sample_incident()
    inc.servers[0].changes = changes
    text = render(inc)
    assert "<code>innodb_buffer_pool_size</code> from 134217728 to 268435456 (with a restart)" in text
    assert "<code>innodb_flush_log_at_trx_commit</code> from 1 to 2</li>" in text
