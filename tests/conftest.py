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

from support import lanes  # noqa: E402  (after sys.path has `support`)

FIXTURES = os.path.join(TESTS, "fixtures")


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: needs real servers (MariaDB, sysbench, Prometheus)")
    config.addinivalue_line("markers", "together(name): shares a session fixture with the other tests of that "
                                       "name, which one worker of the shared lane runs, one after the other")
    config.addinivalue_line("markers", "alone: measures throughput, which another test's load would move: "
                                       "./innodb-stack test runs it after the others, by itself")
    config.addinivalue_line("markers", "slow: a unit test of more than about half a second (a fuzz, bombs, "
                                       "thousands of sockets, subprocesses); ./innodb-stack test --fast leaves "
                                       "it out, the full run keeps it")
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        config.units_file = lanes.name_units_file()  # the controller of pytest-xdist's workers


# ./innodb-stack test runs the tests in two lanes, one after the other: "shared", the tests that do not mind another
# test's load beside them, two at a time (pytest-xdist; units of work: support/lanes.py); then "alone", the tests
# marked `alone`, one at a time on an otherwise idle machine. Most integration tests spend their minutes waiting for
# scrapes and rule evaluations, so two side by side take little longer than one. Plain pytest runs every test.
def pytest_addoption(parser):
    parser.addoption("--lane", choices=lanes.LANES, default="all",
                     help="shared: the tests not marked alone; alone: those marked alone; all (the default): both")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    lane = config.getoption("lane")
    config.hook.pytest_deselected(items=[item for item in items if not lanes.in_lane(item, lane)])
    items[:] = [item for item in items if lanes.in_lane(item, lane)]


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reports its collection
def pytest_collection_finish(session):
    if hasattr(session.config, "workerinput"):
        lanes.write_units(session.items)


def pytest_xdist_make_scheduler(config, log):
    return lanes.UnitScheduling(config, log)


def pytest_unconfigure(config):
    if getattr(config, "units_file", None):
        os.unlink(config.units_file)


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
