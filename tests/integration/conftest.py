"""Servers for the integration tests, and the whole native stack.

Every flavour in both configurations (stack/servers.py: FLAVORS x CONFIGS):

  flavor_server          session-wide, parametrised over every (flavour, configuration): one server per
                         combination, started on first use, stopped at the session's end; the exporter's
                         account exists (EXPORTER_USER over TCP at .address)
  loaded_flavor_server   the same server with sysbench oltp_read_write running, while the module's tests of
                         that combination run (the load stops when pytest moves on to the next combination
                         or the next module)
  fresh_flavor_server    a server of the test module's own (not the loaded one), for tests that kill,
                         pause or reconfigure it and then put it back as they found it

To run a test on some combinations only: ``@pytest.mark.parametrize("flavor_server", [("mysql-9", "stock")],
indirect=True)`` (likewise for fresh_flavor_server). The servers in Debian roots build their roots on
first use (stack/roots.py; about a minute each, once per machine).

And the fixtures of the MariaDB-only tests: ``fresh_db``, and the two stacks that several modules share,
``native_stack`` (on Debian's Prometheus) and ``alerting_stack`` (on Prometheus 3). The tests of each stack
run one after the other, on one pytest-xdist worker, and each stack stops as soon as its last test has run.
``thanos_stack`` is test_thanos.py's own, up while that module runs; it and ``alerting_stack`` are never up at
once (GROUPS).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from typing import Callable

import pytest

from stack import tools
from stack.native import Stack
from stack.settings import DEFAULT_PORTS, Settings
from support.lanes import unit
from support.servers import CONFIGS, FLAVORS, MariaDB, Server, Sysbench, free_port, server, wait_for
from support.servers import options as server_options
from support.tools import built_tool

COMBINATIONS = [(flavor, config) for flavor in FLAVORS for config in CONFIGS]
IDS = [f"{flavor}-{config}" for flavor, config in COMBINATIONS]


class ServerPool:
    """One server per (flavour, configuration), started on first use, all stopped by ``close``; sysbench
    load on a server while anyone asks for it."""

    def __init__(self):
        self.servers: dict[tuple[str, str], Server] = {}
        self.failures: dict[tuple[str, str], str] = {}
        self.loads: dict[tuple[str, str], Sysbench] = {}
        self.prepared: set[tuple[str, str]] = set()
        self.users: dict[tuple[str, str], int] = {}

    def get(self, flavor: str, config: str) -> Server:
        key = (flavor, config)
        if key in self.failures:  # one attempt per session, not one per test
            pytest.fail(self.failures[key])
        if key not in self.servers:
            db = server(flavor, config)
            try:
                db.start()
                db.create_user()
            except Exception as exc:
                db.cleanup()
                self.failures[key] = f"{flavor} ({config}) did not start: {exc}"
                raise
            self.servers[key] = db
        return self.servers[key]

    def load(self, db: Server) -> Sysbench:
        key = (db.flavor, db.config)
        self.users[key] = self.users.get(key, 0) + 1
        if key not in self.loads:
            load = Sysbench(db, threads=4)
            if key not in self.prepared:
                load.prepare()
                self.prepared.add(key)
            self.loads[key] = load.start(seconds=3600)
        return self.loads[key]

    def unload(self, db: Server) -> None:
        key = (db.flavor, db.config)
        self.users[key] -= 1
        if self.users[key] == 0:
            self.loads.pop(key).stop()

    def close(self) -> None:
        for load in self.loads.values():
            load.stop()
        for db in self.servers.values():
            db.cleanup()


@pytest.fixture(scope="session")
def server_pool():
    pool = ServerPool()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session", params=COMBINATIONS, ids=IDS)
def flavor_server(request, server_pool) -> Server:
    return server_pool.get(*request.param)


@pytest.fixture(scope="module")  # the load stops with the module: none runs under later modules' tests
def loaded_flavor_server(flavor_server, server_pool):
    server_pool.load(flavor_server)
    try:
        yield flavor_server
    finally:
        server_pool.unload(flavor_server)


@pytest.fixture(scope="module", params=COMBINATIONS, ids=IDS)
def fresh_flavor_server(request):
    flavor, config = request.param
    db = server(flavor, config)
    try:
        db.start()
        db.create_user()
        yield db
    finally:
        db.cleanup()


@pytest.fixture
def fresh_db():
    """A MariaDB of its own, for tests that kill, stop or reconfigure it."""
    db = MariaDB()
    try:
        db.start()
        db.create_user()
        yield db
    finally:
        db.cleanup()


# The stacks, in the order their tests run (Thanos is built after Prometheus 3: stack/tools.py), and how to stop the
# shared ones still up.
STACKS = ("native_stack", "alerting_stack", "thanos_stack")
_running: dict[str, Callable[[], None]] = {}

# The tests of a session's shared fixture are one unit of the shared lane's work, run by one worker (support/lanes.py):
# the pool's servers (one per combination, not one per worker) and each shared stack. The stressed stacks share a
# unit: each keeps both cores busy with an unthrottled sysbench, so they never run at once.
GROUPS = {"flavor_server": "flavor-servers", "native_stack": "native-stack",
          "alerting_stack": "stressed-stacks", "thanos_stack": "stressed-stacks"}
# The tools each fixture runs (stack/tools.py), and the longest unit: the stressed stacks' 15 minutes.
TOOLS = {"alerting_stack": ("prometheus",), "thanos_stack": ("prometheus", "thanos")}
LONGEST = "stressed-stacks"


def pytest_itemcollected(item):
    group = next((group for name, group in GROUPS.items() if name in item.fixturenames), None)
    if group:
        item.add_marker(pytest.mark.together(group))


def _tools(item) -> set[str]:
    needed = {tool for name, tools_ in TOOLS.items() if name in item.fixturenames for tool in tools_}
    if getattr(item, "callspec", None) and item.callspec.params.get("promtool") == "3":
        needed.add("promtool")
    return needed


@pytest.hookimpl(trylast=True)  # after pytest's own ordering, which the stable sort keeps within each rank
def pytest_collection_modifyitems(items):
    """The order the tests start in, which is the order of the shared lane's units: the longest
    unit first, so that the other worker takes the rest meanwhile (from nothing its worker waits for
    Prometheus 3, which .ci/run builds first, beside the tests); then the integration tests, then the unit
    tests, short units that fill the end; a test whose tool is still building after every other test of its
    unit; each stack's tests together, in the order of STACKS."""
    unbuilt = {name for name in tools.TOOLS if not tools.built(name)}

    def rank(item) -> tuple[int, int]:
        waits = bool(_tools(item) & unbuilt)
        stack = next((n for n, name in enumerate(STACKS, 1) if name in item.fixturenames), 0)
        return (0 if unit(item) == LONGEST else 3 if waits else 1 if item.get_closest_marker("integration") else 2), stack

    items.sort(key=rank)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # the test's own fixtures are torn down first
    for name in [name for name in _running if nextitem is None or name not in nextitem.fixturenames]:
        _stop(name)


