"""The next bottleneck named live: one native stack, four loads, each class named within two minutes.

The stack's MariaDB 10.11 has an 8 MB REDO log and a buffer pool made of 2 MB chunks, so that it can
shrink online; the phases run in this order on the same server, each from its own load:

  healthy       the stack's light demo load (2 threads, 10 transactions a second)
  REDO bound    sysbench unthrottled: the small REDO log lives near its limit
  purge bound   a read view held open under a throttled write load: the history grows behind it
  latch         the buffer pool shrunk to 6 MB under 128 threads of point selects: they queue on its mutex

Each phase waits for the winner (instance:innodb_bottleneck:class) to name its class, at most two
minutes after its load started, and checks the class against the raw evidence (the purge phase, named the
moment its history passes the threshold, then goes on for three rule evaluations). One threshold is lowered
for the test through the configuration (as test_stack_e2e.py does): history_high, so that a throttled
load's history passes it in seconds rather than in half an hour. Last, the Overview and Compare
dashboards are drawn from the stack (dashboards/preview.py) and the timeline is printed: run with -s to
read it, the PNGs' directory is printed too. Then the run is exported (the default selector, which leaves
the rules' series out) and imported with innodb-replay, given the rule files the stack ran (the lowered
history_high included): the import computes the classes over the window, and the replayed winner names
the same phases in the same order.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import pymysql
import pytest

from dashboards import preview
from innodb_bundle.bundle import BundleReader
from signals import bottleneck as b
from stack.native import Stack
from stack.settings import DEFAULT_PORTS, REPO, Settings
from support.servers import MONITORING_OPTIONS, MariaDB, Sysbench, free_port, wait_for

# Alone: another test's load beside it would make the host bound class hold in the healthy phase.
pytestmark = [pytest.mark.integration, pytest.mark.alone]

NAMED_WITHIN = 120  # seconds from a load's start to its class being named
HISTORY_HIGH = 3000
PHASE_HELD = 45  # seconds the purge phase goes on once named: three rule evaluations
COUNTERS = "module_buffer,module_log,module_purge,buffer_LRU_get_free_search"
OPTIONS = MONITORING_OPTIONS + ("--innodb-log-file-size=8M", "--innodb-log-buffer-size=1M",
                                "--innodb-buffer-pool-chunk-size=2M", f"--innodb-monitor-enable={COUNTERS}")
SMALL_POOL = 6 * 1024 * 1024
NAMES = {c.code: c.name for c in b.CLASSES + (b.HEALTHY_CLASS, b.UNKNOWN_CLASS)}


class Phases:
    """The stack, the load it runs now, and when each phase started and was named."""

    def __init__(self, stack: Stack):
        self.stack = stack
        self.db = MariaDB(directory=stack.s.path("mariadb"), root_password=stack._secret("mariadb-root"))
        self.load: Sysbench | None = None
        self.started = time.time()
        self.named: list[tuple[str, float, float]] = []  # (class, load started, named)
        self.evidence: dict[str, str] = {}  # class -> what the raw series said when it was named

    def run(self, threads: int, rate: int = 0, workload: str = "oltp_read_write") -> float:
        """Replace whatever load runs with this one; returns when it started."""
        self.stop_load()
        self.load = Sysbench(self.db, threads=threads, workload=workload).start(seconds=600, rate=rate)
        return time.time()

    def stop_load(self) -> None:
        self.stack.services["sysbench"].stop()
        if self.load:
            self.load.stop()
            self.load = None

    def query(self, expr: str) -> list:
        url = self.stack.s.url("prometheus") + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)["data"]["result"]

    def value(self, expr: str) -> float | None:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None

    def states(self) -> dict[str, tuple[float, dict]]:
        return {r["metric"]["class"]: (float(r["value"][1]), r["metric"]) for r in self.query(b.STATE)}

    def wait_named(self, code: int, since: float) -> dict[str, tuple[float, dict]]:
        """Wait until the winner is ``code``; returns the class states of that moment."""
        seen = []

        def named():
            winner = self.value(b.WINNER)
            seen.append(NAMES.get(winner, winner))
            return winner == code

        try:
            wait_for(named, NAMED_WITHIN - (time.time() - since), interval=3, what=f"{NAMES[code]} named")
        except TimeoutError:
            states = {k: v for k, (v, _) in self.states().items()}
            pytest.fail(f"{NAMES[code]} not named within {NAMED_WITHIN}s of its load; winners seen: "
                        f"{sorted(set(map(str, seen)))}; states now: {states}")
        self.named.append((NAMES[code], since, time.time()))
        return self.states()

    def timeline(self, prometheus: str | None = None, end: float | None = None) -> list[tuple[str, str, str]]:
        """The winner over the whole run, as (from, to, class) runs (5 s steps: every rule evaluation is seen)."""
        url = prometheus or self.stack.s.url("prometheus")
        series = preview.query_range(url, b.WINNER, self.started, end or time.time(), 5)["data"]["result"]
        assert series, f"{url} has no {b.WINNER} over the run"
        points = [(float(t), float(v)) for t, v in series[0]["values"]]
        runs: list[list] = []
        for t, v in points:
            if runs and runs[-1][2] == v:
                runs[-1][1] = t
            else:
                runs.append([t, t, v])
        clock = lambda t: time.strftime("%H:%M:%S", time.localtime(t))  # noqa: E731
        return [(clock(start), clock(stop), NAMES[int(v)]) for start, stop, v in runs]


@pytest.fixture(scope="module")
def phases():
    root = tempfile.mkdtemp(prefix="innodb-bottleneck-")
    settings = Settings(root=root, ports={name: free_port() for name in DEFAULT_PORTS}, mysql_options=OPTIONS,
                        sysbench_threads=2, sysbench_rate=10, rule_overrides=(f"history_high={HISTORY_HIGH}",))
    stack = Stack(settings)
    try:
        stack.up()
        p = Phases(stack)
        yield p
        p.stop_load()
    finally:
        stack.down()
        shutil.rmtree(root, ignore_errors=True)


def test_light_load_is_named_healthy(phases):
    states = phases.wait_named(b.HEALTHY, phases.started)
    assert {k: v for k, (v, _) in states.items()} == {**{c.key: 0 for c in b.CLASSES}, "healthy": 1}


def test_a_small_redo_log_under_unthrottled_writes_is_redo_bound(phases):
    since = phases.run(threads=4)
    states = phases.wait_named(1, since)
    assert states["redo"][0] == 1
    # The evidence itself: checkpoint age near the max over the last minute, log waits, or slow flushes of
    # the data device (MariaDB 10.11 does not time its REDO fsyncs).
    age = phases.value("avg_over_time(innodb_checkpoint_age_bytes[1m]) / innodb_checkpoint_age_max_bytes")
    waits = phases.value("rate(innodb_redo_log_waits_total[1m])")
    flush = phases.value("max(rate(node_disk_flush_requests_time_seconds_total[1m])"
                         " / rate(node_disk_flush_requests_total[1m]))") or 0
    assert age > 0.75 or waits > 0 or flush > 0.01, (age, waits, flush)
    phases.evidence["REDO bound"] = (f"checkpoint age {age:.0%} of the max, {waits:.2f} log waits/s, "
                                     f"flushes {flush * 1000:.2f} ms")


@pytest.fixture(scope="module")
def held_read_view(phases):
    conn = pymysql.connect(unix_socket=phases.db.socket, user="root", password=phases.db.root_password,
                           database="sbtest", autocommit=False)
    with conn.cursor() as cur:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("SELECT COUNT(*) FROM sbtest1")
    yield conn
    conn.rollback()
    conn.close()


def test_a_read_view_held_under_writes_is_purge_bound(phases, request):
    since = phases.run(threads=2, rate=100)
    request.getfixturevalue("held_read_view")
    states = phases.wait_named(7, since)
    assert states["purge"][0] == 1 and states["redo"][0] == 0
    history, oldest = phases.value("innodb_history_list_length"), phases.value("innodb_oldest_transaction_seconds")
    assert history > HISTORY_HIGH and 0 < oldest < 600, (history, oldest)  # not yet transaction bound
    phases.evidence["Purge bound"] = f"history list length {history:.0f}, oldest transaction {oldest:.0f} s"
    # Named as soon as the history passes the threshold, the phase would end with this test, and the
    # import, whose rule evaluations fall at other instants, can miss a phase one or two evaluations long:
    # the read view is held for three more (15 s each), and the class holds with it.
    time.sleep(PHASE_HELD)
    assert phases.value(b.WINNER) == 7, phases.states()


def test_many_threads_on_a_small_buffer_pool_are_latch_bound(phases, request):
    conn = request.getfixturevalue("held_read_view")
    conn.rollback()  # the read view goes
    phases.stop_load()
    # Purge catches up before the pool shrinks: its writes into a tiny pool would stall on free pages.
    history = "SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'"
    wait_for(lambda: int(phases.db.sql(history)[0][1]) < 1000, 120, interval=2, what="purge caught up")
    phases.db.sql(f"SET GLOBAL innodb_buffer_pool_size = {SMALL_POOL}")
    wait_for(lambda: phases.db.sql("SELECT @@innodb_buffer_pool_size")[0][0] == SMALL_POOL, 60, what="the pool shrunk")
    since = phases.run(threads=128, workload="oltp_point_select")
    states = phases.wait_named(5, since)
    value, labels = states["latch"]
    assert value == 1 and labels.get("latch"), labels
    waited = phases.value(f'sum(rate(innodb_latch_wait_seconds_total{{name="{labels["latch"]}"}}[1m]))')
    assert waited >= 1, f"{labels['latch']}: {waited} threads waiting on average"
    phases.evidence["Latch contention"] = f"{labels['latch']}: {waited:.1f} threads waiting on average"


def test_the_overview_names_each_phase_and_draws_the_timeline(phases, tmp_path_factory):
    order = [name for name, _, _ in phases.named]
    assert order == ["Healthy", "REDO bound", "Purge bound", "Latch contention"]
    # Half a minute of the last phase, under its load, so that the drawings and the replay's own 15 s grid
    # have it too (a range query's last step falls up to a step before its end).
    time.sleep(max(0.0, phases.named[-1][2] + 30 - time.time()))

    def every_phase_shown():  # the last phase was named by the latest evaluation, which a range may not reach yet
        runs = phases.timeline()
        return runs if set(order) <= {name for _, _, name in runs} else None

    runs = wait_for(every_phase_shown, 40, interval=5, what="every phase in the timeline")
    named = [name for _, _, name in runs]
    positions = [named.index(name) for name in order]
    assert positions == sorted(positions), named  # the timeline shows them in the order they were induced
    out = str(tmp_path_factory.mktemp("bottleneck-preview"))
    span = f"{int(time.time() - phases.started) + 60}s"
    empty = preview.preview(phases.stack.s.url("prometheus"), out, phases.stack.s.address("mariadb"), span, "5m",
                            "innodb-overview")
    empty |= preview.preview(phases.stack.s.url("prometheus"), out, phases.stack.s.address("mariadb"), span, "5m",
                             "innodb-compare")
    for uid, titles in empty.items():
        assert not any(t.startswith(("What limits", "What limited")) for t in titles), (uid, titles)
    print("\nwinner over the run:")
    for start, stop, name in runs:
        print(f"  {start}-{stop}  {name}")
    print("named:", ", ".join(f"{name} after {named_at - since:.0f}s" for name, since, named_at in phases.named))
    for name, what in phases.evidence.items():
        print(f"  {name}: {what}")
    print(f"dashboards drawn in {out}")


def replay(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "exporters"))
    return subprocess.run([sys.executable, "-m", "innodb_replay.cli", *args], capture_output=True, text=True,
                          timeout=600, cwd=REPO, env=env)


def test_the_run_replayed_from_an_export_names_the_same_phases(phases):
    phases.stop_load()
    directory = tempfile.mkdtemp(prefix="innodb-bottleneck-replay-")
    data, bundle, port = os.path.join(directory, "data"), os.path.join(directory, "run.zip"), free_port()
    end = time.time() - 5
    try:
        out = replay("export", f"--prometheus={phases.stack.s.url('prometheus')}", f"--start={int(phases.started)}",
                     f"--end={int(end)}", f"--out={bundle}")
        assert out.returncode == 0, out.stderr
        with BundleReader(bundle) as reader:  # the export's selector (jobs) leaves the classes out
            assert not any(b"innodb_bottleneck" in reader.chunk(c.name) for c in reader.manifest.chunks)
        started = time.monotonic()
        rules = [f"--rules={phases.stack.s.path('prometheus', 'rules', name)}"
                 for name in ("recording.yml", "bottleneck.yml")]
        out = replay("import", bundle, f"--data-dir={data}", f"--port={port}", *rules)
        assert out.returncode == 0, out.stderr
        replayed = phases.timeline(f"http://127.0.0.1:{port}", end)
        names = [name for _, _, name in replayed]
        order = [name for name, _, _ in phases.named]
        assert set(order) <= set(names), names
        assert [names.index(name) for name in order] == sorted(names.index(name) for name in order), names
        print(f"\nreplayed (import {time.monotonic() - started:.0f}s, classes computed by the import):")
        for start, stop, name in replayed:
            print(f"  {start}-{stop}  {name}")
    finally:
        replay("stop", f"--data-dir={data}")
        shutil.rmtree(directory, ignore_errors=True)
