"""The lanes of ./innodb-stack test, and the units of the shared lane's work: a pytest plugin (tests/conftest.py
loads it).

./innodb-stack test runs the tests in two lanes, one after the other. "shared": the tests that do not mind another
test's load beside them, two at a time on pytest-xdist's workers; most integration tests spend their minutes
waiting for scrapes and rule evaluations, so two side by side take little longer than one. Then "alone": the tests
marked ``alone``, one at a time on an otherwise idle machine. Plain pytest runs every test (``--lane all``).

A unit of the shared lane's work is run whole, by one worker, in the order of the collection: a test module (its
module-scoped fixtures set up once), or the tests that share a session fixture, which carry a ``together`` mark
(tests/integration/conftest.py). Only the workers collect, so only they see the marks: each writes every test's
unit to the file the controller names in UNITS before it reports its collection, and the controller's scheduler
reads it. (pytest-xdist's own groups, --dist loadgroup, add the group to each test's node id by an attribute
pytest 9 no longer reads: the groups are lost without a word.)
"""

from __future__ import annotations

import json
import os
import tempfile

import pytest
from xdist.scheduler import LoadScopeScheduling

LANES = ("all", "shared", "alone")
UNITS = "INNODB_STACK_TEST_UNITS"  # the environment variable that names the file


def pytest_addoption(parser):
    parser.addoption("--lane", choices=LANES, default="all",
                     help="shared: the tests not marked alone; alone: those marked alone; all (the default): both")


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: measures what another test's load would move (throughput, the "
                                       "host's load): ./innodb-stack test runs it after the others, by itself")
    config.addinivalue_line("markers", "together(name): shares a session fixture with the other tests of that "
                                       "name, which one worker of the shared lane runs, one after the other")
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):  # xdist's controller
        fd, config.units_file = tempfile.mkstemp(prefix="innodb-stack-test-units-", suffix=".json")
        os.close(fd)
        os.environ[UNITS] = config.units_file  # the workers, started later, inherit it


def pytest_unconfigure(config):
    if getattr(config, "units_file", None):
        os.unlink(config.units_file)


def in_lane(item, lane: str) -> bool:
    return lane == "all" or bool(item.get_closest_marker("alone")) == (lane == "alone")


def unit(item) -> str:
    mark = item.get_closest_marker("together")
    return mark.args[0] if mark else item.nodeid.split("::")[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    lane = config.getoption("lane")
    config.hook.pytest_deselected(items=[item for item in items if not in_lane(item, lane)])
    items[:] = [item for item in items if in_lane(item, lane)]


@pytest.hookimpl(tryfirst=True)  # before the worker reports its collection
def pytest_collection_finish(session):
    if hasattr(session.config, "workerinput"):
        path = os.environ[UNITS]
        # Written whole, then moved into place: both workers write the same.
        with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False) as f:
            json.dump({item.nodeid: unit(item) for item in session.items}, f)
        os.replace(f.name, path)


def pytest_xdist_make_scheduler(config, log):
    return UnitScheduling(config, log)


class UnitScheduling(LoadScopeScheduling):
    """xdist's scheduling by scope, with a unit for a scope, handed out in the collection's order (which
    tests/integration/conftest.py sorts: the longest unit first)."""

    def __init__(self, config, log=None):
        config.option.loadscopereorder = False
        super().__init__(config, log)
        self._units: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._units is None:  # first asked once every worker has collected
            with open(os.environ[UNITS], encoding="utf-8") as f:
                self._units = json.load(f)
        return self._units[nodeid]
