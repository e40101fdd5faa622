"""Background processes known by a pid file, so that another command can find and stop them.

The native stack runs its services this way, and `innodb-replay import` its replay Prometheus.

A pid file outlives its process (a crash, a reboot), and the kernel hands its number to another process
sooner or later: a number alone must never be taken for ours. ``start`` marks the process it starts
with the pid file's path in its environment, and ``pid`` believes only a process that carries that mark.
(Not the start time beside the pid in the file: the file stays a bare pid, which ``innodb-replay``'s
users and tests read, and its directory holds nothing else.) A pid file the program writes itself
(mysqld's) is believed when the process runs that program.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

MARK = "INNODB_PROCESS_PID_FILE"  # in the environment of every process start() starts: its pid file


class Process:
    def __init__(self, pid_file: str, log_path: str, cwd: str | None = None, programs: tuple[str, ...] = ()):
        """``programs``: for a pid file the program writes itself, the names its argv[0] may have (e.g.
        ("mysqld", "mariadbd")); without them the pid file is start()'s own."""
        self.pid_file = pid_file
        self.log_path = log_path
        self.cwd = cwd
        self.programs = programs

    def pid(self) -> int | None:
        """The pid when the process runs, else None (also when another process now has its number)."""
        try:
            with open(self.pid_file) as f:
                pid = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        if _gone(pid):
            return None
        ours = _program(pid) in self.programs if self.programs else _mark(pid) == _mark_value(self.pid_file)
        return pid if ours else None

    def start(self, cmd: list[str], env=None) -> None:
        """Start in a session of its own, so that it outlives this command; no-op when it runs. ``env``:
        its environment (default: this process's)."""
        if self.pid():
            return
        for path in (self.pid_file, self.log_path):
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        env = {**(os.environ if env is None else env), MARK: _mark_value(self.pid_file)}
        with open(self.log_path, "ab") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True, cwd=self.cwd)
        # Popen returns while exec may still be setting up the new program's environment, which reads
        # empty until then: wait for it, so that pid() knows the process as soon as start() returns.
        deadline = time.monotonic() + 5
        while _mark(proc.pid) is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
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

    def log_tail(self, lines: int = 10) -> str:
        """The last lines of its log: why it exited, when it did."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 64 * 1024))
                text = f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _mark_value(pid_file: str) -> str:
    return os.path.abspath(pid_file)


def _mark(pid: int) -> str | None:
    """The MARK in a process's environment; None when it has none or cannot be read (another user's)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return None
    prefix = f"{MARK}=".encode()
    return next((e[len(prefix):].decode(errors="replace") for e in entries if e.startswith(prefix)), None)


def _program(pid: int) -> str | None:
    """The name of the program a process runs: argv[0]'s base name."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv0 = f.read().split(b"\0")[0]
    except OSError:
        return None
    return os.path.basename(argv0.decode(errors="replace")) or None


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
