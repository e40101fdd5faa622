"""stack/tools.py refuses a Go that cannot build Prometheus 3 and Thanos, before it builds anything."""

from __future__ import annotations

import os

import pytest

from stack import tools


def fake_go(tmp_path, monkeypatch, version: str) -> str:
    """A `go` first on PATH that says it is ``version`` (``go env GOVERSION``) and fails at anything else."""
    folder = tmp_path / "bin"
    folder.mkdir()
    go = folder / "go"
    go.write_text(f'#!/bin/sh\n[ "$1 $2" = "env GOVERSION" ] && echo {version} && exit 0\nexit 2\n')
    go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("INNODB_STACK_TOOLS", str(tmp_path / "tools"))
    return str(go)


def test_debian_bookworms_go_is_refused_with_what_to_install(tmp_path, monkeypatch):
    fake_go(tmp_path, monkeypatch, "go1.19.8")
    with pytest.raises(tools.ToolError, match=r"is go1\.19\.8: .*Go 1\.26 or later .*Go 1\.21 or later"):
        tools.ensure("promtool")
    assert not (tmp_path / "tools" / "promtool").exists()  # nothing started


def test_a_go_that_fetches_the_toolchain_its_modules_ask_for_is_taken(tmp_path, monkeypatch):
    go = fake_go(tmp_path, monkeypatch, "go1.21.0")
    assert tools._go() == go


def test_a_go_without_a_version_is_refused(tmp_path, monkeypatch):
    fake_go(tmp_path, monkeypatch, "")
    with pytest.raises(tools.ToolError, match="does not say its version"):
        tools._go()
