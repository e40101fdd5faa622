"""The post-incident report for real (issue 31): a native stack whose MariaDB takes a throttled write load
while a read view is held open, until the history alert fires and the exporter captures the evidence; the
read view then goes, purge catches up and the alert resolves. The window is exported with its captures and
reported: the report names the held transaction, the class Purge bound, the alert and how long it fired,
that duration being the Prometheus's own count of its firing evaluations. The same window reported straight
off the stack's Prometheus says the same.

Thresholds are lowered for the test through the configuration (as test_stack_e2e.py does): the history
threshold, so that a throttled load's history passes it in seconds, and the alert's windows, so that it
fires and resolves within minutes. The report is given the rule files the stack ran, as import is.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from stack.native import Stack
from stack.settings import DEFAULT_PORTS, REPO, Settings
from support.html_check import structure
from support.servers import free_port, wait_for
from support.transactions import hold_read_view

pytestmark = pytest.mark.integration

HISTORY_HIGH = 3000
RULES = (f"history_high={HISTORY_HIGH}", "history_window=2m", "history_for=15s", "purge_window=2m")
ALERT = "InnoDBHistoryListGrowing"
EVALUATION_S = 15  # provisioning/prometheus/prometheus.yml's evaluation_interval


def replay(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "exporters"))
    return subprocess.run([sys.executable, "-m", "innodb_replay.cli", *args], capture_output=True, text=True,
                          timeout=900, cwd=REPO, env=env)


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


class Incident:
    """The stack, and what the test saw happen on it."""

    def __init__(self, stack: Stack):
        self.stack = stack
        self.started = time.time()
        self.trx_id = ""
        self.capture: dict = {}
        self.end = 0.0

    def prometheus(self) -> str:
        return self.stack.s.url("prometheus")

    def firing(self) -> bool:
        alerts = get_json(self.prometheus() + "/api/v1/alerts")["data"]["alerts"]
        return any(a["labels"]["alertname"] == ALERT and a["state"] == "firing" for a in alerts)

    def captures(self) -> list[dict]:
        listing = get_json(self.stack.s.url("innodb_exporter") + "/api/captures")["captures"]
        return [c for c in listing if ALERT in {a["labels"]["alertname"] for a in c["alerts"]}]

    def firing_evaluations(self) -> int:
        """How many evaluations the Prometheus fired the alert at in the window, by its own count."""
        span = int(self.end - self.started) + 1
        query = f'count_over_time(ALERTS{{alertname="{ALERT}",alertstate="firing"}}[{span}s])'
        url = self.prometheus() + "/api/v1/query?" + urllib.parse.urlencode({"query": query, "time": f"{self.end:.3f}"})
        result = get_json(url)["data"]["result"]
        assert len(result) == 1, result
        return int(float(result[0]["value"][1]))


@pytest.fixture(scope="module")
def incident():
    root = tempfile.mkdtemp(prefix="innodb-report-")
    settings = Settings(root=root, ports={name: free_port() for name in DEFAULT_PORTS}, sysbench_threads=2,
                        sysbench_rate=100, rule_overrides=RULES,
                        exporter_flags=("--capture.cooldown=30", "--capture.snapshots=2", "--capture.interval=2"))
    stack = Stack(settings)
    try:
        stack.up()
        inc = Incident(stack)
        _held_until_captured(inc)
        yield inc
    finally:
        stack.down()
        shutil.rmtree(root, ignore_errors=True)


def _held_until_captured(inc: Incident) -> None:
    """A read view that has written (so it has an id of its own) held under the load until the alert fires and
    its capture is taken; then released, until the alert resolves."""
    stack = inc.stack
    wait_for(lambda: time.time() - inc.started > 60, 90, interval=5, what="a minute of data before the incident")
    conn, inc.trx_id = hold_read_view(stack)
    try:
        wait_for(inc.firing, 420, interval=5, what=f"{ALERT} firing")
        wait_for(inc.captures, 120, interval=2, what="the capture of the page")
        inc.capture = inc.captures()[0]
    finally:
        conn.rollback()
        conn.close()
    wait_for(lambda: not inc.firing(), 420, interval=5, what=f"{ALERT} resolved once the read view went")
    time.sleep(2 * EVALUATION_S)  # two more evaluations: the window ends after the alert did
    inc.end = time.time()


def check_report(path: str, inc: Incident) -> str:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    checker = structure(text)
    assert checker.errors == [] and checker.stack == [] and "script" not in checker.tags, checker.errors[:5]
    # The class, with how long it held.
    classes = dict(re.findall(r'<tr class="class"><td><span[^>]*></span>([^<]+)</td><td data-ms="(\d+)">', text))
    assert int(classes.get("Purge bound", 0)) > 0, classes
    # The alert, with how long it fired: the Prometheus's own count of its firing evaluations.
    fired = re.findall(rf'<tr class="alert"><td><a href="#runbook-[^"]+">{ALERT}</a>.*?data-ms="(\d+)">.*?</tr>', text)
    assert len(fired) == 1, re.findall(r'<tr class="alert">.*?</tr>', text)
    expected_ms = inc.firing_evaluations() * EVALUATION_S * 1000
    assert abs(int(fired[0]) - expected_ms) <= EVALUATION_S * 1000, (fired, expected_ms)
    assert "still firing" not in re.search(rf'<tr class="alert"><td><a[^>]*>{ALERT}</a>.*?</tr>', text).group()
    # The held transaction, in the evidence of the page's capture, with its age.
    evidence = text.split('<section id="evidence">')[1].split("</section>")[0]
    row = re.search(rf"<tr><td><code>{inc.trx_id}</code></td><td>([^<]+)</td>", evidence)
    assert row and row.group(1) != "–", evidence[:2000]
    assert inc.capture["id"].lower().replace(".", "-") in evidence.lower().replace(".", "-")
    # What to read next: the class's and the alert's runbook sections.
    assert f">{ALERT}</a></h3>" in text and ">Bottleneck: Purge bound</a></h3>" in text
    return text


def test_the_report_of_an_exported_window_names_the_held_transaction_the_class_and_the_alert(incident, tmp_path):
    bundle, out = str(tmp_path / "incident.zip"), str(tmp_path / "report.html")
    exported = replay("export", f"--prometheus={incident.prometheus()}", f"--start={incident.started:.0f}",
                      f"--end={incident.end:.0f}", f"--captures={incident.stack.s.url('innodb_exporter')}",
                      f"--out={bundle}", "--quiet")
    assert exported.returncode == 0, exported.stderr
    rules = [f"--rules={os.path.join(incident.stack.s.path('prometheus', 'rules'), name)}"
             for name in sorted(os.listdir(incident.stack.s.path("prometheus", "rules")))]
    made = replay("report", bundle, f"--out={out}", *rules)
    assert made.returncode == 0, made.stderr
    assert "reading the bundle" in made.stderr or "writing TSDB blocks" in made.stderr, made.stderr
    assert "recording rules the bundle lacks" in made.stderr  # the export has no class series: they were computed
    text = check_report(out, incident)
    assert "computed over the bundle's samples by promtool" in html.unescape(text)
    print(f"\n{made.stdout.strip()}\nits progress:\n{made.stderr}")


def test_the_report_of_the_live_prometheus_says_the_same(incident, tmp_path):
    out = str(tmp_path / "live.html")
    made = replay("report", f"--prometheus={incident.prometheus()}", f"--start={incident.started:.0f}",
                  f"--end={incident.end:.0f}", f"--captures={incident.stack.s.url('innodb_exporter')}", f"--out={out}")
    assert made.returncode == 0, made.stderr
    text = check_report(out, incident)
    assert "the Prometheus's recording rules" in html.unescape(text)
