"""Shared test setup: paths, markers, the lanes ./innodb-stack test runs the tests in (support/lanes.py), and the
promtools the tests lint and test rules with."""

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

# The lanes ./innodb-stack test runs the tests in, and the units of the shared lane's work.
pytest_plugins = ("support.lanes",)

FIXTURES = os.path.join(TESTS, "fixtures")


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: needs real servers (MariaDB, sysbench, Prometheus)")
    config.addinivalue_line("markers", "slow: a unit test of more than about half a second (a fuzz, bombs, "
                                       "thousands of sockets, subprocesses); ./innodb-stack test --fast leaves "
                                       "it out, the full run keeps it")


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
