"""Replay bundles for the tests: sound ones made by the real writer, and hostile ones made the way an
attacker would (who writes the manifest too, so every checksum in it matches), and the import run as
a command with its time and peak memory measured."""

from __future__ import annotations

import hashlib
import json
import os
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


# Run in the child: cap its address space, and at exit write its peak resident memory (VmHWM: of this
# process image only; wait4's ru_maxrss also counts the test process it was forked from).
_CHILD = """
import atexit, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))

def peak():
    with open("/proc/self/status") as status, open({out!r}, "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))

atexit.register(peak)
from innodb_replay.cli import main
sys.exit(main(sys.argv[1:]))
"""


def replay_command(*args: str, address_space: int = 1 << 30, timeout: float = 120, env=None, umask=None) -> Run:
    """``innodb-replay ARGS`` in a process whose address space is capped (a regression dies of it instead
    of taking the machine), measured: its time and its own peak memory."""
    environment = dict(env or os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    with tempfile.TemporaryDirectory(prefix="replay-run-") as scratch:
        peak_file = os.path.join(scratch, "peak")
        code = _CHILD.format(cap=address_space, out=peak_file)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                              env=environment, stdin=subprocess.DEVNULL, timeout=timeout,
                              preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)
        seconds = time.monotonic() - started
        with open(peak_file) as f:
            peak_kb = int(f.read())
    return Run(proc.returncode, proc.stdout, proc.stderr, seconds, peak_kb / 1024)
