"""Shared test setup: paths, markers, the lanes ./innodb-stack test runs the tests in, and the promtools the tests
lint and test rules with."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
sys.path.insert(0, TESTS)  # for `support`
sys.path.insert(0, ROOT)  # for `stack`, `alerts`, `signals`, `dashboards` and `tools`
sys.path.insert(0, os.path.join(ROOT, "exporters"))  # the package, also when not installed

FIXTURES = os.path.join(TESTS, "fixtures")


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: needs real servers (MariaDB, sysbench, Prometheus)")
    config.addinivalue_line("markers", "alone: measures throughput, which another test's load would move: "
                                       "./innodb-stack test runs it after the others, by itself")
    config.addinivalue_line("markers", "slow: a unit test of more than about half a second (a fuzz, bombs, "
                                       "thousands of sockets, subprocesses); ./innodb-stack test --fast leaves "
                                       "it out, the full run keeps it")


# ./innodb-stack test runs the tests in two lanes, one after the other: "shared", the tests that do not mind another
# test's load beside them, two at a time (pytest-xdist, --dist loadgroup); then "alone", the tests marked `alone`,
# one at a time on an otherwise idle machine. Most integration tests spend their minutes waiting for scrapes and
# rule evaluations, so two side by side take little longer than one. Plain pytest runs every test, in one lane.
LANES = ("all", "shared", "alone")


def pytest_addoption(parser):
    parser.addoption("--lane", choices=LANES, default="all",
                     help="shared: the tests not marked alone; alone: those marked alone; all (the default): both")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    lane = config.getoption("lane")
    if lane != "all":
        alone = lane == "alone"
        config.hook.pytest_deselected(items=[item for item in items if bool(item.get_closest_marker("alone")) != alone])
        items[:] = [item for item in items if bool(item.get_closest_marker("alone")) == alone]
    # A test module is one unit of xdist's work (its module-scoped fixtures set up once), unless the test names
    # a group of its own (tests/integration/conftest.py: the tests of a shared fixture).
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


# Every test that takes `promtool` runs with both: Debian's (Prometheus 2.42 on bookworm) and Prometheus 3's.
PROMTOOLS = ("debian", "3")


@pytest.fixture(scope="session", params=PROMTOOLS, ids=[f"promtool-{p}" for p in PROMTOOLS])
def promtool(request) -> str:
    if request.param == "3":
        from support.tools import built_tool  # after sys.path has `support`

        return built_tool(request, "promtool")
    path = shutil.which("promtool")
    if not path:
        pytest.fail("promtool is not installed (apt-get install prometheus); .ci/run installs it")
    return path
