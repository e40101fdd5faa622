"""The lanes of ./innodb-stack test, and the units of the shared lane's work (tests/conftest.py holds the hooks).

The shared lane runs on two pytest-xdist workers. A unit of work is run whole, by one worker, in the order of
the collection: a test module (its module-scoped fixtures set up once), or the tests that share a session
fixture, which carry a ``together`` mark (tests/integration/conftest.py). Only the workers collect, so only
they see the marks: each writes every test's unit to the file the controller names in UNITS, before it reports
its collection, and the controller's scheduler reads it. (pytest-xdist's own groups, --dist loadgroup, add the
group to each test's node id by an attribute pytest 9 no longer reads: the groups are lost without a word.)
"""

from __future__ import annotations

import json
import os
import tempfile

from xdist.scheduler import LoadScopeScheduling

LANES = ("all", "shared", "alone")
UNITS = "INNODB_STACK_TEST_UNITS"  # the environment variable that names the file


def in_lane(item, lane: str) -> bool:
    return lane == "all" or bool(item.get_closest_marker("alone")) == (lane == "alone")


def unit(item) -> str:
    mark = item.get_closest_marker("together")
    return mark.args[0] if mark else item.nodeid.split("::")[0]


def name_units_file() -> str:
    """The controller's: a file for the workers to write, named in the environment they inherit."""
    fd, path = tempfile.mkstemp(prefix="innodb-stack-test-units-", suffix=".json")
    os.close(fd)
    os.environ[UNITS] = path
    return path


def write_units(items) -> None:
    """A worker's, once it has collected: written whole, then moved into place (both workers write the same)."""
    path = os.environ[UNITS]
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False) as f:
        json.dump({item.nodeid: unit(item) for item in items}, f)
    os.replace(f.name, path)


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
