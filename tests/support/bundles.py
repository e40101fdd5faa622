"""Replay bundles for the tests: sound ones made by the real writer, and hostile ones made the way an
attacker would (who writes the manifest too, so every checksum in it matches), and the import run as
a command with its time and peak memory measured."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass

from innodb_bundle.bundle import BundleWriter, Manifest, series_key

from .exporter import ROOT

START_MS = 1_790_000_000_000  # 2026-09-21: a window of the past, as an incident's


def sound_bundle(path: str, chunks: int = 3, series: int = 4, per_chunk: int = 10, step_ms: int = 5000,
                 kind: str = "export") -> Manifest:
    """A bundle as export writes it: ``chunks`` consecutive chunks of ``series`` series."""
    end = START_MS + chunks * per_chunk * step_ms
    writer = BundleWriter(path, Manifest(kind, "http://prometheus:9090", START_MS, end))
    for c in range(chunks):
        low = START_MS + c * per_chunk * step_ms
        data = {}
        for s in range(series):
            name = "innodb_up" if s == 0 else f"innodb_test_{s}"
            data[series_key(name, {"instance": "db1:3306", "job": "innodb"})] = [
                (low + (i + 1) * step_ms, str(float(s + i))) for i in range(per_chunk)]
        writer.add_chunk(data, low, low + per_chunk * step_ms)
    writer.add_metadata({"innodb_up": {"type": "gauge", "help": "Whether the server answered.", "unit": ""}})
    return writer.close()


def read_members(path: str) -> tuple[dict, dict[str, bytes]]:
    """(manifest, {member: bytes}) of a bundle."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    return json.loads(members.pop("manifest.json")), members


def write_bundle(path: str, manifest, members: dict[str, bytes] | list[tuple[str, bytes]],
                 rehash: bool = True, compression: int = zipfile.ZIP_DEFLATED) -> None:
    """Write members and a manifest, the checksums recomputed as an attacker would (``rehash``)."""
    items = list(members.items()) if isinstance(members, dict) else list(members)
    if rehash and isinstance(manifest, dict):
        manifest["files"] = {n: hashlib.sha256(d).hexdigest() for n, d in items}
    raw = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in items:
            z.writestr(name, data)
        z.writestr("manifest.json", raw)


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float  # the command's peak resident memory


# Run in the child: at exit write its peak resident memory (VmHWM: of this process image only; wait4's
# ru_maxrss also counts the test process it was forked from).
_CHILD = """
import atexit, sys

def peak():
    with open("/proc/self/status") as status, open({out!r}, "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))

atexit.register(peak)
from innodb_replay.cli import main
sys.exit(main(sys.argv[1:]))
"""
# How often the resident memory of the command's processes is read.
WATCH_S = 0.05


def group_resident_bytes(group: int) -> int:
    """The resident memory of every process in a process group (the command and what it runs: promtool)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()  # after the command name, which may hold spaces
            if int(fields[2]) == group:  # pgrp
                total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")  # rss, in pages
        except (OSError, ValueError, IndexError):  # gone meanwhile
            continue
    return total


def replay_command(*args: str, resident_limit: int = 1 << 30, timeout: float = 120, env=None, umask=None) -> Run:
    """``innodb-replay ARGS`` as a command of its own, measured: its time and its own peak memory.

    What must not run away is bounded as it is measured: the resident memory of the command and every process
    it starts (promtool) together, read every WATCH_S, and the time; past either, the whole process group is
    killed (a regression dies of it instead of taking the machine). Not the address space: Go programs such
    as Prometheus 3's promtool reserve far more of it than they use, and die at start under a cap that
    Python lives under."""
    environment = dict(env or os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    with tempfile.TemporaryDirectory(prefix="replay-run-") as scratch:
        peak_file = os.path.join(scratch, "peak")
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", _CHILD.format(out=peak_file), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT, env=environment, stdin=subprocess.DEVNULL,
                                start_new_session=True,
                                preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)
        killed = ""
        try:
            while True:
                try:
                    stdout, stderr = proc.communicate(timeout=WATCH_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                resident = group_resident_bytes(proc.pid)
                if resident > resident_limit and not killed:
                    killed = f"killed by the test: resident memory {resident >> 20} MiB, above {resident_limit >> 20} MiB"
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                elif time.monotonic() - started > timeout:
                    raise subprocess.TimeoutExpired(proc.args, timeout)
        except BaseException:  # the timeout, or the test interrupted: nothing of the command outlives it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        seconds = time.monotonic() - started
        try:
            with open(peak_file) as f:
                peak_kb = int(f.read())
        except (OSError, ValueError):  # killed before it could write it
            peak_kb = 0
    return Run(proc.returncode, stdout, stderr + (f"\n{killed}\n" if killed else ""), seconds, peak_kb / 1024)



def with_promtool(promtool: str, env=None) -> dict[str, str]:
    """An environment in which ``promtool`` is the one innodb-replay finds first on PATH."""
    env = dict(env or os.environ)
    return dict(env, PATH=f"{os.path.dirname(promtool)}{os.pathsep}{env.get('PATH', '')}")
