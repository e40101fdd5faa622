"""`./innodb-stack up` says when the grafana binary it starts is older than the oldest Grafana the dashboards
work with (dashboards/grafana_version.py), from what the binary's -v prints."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from dashboards.grafana_version import OLDEST, OLDEST_TEXT
from stack import grafana
from stack.native import Stack
from stack.settings import DEFAULT_PORTS, Settings
from support.golden import TESTS
from support.servers import free_port

ROOT = os.path.dirname(TESTS)

# What -v prints, verbatim: the grafana binary (urfave/cli's "NAME version VERSION"; this line from a Grafana
# 9.4.0-pre built from source), and grafana-server (pkg/cmd/grafana-server/commands/cli.go: "Version %s
# (commit: %s, branch: %s)").
GRAFANA_9_4_PRE = "grafana version 9.4.0-pre"
GRAFANA_SERVER_8 = "Version 8.5.27 (commit: 7ef2e2b1c8, branch: HEAD)"
GRAFANA_11 = "grafana version 11.6.0"


def fake(tmp_path, name: str, says: str, to_stderr: bool = False, serves: bool = False) -> str:
    """A program called ``name`` that prints ``says`` for -v; with ``serves``, runs until stopped otherwise.
    In Python, one process from start to end: a shell that exec'd or forked would leave the stack a moment
    without the mark it knows its processes by, or a child behind when stopped."""
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!{sys.executable}\nimport sys, time\n"
                    f"if sys.argv[1:] == ['-v']:\n    print({says!r}, file=sys.{'stderr' if to_stderr else 'stdout'})\n"
                    f"    sys.exit(0)\n" + ("time.sleep(300)\n" if serves else "sys.exit(1)\n"))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.parametrize("says, version",
                         [(GRAFANA_9_4_PRE, (9, 4)), (GRAFANA_SERVER_8, (8, 5)), (GRAFANA_11, (11, 6))])
def test_the_version_is_read_as_each_binary_prints_it(tmp_path, says, version):
    assert grafana.version(fake(tmp_path, "grafana", says)) == version
    assert grafana.version(fake(tmp_path, "grafana-server", says, to_stderr=True)) == version


def test_an_older_grafana_is_named_with_the_oldest_that_works(tmp_path):
    problem = grafana.version_problem(fake(tmp_path, "grafana-server", GRAFANA_SERVER_8))
    assert "is Grafana 8.5, older than 9.4, the oldest the dashboards work with" in problem
    assert f"install Grafana {OLDEST_TEXT} or newer" in problem
    assert grafana.version_problem(fake(tmp_path, "grafana", GRAFANA_9_4_PRE)) is None  # the oldest, pre-release
    assert grafana.version_problem(fake(tmp_path, "grafana", GRAFANA_11)) is None
    assert (9, 3) < OLDEST <= (9, 4)


def test_a_binary_that_names_no_version_is_said_to(tmp_path):
    problem = grafana.version_problem(fake(tmp_path, "grafana", "usage: grafana [command]"))
    assert "names no version" in problem and OLDEST_TEXT in problem
    assert grafana.version(str(tmp_path / "missing")) is None


def test_up_warns_at_the_start_and_in_its_summary_and_still_starts_grafana(tmp_path, monkeypatch, capsys):
    binary = fake(tmp_path, "grafana", GRAFANA_SERVER_8.replace("Version", "grafana version"), serves=True)
    monkeypatch.setenv("PATH", f"{os.path.dirname(binary)}:{os.environ['PATH']}")
    stack = Stack(Settings(root=str(tmp_path / ".stack"), ports={name: free_port() for name in DEFAULT_PORTS},
                           mysql_address="db1.example:3306"))
    try:
        stack._start_grafana()
        assert stack.services["grafana"].pid()
        stack._print_urls()
    finally:
        stack.services["grafana"].stop(timeout=5)
    out = capsys.readouterr()
    warning = f"warning: {binary} is Grafana 8.5, older than {OLDEST_TEXT}"
    assert out.err.count(warning) == 2 and "Grafana: user admin" in out.out


def test_the_readme_and_the_provisioning_state_the_oldest_grafana():
    stated = f"Grafana {OLDEST_TEXT} or newer"
    for path in ("README.md", "provisioning/grafana/README.md", "provisioning/grafana/dashboards/innodb.yml"):
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            assert stated in " ".join(f.read().replace("*", "").split()), path