def _shared(name: str, stack: Stack, root: str) -> None:
    def stop():
        stack.down()
        shutil.rmtree(root, ignore_errors=True)

    _running[name] = stop


def _stop(name: str) -> None:
    stop = _running.pop(name, None)
    if stop is not None:
        stop()


@pytest.fixture(scope="session")
def native_stack():
    """The native stack on free ports, as ./innodb-stack up runs it on Debian's Prometheus (2.42), with two
    minutes of scrapes behind it (every rate window of the dashboards filled)."""
    root = tempfile.mkdtemp(prefix="innodb-stack-")
    stack = Stack(Settings(root=root, ports={name: free_port() for name in DEFAULT_PORTS}, sysbench_threads=2,
                           sysbench_rate=50, prometheus="debian"))
    _shared("native_stack", stack, root)
    try:
        stack.up()
        started = time.monotonic()
        wait_for(lambda: time.monotonic() - started > 120, 140, interval=5, what="two minutes of data")
        yield stack
    finally:
        _stop("native_stack")


# Thresholds and durations the alerting stack lowers, through alerts/mixin.py's CONFIG (the one place they
# are set), so that alerts fire within the tests' minutes.
ALERTING_RULES = ("checkpoint_age_for=30s", "checkpoint_age_critical_for=30s", "history_high=5000",
                  "history_window=2m", "history_for=15s", "purge_window=2m", "down_for=15s")


