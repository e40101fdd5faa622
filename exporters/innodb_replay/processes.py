"""Background processes known by a pid file, so that another command can find and stop them.

The native stack runs its services this way, and `innodb-replay import` its replay Prometheus.

A pid file outlives its process (a crash, a reboot), and the kernel hands its number to another process
sooner or later: a number alone must never be taken for ours. ``start`` marks the process it starts
with the pid file's path in its environment, and ``pid`` believes only a process that carries that mark.
(Not the start time beside the pid in the file: the file stays a bare pid, which ``innodb-replay``'s
users and tests read, and its directory holds nothing else.) A pid file the program writes itself
(mysqld's) is believed when the process runs that program.

With ``log_max_bytes`` the process writes into a pipe to ``innodb_replay.logcap``, which keeps its log
within that size (and one earlier file of it); the writer ends when the process does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

MARK = "INNODB_PROCESS_PID_FILE"  # in the environment of every process start() starts: its pid file


class Process:
    def __init__(self, pid_file: str, log_path: str, cwd: str | None = None, programs: tuple[str, ...] = (),
                 log_max_bytes: int | None = None):
        """``programs``: for a pid file the program writes itself, the names its argv[0] may have (e.g.
        ("mysqld", "mariadbd")); without them the pid file is start()'s own. ``log_max_bytes``: the log
        rotates past it (None: it grows)."""
        self.pid_file = pid_file
        self.log_path = log_path
        self.cwd = cwd
        self.programs = programs
        self.log_max_bytes = log_max_bytes

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
        env = {key: value for key, value in (os.environ if env is None else env).items() if key != MARK}
        with self._log_sink(env) as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={**env, MARK: _mark_value(self.pid_file)}, start_new_session=True,
                                    cwd=self.cwd)
        # Popen returns while exec may still be setting up the new program's environment, which reads
        # empty until then: wait for it, so that pid() knows the process as soon as start() returns.
        deadline = time.monotonic() + 5
        while _mark(proc.pid) is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        with open(self.pid_file, "w") as f:
            f.write(f"{proc.pid}\n")

    def _log_sink(self, env: dict):
        """Where the process writes: its log file, or the pipe to a writer that keeps the log within its size
        (a session of its own, as the process's, so that it outlives this command; not marked as ours)."""
        if not self.log_max_bytes:
            return open(self.log_path, "ab")
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        path = os.pathsep.join(p for p in (package, env.get("PYTHONPATH", "")) if p)
        writer = subprocess.Popen([sys.executable, "-m", "innodb_replay.logcap", self.log_path, str(self.log_max_bytes)],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env={**env, "PYTHONPATH": path}, start_new_session=True)
        return writer.stdin  # closed here once the process holds it: the writer then ends with the process

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
        """The last lines of its log (and of the file before it, when the log has just rotated): why it
        exited, when it did."""
        text = ""
        for path in (self.log_path + ".1", self.log_path):
            try:
                with open(path, "rb") as f:
                    f.seek(max(0, os.fstat(f.fileno()).st_size - 64 * 1024))
                    text += f.read().decode("utf-8", errors="replace")
            except OSError:
                continue
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
