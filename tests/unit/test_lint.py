"""Static checks of the code: pyflakes over the Python, syntax of the shell scripts."""

from __future__ import annotations

import os
import subprocess
import sys

from support.golden import TESTS

ROOT = os.path.dirname(TESTS)


def test_pyflakes_finds_nothing():
    dirs = [os.path.join(ROOT, d)
            for d in ("exporters", "alerts", "dashboards", "signals", "stack", "tests", "benchmarks")]
    out = subprocess.run([sys.executable, "-m", "pyflakes", *dirs], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_shell_scripts_parse():
    for shell, script in (("bash", "innodb-stack"), ("bash", "stack/install-packages.sh"), ("bash", ".ci/run"),
                          ("sh", "provisioning/prometheus/write-targets.sh"), ("sh", "provisioning/sysbench/load.sh"),
                          ("sh", "provisioning/mysql/init-exporter.sh")):
        out = subprocess.run([shell, "-n", os.path.join(ROOT, script)], capture_output=True, text=True)
        assert out.returncode == 0, f"{script}: {out.stderr}"