# A REDO log far too small for an unthrottled sysbench, and adaptive flushing held to 100 pages a second: checkpoint
# age lives near its limit even on a machine busy with other work. With the default io_capacity the page cleaner
# kept up once the machine slowed the load: beside a Go build (CI from nothing), at 320 commits and 0.5 MB of
# REDO a second, checkpoint age fell from 0.95 of the max to 0.3 within three minutes and the alert never fired.
STRESSED_SERVER = server_options("mariadb-10.11", "tuned") + (
    "--innodb-log-file-size=8M", "--innodb-log-buffer-size=1M",
    "--innodb-io-capacity=100", "--innodb-io-capacity-max=100")


def stressed_settings(root: str, rules: tuple = (), **kwargs) -> Settings:
    """The native stack under stress, for the tests that fire alerts: the stressed server, unthrottled sysbench,
    rules with lowered durations (and ``rules``), captures every 30 s at most; on Prometheus 3."""
    return Settings(root=root, ports={name: free_port() for name in DEFAULT_PORTS}, mysql_options=STRESSED_SERVER,
                    sysbench_threads=4, sysbench_rate=0, rule_overrides=ALERTING_RULES + rules, prometheus="3",
                    exporter_flags=("--capture.cooldown=30", "--capture.snapshots=2", "--capture.interval=2"), **kwargs)


@pytest.fixture(scope="session")
def alerting_stack(request):
    """The stressed stack with VictoriaMetrics and vmalert behind Prometheus 3 (STACK_STORE=victoriametrics).
    test_remote_store.py and test_stack_e2e.py share it, in that order: the last test of the second stops the
    exporter."""
    built_tool(request, "prometheus")
    root = tempfile.mkdtemp(prefix="innodb-alerting-stack-")
    stack = Stack(stressed_settings(root, store="victoriametrics"))
    _shared("alerting_stack", stack, root)
    try:
        stack.up()
        stack.started = time.time()
        yield stack
    finally:
        _stop("alerting_stack")


# STACK_STORE=thanos for the tests: blocks of 2 minutes, which a replica keeps for 2 more (a block is deleted
# once the next one is cut), so that within minutes of the start the first minutes of data are in the bucket
# only; the store gateway looks for new blocks every 15 s.
THANOS_TIMINGS = {"block_duration": "2m", "replica_retention": "2m", "bucket_sync": "15s"}
# The checkpoint-age warning at a fifth of the limit, which the stressed server stays above: the alert fires
# for the whole failover test, and a second one or a new start would be the pair's doing.
STEADY_ALERT = ("checkpoint_age_warning_ratio=0.2",)


@pytest.fixture(scope="module")
def thanos_stack(request):
    """The stressed stack as a highly available pair behind Thanos (STACK_STORE=thanos) on Prometheus 3: two
    replicas, a sidecar each, the store gateway on a filesystem bucket, Thanos Query over them. Stopped when
    the module ends."""
    built_tool(request, "prometheus")
    built_tool(request, "thanos")
    root = tempfile.mkdtemp(prefix="innodb-thanos-stack-")
    stack = Stack(stressed_settings(root, STEADY_ALERT, store="thanos", **THANOS_TIMINGS))
    try:
        stack.up()
        stack.started = time.time()
        yield stack
    finally:
        stack.down()
        shutil.rmtree(root, ignore_errors=True)
