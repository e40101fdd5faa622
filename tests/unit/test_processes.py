"""Processes known by a pid file (innodb_replay/processes.py) and the native stack's use of them, with real
processes: a pid file outlives its process, and its number may belong to another process by now."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from innodb_replay.processes import Process
from stack.native import Stack
from stack.settings import Settings
from support.servers import wait_for


@pytest.fixture
def stranger():
    """A process no Process started: what a reused pid number points at after a reboot or a crash."""
    proc = subprocess.Popen(["sleep", "300"])
    # Popen may return before exec has set up the new program's command line.
    wait_for(lambda: pathlib.Path(f"/proc/{proc.pid}/cmdline").read_bytes(), 5, what="sleep to run")
    yield proc
    proc.kill()
    proc.wait()


def alive(proc: subprocess.Popen) -> bool:
    return proc.poll() is None


def test_a_pid_file_whose_number_another_process_has_now_is_not_ours(tmp_path, stranger):
    pid_file = tmp_path / "prometheus.pid"
    pid_file.write_text(f"{stranger.pid}\n")
    process = Process(str(pid_file), str(tmp_path / "prometheus.log"))
    assert process.pid() is None
    assert process.stop(timeout=5) is False
    assert alive(stranger)


def test_the_process_start_started_is_found_and_stopped(tmp_path):
    process = Process(str(tmp_path / "run" / "sleep.pid"), str(tmp_path / "logs" / "sleep.log"))
    process.start(["sleep", "300"])
    pid = process.pid()
    # The pid file stays a bare number: innodb-replay's users read it so.
    assert pid and int((tmp_path / "run" / "sleep.pid").read_text()) == pid
    process.start(["sleep", "300"])  # running: no second one
    assert process.pid() == pid
    assert process.stop(timeout=5) is True
    assert process.pid() is None and not (tmp_path / "run" / "sleep.pid").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_another_pid_file_s_process_is_not_ours_either(tmp_path):
    """Two services of one stack: each pid file takes only the process started for it."""
    first = Process(str(tmp_path / "a.pid"), str(tmp_path / "a.log"))
    first.start(["sleep", "300"])
    try:
        (tmp_path / "b.pid").write_text(f"{first.pid()}\n")
        assert Process(str(tmp_path / "b.pid"), str(tmp_path / "b.log")).pid() is None
    finally:
        first.stop(timeout=5)


def test_a_pid_file_the_program_writes_itself_is_believed_for_that_program_only(tmp_path, stranger):
    pid_file = tmp_path / "mysqld.pid"
    pid_file.write_text(f"{stranger.pid}\n")
    assert Process(str(pid_file), str(tmp_path / "log"), programs=("mysqld", "mariadbd")).pid() is None
    assert Process(str(pid_file), str(tmp_path / "log"), programs=("sleep",)).pid() == stranger.pid


def test_down_and_status_leave_a_reused_pid_alone(tmp_path, stranger):
    """The stack's pid files from before a reboot, every one now the number of an unrelated process."""
    stack = Stack(Settings(root=str(tmp_path / ".stack")))
    pid_files = [p.pid_file for p in [*stack.services.values(), *stack.server_processes.values()]]
    for path in pid_files:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(f"{stranger.pid}\n")
    assert [pid for _, pid, _ in stack.status()] == [None] * len(stack.status())
    assert stack.running() == []
    stack.down()
    assert alive(stranger)


def test_a_log_tail_is_its_last_lines(tmp_path):
    process = Process(str(tmp_path / "x.pid"), str(tmp_path / "x.log"))
    process.start(["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo line $i; done; exit 3"])
    wait_for(lambda: process.pid() is None, 10, what="the shell to exit")
    assert process.log_tail(3) == "line 10\nline 11\nline 12"


def test_a_log_kept_within_its_size_rotates_at_whole_lines_and_ends_with_its_process(tmp_path):
    """The native stack's logs grew without bound: the exporter's took 230 MB in one webhook flood."""
    log = tmp_path / "logs" / "chatty.log"
    process = Process(str(tmp_path / "run" / "chatty.pid"), str(log), log_max_bytes=50_000)
    process.start([sys.executable, "-c", "for i in range(100_000): print(f'line {i:06d} ' + 'x' * 40)"])
    wait_for(lambda: process.pid() is None, 60, what="the process to end")
    wait_for(lambda: log.read_bytes().endswith(b"line 099999 " + b"x" * 40 + b"\n"), 60, what="its last line")
    rotated = pathlib.Path(f"{log}.1")
    assert log.stat().st_size <= 50_000 and rotated.stat().st_size <= 50_000
    numbers = [int(line.split()[1]) for line in (rotated.read_text() + log.read_text()).splitlines()]
    assert numbers == list(range(numbers[0], 100_000))  # whole lines, none lost across the rotation
    assert process.log_tail(3).splitlines()[-1].startswith("line 099999")


def test_every_service_of_the_native_stack_keeps_its_log_within_a_size(tmp_path):
    settings = Settings(root=str(tmp_path))
    stack = Stack(settings)
    assert {name: p.log_max_bytes for name, p in stack.services.items()} == dict.fromkeys(stack.services,
                                                                                         settings.log_max_bytes)
    assert all(p.log_path.startswith(settings.path("logs")) for p in stack.services.values())
