"""The lanes of ./innodb-stack test (support/lanes.py), on a small suite run by pytest-xdist for real: the tests of
a ``together`` unit run on one worker, in order, though they live in two modules; ``alone`` tests run only in
their lane."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support.golden import TESTS
from support.lanes import UNITS

pytestmark = pytest.mark.slow  # starts pytest-xdist's workers
# Without what the pytest running this test says to the pytests it starts (PYTEST_ADDOPTS, xdist's worker id).
CLEAN = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_") and name != UNITS}

RECORD = """
import os

import pytest


def record(name):
    with open(os.environ["LANE_LOG"], "a") as f:
        f.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')} {name}\\n")
"""
SUITE = {
    "conftest.py": 'pytest_plugins = ("support.lanes",)\n',
    "test_a.py": RECORD + """
@pytest.mark.together("shared-fixture")
def test_a1():
    record("a1")


@pytest.mark.together("shared-fixture")
def test_a2():
    record("a2")


def test_a3():
    record("a3")


@pytest.mark.alone
def test_alone():
    record("alone")
""",
    "test_b.py": RECORD + """
@pytest.mark.together("shared-fixture")
def test_b1():
    record("b1")


@pytest.mark.together("shared-fixture")
def test_b2():
    record("b2")
""",
    "test_c.py": RECORD + "".join(f"\n\ndef test_c{n}():\n    record('c{n}')\n" for n in range(6)),
}


def run(tmp_path, *args) -> list[tuple[str, str]]:
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    for name, text in SUITE.items():
        (suite / name).write_text(text)
    log = tmp_path / f"lane{len(list(tmp_path.glob('lane*')))}.log"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(suite)],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120,
                            env={**CLEAN, "PYTHONPATH": TESTS, "LANE_LOG": str(log)})
    assert result.returncode == 0, result.stdout + result.stderr
    return [tuple(line.split()) for line in log.read_text().splitlines()]


def test_a_together_unit_runs_whole_on_one_worker_and_alone_tests_wait_for_their_lane(tmp_path):
    ran = run(tmp_path, "-n", "2", "--lane", "shared")
    names = [name for _, name in ran]
    assert sorted(names) == sorted(["a1", "a2", "a3", "b1", "b2", *(f"c{n}" for n in range(6))])
    together = [(worker, name) for worker, name in ran if name in {"a1", "a2", "b1", "b2"}]
    assert len({worker for worker, _ in together}) == 1, ran
    assert [name for _, name in together] == ["a1", "a2", "b1", "b2"]
    assert {worker for worker, _ in ran} == {"gw0", "gw1"}  # the other units went to the other worker too
    assert run(tmp_path, "--lane", "alone") == [("main", "alone")]


def test_plain_pytest_runs_every_test(tmp_path):
    assert len(run(tmp_path)) == 12
