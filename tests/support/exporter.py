"""Run the real ``innodb-exporter`` as a subprocess and read what it serves."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from innodb_replay.processes import terminate
from prometheus_client.parser import text_string_to_metric_families

from .servers import free_port, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def exporter_command() -> list[str]:
    """The installed console script when there is one, else the package from the checkout."""
    script = os.path.join(os.path.dirname(sys.executable), "innodb-exporter")
    if os.path.exists(script):
        return [script]
    return [sys.executable, "-m", "innodb_exporter"]


class Samples(dict):
    """{(name, frozenset(labels.items())): value} with small lookups."""

    def value(self, name: str, **labels) -> float | None:
        return self.get((name, frozenset(labels.items())))

    def series(self, name: str) -> dict[frozenset, float]:
        return {labels: v for (n, labels), v in self.items() if n == name}


def parse_samples(text: str) -> Samples:
    samples = Samples()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


class Exporter:
    def __init__(self, address: str, user: str, password: str | None, *args: str, my_cnf: str | None = None,
                 command: list[str] | None = None, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        fd, self.log_path = tempfile.mkstemp(prefix="innodb-exporter-", suffix=".log")
        self.password = password
        environment = {k: v for k, v in os.environ.items() if k != "MYSQLD_EXPORTER_PASSWORD"}
        if password is not None:
            environment["MYSQLD_EXPORTER_PASSWORD"] = password
        if command is None:  # the checkout's package; a command of its own (an installed one) runs its own
            environment["PYTHONPATH"] = os.path.join(ROOT, "exporters")
        environment.update(env or {})
        self.cmd = [*(command or exporter_command()), f"--web.listen-address=127.0.0.1:{self.port}",
                    f"--mysqld.address={address}", f"--mysqld.username={user}",
                    f"--config.my-cnf={my_cnf or os.devnull}", *args]
        self._log = os.fdopen(fd, "w")
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT, env=environment)
        wait_for(self._listening, 30, what=f"exporter on {self.url} (log {self.log_path})")

    def _listening(self) -> bool:
        """Accepting connections (whatever its web configuration asks of a client: TLS, a password)."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"the exporter exited with {self.proc.returncode}: {self.log()}")
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def get(self, path: str, timeout_header: float | None = None, timeout: float = 30) -> tuple[int, str]:
        request = urllib.request.Request(self.url + path)
        if timeout_header is not None:
            request.add_header("X-Prometheus-Scrape-Timeout-Seconds", str(timeout_header))
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def scrape(self, timeout_header: float | None = None) -> tuple[Samples, float]:
        started = time.monotonic()
        status, body = self.get("/metrics", timeout_header)
        elapsed = time.monotonic() - started
        assert status == 200, body
        return parse_samples(body), elapsed

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def log(self) -> str:
        self._log.flush()
        with open(self.log_path, encoding="utf-8") as f:
            return f.read()

    def stop(self) -> None:
        terminate(self.proc, timeout=10)
        self._log.close()
        with contextlib.suppress(FileNotFoundError):  # stopped before
            os.unlink(self.log_path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
