"""The benchmarks stay runnable: the paths that need no server (tests/integration/test_benchmarks_live.py
runs the others; the figures come from full runs)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support.golden import TESTS

BENCHMARKS = os.path.join(os.path.dirname(TESTS), "benchmarks")


@pytest.mark.slow
def test_parse_benchmark_runs():
    out = subprocess.run([sys.executable, os.path.join(BENCHMARKS, "scrape_benchmark.py"), "--only-parse"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "parse 1.0" in out.stdout and "MB status text" in out.stdout


def test_replay_benchmark_starts():
    out = subprocess.run([sys.executable, os.path.join(BENCHMARKS, "replay_benchmark.py"), "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--samples-per-series" in out.stdout, out.stderr


def test_thanos_benchmark_starts():
    out = subprocess.run([sys.executable, os.path.join(BENCHMARKS, "thanos_benchmark.py"), "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--block" in out.stdout, out.stderr
