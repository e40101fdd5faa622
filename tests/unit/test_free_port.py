"""free_port's claims: two processes that hand out ports at once (the test lanes' two workers) never hand out
the same one, and a claim is void once its process has ended."""

from __future__ import annotations

import os
import subprocess
import sys

from stack import servers
from support.golden import TESTS

ROOT = os.path.dirname(TESTS)
CLAIMANT = """
import sys
from stack import servers
servers.CLAIMS = sys.argv[1]
print(servers._claim(int(sys.argv[2])), flush=True)
sys.stdin.read()  # holds its claim until told to end
"""


def claimant(claims: str, port: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLAIMANT, claims, str(port)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "exporters")])))


def test_a_port_claimed_by_a_running_process_is_not_handed_out_until_it_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(servers, "CLAIMS", str(tmp_path))
    other = claimant(str(tmp_path), 23456)
    try:
        assert other.stdout.readline().strip() == "True"
        assert not servers._claim(23456)
        assert servers._claim(23457)
    finally:
        other.communicate("")
    assert servers._claim(23456)  # its claimant has ended
    with open(tmp_path / "23456") as f:
        assert f.read() == str(os.getpid())


def test_free_port_claims_what_it_hands_out(tmp_path, monkeypatch):
    monkeypatch.setattr(servers, "CLAIMS", str(tmp_path))
    port = servers.free_port()
    with open(tmp_path / str(port)) as f:
        assert f.read() == str(os.getpid())
    other = claimant(str(tmp_path), port)
    try:
        assert other.stdout.readline().strip() == "False"
    finally:
        other.communicate("")
