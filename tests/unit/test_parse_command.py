"""``innodb-exporter parse``: what it refuses to read and how much it reads, on verbatim outputs.

A file is one output unless --error-log says it is an error log; statement text inside an output can
forge an output header, a ZIP end record, and lines of any length.
"""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
import types

import pytest

from innodb_bundle import bundle
from innodb_exporter import cli, offline
from support import golden
from support.exporter import exporter_command

STOCK = "mysql-9.7.4-stock.txt"  # "History list length 154"


def run(*argv, limit_memory=False):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(golden.FIXTURES), "..", "exporters"))
    limit = (lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))) if limit_memory else None
    return subprocess.run([*exporter_command(), "parse", *argv], capture_output=True, text=True, env=env, timeout=60,
                          preexec_fn=limit)


def _in_list(text: str, lines: str) -> str:
    """``text`` with ``lines`` in its transaction list, where statement text is printed."""
    at = text.index("LIST OF TRANSACTIONS FOR EACH SESSION:\n") + len("LIST OF TRANSACTIONS FOR EACH SESSION:\n")
    return text[:at] + lines + text[at:]


@pytest.mark.slow
def test_a_header_forged_in_statement_text_is_refused_not_read(tmp_path):
    # A statement that prints a whole output of its own: cut at its header, it would be "the last complete one".
    real = golden.read_status(STOCK)
    forged = real.replace("History list length 154\n", "History list length 99999999\n")
    path = tmp_path / "status.txt"
    path.write_text(_in_list(real, "SELECT 1 /*\n" + forged + "*/\n"), encoding="utf-8")
    out = run(str(path))
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "holds 2 monitor output headers" in out.stderr
    assert "--error-log" in out.stderr and "statement text can forge a header" in out.stderr
    out = run("--error-log", str(path))  # an error log is cut at its headers, forged or not: the README says so
    assert out.returncode == 0 and "2 monitor outputs found" in out.stderr


@pytest.mark.slow
def test_a_single_output_is_read_whole(tmp_path):
    path = tmp_path / "status.txt"
    path.write_text(golden.read_status(STOCK), encoding="utf-8")
    for argv in ((str(path),), ("--error-log", str(path))):
        out = run(*argv)
        assert out.returncode == 0 and "innodb_history_list_length 154.0" in out.stdout
        assert "monitor outputs found" not in out.stderr


def test_a_file_larger_than_the_limit_is_refused_in_bounded_memory():
    # Endless: read as a whole, it grew until killed; under a 1 GiB address space it would fail, and run's
    # timeout stops a read that never ends.
    out = run("/dev/zero", limit_memory=True)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert f"larger than {offline.READ_LIMIT_MIB} MiB" in out.stderr and "--error-log" in out.stderr


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(offline, "READ_LIMIT", 64 * 1024)
    return offline.READ_LIMIT


class _Pipe(io.BytesIO):
    def seekable(self):
        return False


@pytest.mark.parametrize("source", ["file", "pipe"])
def test_an_error_log_larger_than_the_limit_is_read_from_its_end(tmp_path, monkeypatch, capsys, small_limit, source):
    real = golden.read_status(STOCK)
    older = real.replace("History list length 154\n", "History list length 7\n")
    data = ((older + "an error log line\n") * (2 * small_limit // len(older) + 2) + real).encode()
    assert len(data) > 2 * small_limit
    path = tmp_path / "error.log"
    path.write_bytes(data)
    if source == "pipe":
        monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=_Pipe(data)))
    name = str(path) if source == "file" else "-"
    assert cli.run_parse([name]) == 1
    assert "larger than" in capsys.readouterr().err
    if source == "pipe":
        monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=_Pipe(data)))
    assert cli.run_parse(["--error-log", name]) == 0
    out = capsys.readouterr()
    assert "innodb_history_list_length 154.0" in out.out
    assert "MiB are read" in out.err and "monitor outputs found; metrics of the last complete one" in out.err


def test_a_zip_end_record_in_statement_text_leaves_a_text_a_text(tmp_path):
    # 22 bytes of a ZIP end-of-central-directory record in a query pass zipfile.is_zipfile.
    text = _in_list(golden.read_status(STOCK), "SELECT 'PK\x05\x06" + "\x00" * 18 + "'\n")
    path = tmp_path / "status.txt"
    path.write_text(text, encoding="utf-8")
    assert not bundle.is_bundle(str(path))
    out = run(str(path))
    assert out.returncode == 0 and "innodb_history_list_length 154.0" in out.stdout
