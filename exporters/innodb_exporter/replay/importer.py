"""``innodb-replay import``: a bundle into a fresh Prometheus data directory, served by a replay Prometheus.

The bundle is verified whole (manifest, every checksum) before any directory is touched. Its chunks
become TSDB blocks through ``promtool tsdb create-blocks-from openmetrics``. A bundle recorded without
a Prometheus has no recording-rule series; they are computed for its window with ``promtool tsdb
create-blocks-from rules`` from the stack's own recording rules, so the dashboards show every panel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass

from .bundle import BundleError, BundleReader, Manifest

# The dashboards, in the order the tuning procedure reads them.
DASHBOARDS = ("innodb-overview", "innodb-checkpoint", "innodb-buffer-pool", "innodb-purge", "innodb-redo",
              "innodb-contention", "innodb-host", "innodb-compare")
REPLAY_DATASOURCE_UID = "innodb-replay"  # provisioning/grafana/datasources/prometheus.yml


class ReplayImportError(Exception):
    """The import cannot go on; nothing was left half done."""


@dataclass
class ImportResult:
    manifest: Manifest
    data_dir: str
    seconds: float
    instances: list[str]


def _promtool() -> str:
    path = shutil.which("promtool")
    if not path:
        raise ReplayImportError("promtool is not installed (apt-get install prometheus)")
    return path


def _fresh(data_dir: str) -> None:
    if os.path.exists(data_dir) and os.listdir(data_dir):
        raise ReplayImportError(f"{data_dir} is not empty: import needs a fresh Prometheus data directory "
                                "(remove that one, after innodb-replay stop, or give another --data-dir)")


def import_bundle(path: str, data_dir: str) -> ImportResult:
    """Verify the bundle, then write its samples as TSDB blocks into ``data_dir`` (which must be new)."""
    started = time.monotonic()
    try:
        reader = BundleReader(path)
        manifest = reader.verify()
    except BundleError as exc:
        raise ReplayImportError(str(exc)) from None
    _fresh(data_dir)
    promtool = _promtool()
    created = not os.path.exists(data_dir)
    os.makedirs(data_dir, exist_ok=True)
    instances: set[str] = set()
    try:
        with tempfile.TemporaryDirectory(prefix="innodb-replay-") as scratch:
            for chunk in manifest.chunks:
                source = os.path.join(scratch, "chunk.om")
                data = reader.chunk(chunk["name"])
                instances.update(_instances(data))
                with open(source, "wb") as f:
                    f.write(data)
                out = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", source, data_dir],
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    raise ReplayImportError(f"promtool refused {chunk['name']}: {(out.stderr or out.stdout).strip()[-500:]}")
    except BaseException:
        if created:
            shutil.rmtree(data_dir, ignore_errors=True)
        else:
            for entry in os.listdir(data_dir):
                shutil.rmtree(os.path.join(data_dir, entry), ignore_errors=True)
        raise
    finally:
        reader.close()
    return ImportResult(manifest, data_dir, time.monotonic() - started, sorted(instances))


def _instances(chunk: bytes) -> set[str]:
    found = set()
    for line in chunk.split(b"\n"):
        if line.startswith(b"innodb_up{"):
            marker = line.find(b'instance="')
            if marker >= 0:
                found.add(line[marker + 10:line.index(b'"', marker + 10)].decode())
    return found


def needs_recording_rules(manifest: Manifest) -> bool:
    """A recorded bundle has only what the exporters expose; an export carries the rules' series too."""
    return manifest.kind == "record"


def backfill_rules(prometheus_url: str, rules_file: str, manifest: Manifest, data_dir: str) -> int:
    """Compute the recording rules over the bundle's window into blocks of ``data_dir``; returns blocks added."""
    promtool = _promtool()
    with tempfile.TemporaryDirectory(prefix="innodb-replay-rules-") as out_dir:
        start = manifest.window_start_ms // 1000
        end = manifest.window_end_ms // 1000 + 1
        result = subprocess.run([promtool, "tsdb", "create-blocks-from", "rules", f"--start={start}", f"--end={end}",
                                 f"--url={prometheus_url}", f"--output-dir={out_dir}", "--eval-interval=15s",
                                 rules_file], capture_output=True, text=True)
        if result.returncode != 0:
            raise ReplayImportError(f"promtool could not compute the recording rules: {result.stderr.strip()[-500:]}")
        blocks = [b for b in os.listdir(out_dir) if os.path.isdir(os.path.join(out_dir, b))]
        for block in blocks:
            shutil.move(os.path.join(out_dir, block), os.path.join(data_dir, block))
    return len(blocks)


def wait_ready(prometheus_url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(prometheus_url + "/-/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise ReplayImportError(f"the replay Prometheus at {prometheus_url} did not become ready in {timeout:.0f}s")


def dashboard_urls(grafana_url: str, manifest: Manifest, instance: str | None) -> list[str]:
    params = {"from": manifest.window_start_ms, "to": manifest.window_end_ms, "var-datasource": REPLAY_DATASOURCE_UID}
    if instance:
        params["var-instance"] = instance
    query = urllib.parse.urlencode(params)
    return [f"{grafana_url.rstrip('/')}/d/{uid}?{query}" for uid in DASHBOARDS]


def prometheus_url_for(prometheus_url: str, manifest: Manifest) -> str:
    """Prometheus' graph page on the bundle's window."""
    seconds = max(60, (manifest.window_end_ms - manifest.window_start_ms) // 1000)
    end = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(manifest.window_end_ms / 1000))
    params = {"g0.expr": "innodb_up", "g0.tab": "0", "g0.range_input": f"{seconds}s", "g0.end_input": end}
    return f"{prometheus_url}/graph?{urllib.parse.urlencode(params)}"

