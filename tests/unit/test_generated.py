"""Every generated file is what its source makes now (tools/generate.py), and the generator says so."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tools import generate


@pytest.mark.parametrize("artifact", generate.ARTIFACTS, ids=lambda a: a.name)
def test_every_generated_file_is_current(artifact):
    stale = generate.stale(artifact)
    assert not stale, "./innodb-stack generate: " + "; ".join(item.describe() for item in stale)


def test_check_names_what_a_changed_threshold_makes_stale(tmp_path):
    """A copy of the repository whose signals/config.py changed one threshold: --check fails and names the
    rule file that threshold goes into; generate writes it again, and --check passes."""
    copy = tmp_path / "repo"
    shutil.copytree(generate.ROOT, copy, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".stack", "build", "__pycache__", "*.egg-info", ".pytest_cache"))
    config = copy / "signals" / "config.py"
    text = config.read_text(encoding="utf-8")
    assert '"checkpoint_age_warning_ratio": 0.75,' in text
    config.write_text(text.replace('"checkpoint_age_warning_ratio": 0.75,', '"checkpoint_age_warning_ratio": 0.7,'),
                      encoding="utf-8")

    def run(*args):
        return subprocess.run([sys.executable, "-m", "tools.generate", *args], cwd=copy, capture_output=True,
                              text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})

    check = run("--check")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "alerts/rules/checkpoint.yml: differs" in check.stdout
    assert run().returncode == 0
    again = run("--check")
    assert again.returncode == 0 and "every generated file is current" in again.stdout, again.stdout
