"""Every golden file (the whole exposition of a recorded fixture) lints clean; tests/unit/test_generated.py
holds each equal to what the exporter makes of its fixture."""

from __future__ import annotations

import subprocess

import pytest

from support import golden


@pytest.mark.parametrize("kind,fixture", [("parse", f) for f in golden.status_fixtures()]
                         + [("servers", c) for c in golden.server_captures()])
def test_golden_files_pass_promtool_check_metrics(promtool, kind, fixture):
    with open(golden.golden_path(kind, fixture), "rb") as f:
        out = subprocess.run([promtool, "check", "metrics"], stdin=f, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
