"""The whole exposition for every recorded fixture equals its committed golden file, and lints clean."""

from __future__ import annotations

import subprocess

import pytest

from support import golden


@pytest.mark.parametrize("fixture", golden.status_fixtures())
def test_parse_mode_matches_golden(fixture):
    problem = golden.check("parse", fixture, golden.status_exposition(fixture))
    assert problem is None, problem


@pytest.mark.parametrize("capture", golden.server_captures())
def test_full_pipeline_matches_golden(capture):
    problem = golden.check("servers", capture, golden.capture_exposition(capture))
    assert problem is None, problem


@pytest.mark.parametrize("kind,fixture", [("parse", f) for f in golden.status_fixtures()]
                         + [("servers", c) for c in golden.server_captures()])
def test_golden_files_pass_promtool_check_metrics(promtool, kind, fixture):
    with open(golden.golden_path(kind, fixture), "rb") as f:
        out = subprocess.run([promtool, "check", "metrics"], stdin=f, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
