"""Background processes known by a pid file, so that another command can find and stop them.

The native stack runs its services this way, and `innodb-replay import` its replay Prometheus.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time


class Process:
    def __init__(self, pid_file: str, log_path: str, cwd: str | None = None):
        self.pid_file = pid_file
        self.log_path = log_path
        self.cwd = cwd

    def pid(self) -> int | None:
        """The pid when the process runs, else None."""
        try:
            with open(self.pid_file) as f:
                pid = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return None if _gone(pid) else pid

    def start(self, cmd: list[str], env=None) -> None:
        """Start in a session of its own, so that it outlives this command; no-op when it runs."""
        if self.pid():
            return
        for path in (self.pid_file, self.log_path):
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(self.log_path, "ab") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True, cwd=self.cwd)
        with open(self.pid_file, "w") as f:
            f.write(f"{proc.pid}\n")

    def stop(self, timeout: float = 60, remove_pid_file: bool = True) -> bool:
        """SIGTERM, then SIGKILL after ``timeout``; True when it was running."""
        pid = self.pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while not _gone(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.1)
        if remove_pid_file and os.path.exists(self.pid_file):
            os.remove(self.pid_file)
        return True


def _gone(pid: int) -> bool:
    """True once the process has exited; reaps it when this process started it (no zombie)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:  # not our child: another command started it
        pass
    try:
        os.kill(pid, 0)
    except OSError:
        return True
    return False


def terminate(proc: subprocess.Popen | None, timeout: float = 30) -> None:
    """Stop a child started here: SIGTERM, then SIGKILL after ``timeout``; reaped either way."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
