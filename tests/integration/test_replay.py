"""Replay for real: export a window off the native stack's Prometheus (which scraped MariaDB under
sysbench for minutes), import it into a second Prometheus, and compare every series, timestamp and
value; the same for record -> import. And the ways an import or export must fail cleanly."""

from __future__ import annotations

import datetime
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile

import pytest
import yaml
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from innodb_bundle import limits
from innodb_bundle.bundle import BundleReader, BundleWriter, Manifest, series_key
from innodb_replay.export import DEFAULT_SELECTOR, Prometheus
from innodb_replay.importer import RULES_INTERVAL_S
from support.bundles import START_MS, sound_bundle
from support.golden import TESTS
from support.servers import free_port

pytestmark = pytest.mark.integration
ROOT = os.path.dirname(TESTS)


def replay(*args, timeout=300, **kw):
    command = [os.path.join(os.path.dirname(sys.executable), "innodb-replay")]
    if not os.path.exists(command[0]):
        command = [sys.executable, "-m", "innodb_replay.cli"]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env, **kw)


@pytest.fixture(scope="module")
def stack(native_stack):
    return native_stack


def raw(prometheus_url: str, selector: str, start_ms: int, end_ms: int) -> dict:
    """Every stored sample in [start, end]: {series: [(ms, value), ...]}."""
    out = {}
    for r in Prometheus(prometheus_url).raw(selector, start_ms, end_ms):
        samples = [(round(float(t) * 1000), v) for t, v in r["values"]]
        samples = [(t, v) for t, v in samples if start_ms <= t <= end_ms]
        if samples:
            out[tuple(sorted(r["metric"].items()))] = samples
    return out


def bundle_samples(path: str) -> dict:
    reader = BundleReader(path)
    out = {}
    for chunk in reader.manifest.chunks:
        for family in text_string_to_metric_families(reader.chunk(chunk.name).decode()):
            for s in family.samples:
                key = tuple(sorted({**s.labels, "__name__": s.name}.items()))
                out.setdefault(key, []).append((s.timestamp.sec * 1000 + s.timestamp.nsec // 1_000_000, s.value))
    return out


def same_values(a, b) -> bool:
    return len(a) == len(b) and all(t1 == t2 and (float(v1) == float(v2) or (math.isnan(float(v1)) and math.isnan(float(v2))))
                                    for (t1, v1), (t2, v2) in zip(sorted(a), sorted(b)))


@pytest.fixture
def replay_dir():
    d = tempfile.mkdtemp(prefix="innodb-replay-data-")
    yield d
    replay("stop", "--data-dir", os.path.join(d, "data"))
    shutil.rmtree(d, ignore_errors=True)


def test_export_then_import_loses_and_adds_nothing(stack, replay_dir):
    bundle = os.path.join(replay_dir, "incident.zip")
    source = stack.s.url("prometheus")
    out = replay("export", f"--prometheus={source}", "--start=now-120s", "--end=now-5s", f"--out={bundle}",
                 "--chunk-samples=1000")  # many chunks, to cross chunk boundaries
    assert out.returncode == 0, out.stderr
    reader = BundleReader(bundle)
    contents, manifest = reader.verify(), reader.manifest
    assert len(manifest.chunks) >= 5 and contents.samples == manifest.samples > 10000
    port = free_port()
    out = replay("import", bundle, f"--data-dir={os.path.join(replay_dir, 'data')}", f"--port={port}")
    assert out.returncode == 0, out.stderr
    assert f"imported {contents.samples} samples of {contents.series} series" in out.stdout
    with open(os.path.join(ROOT, "dashboards", "index.json")) as f:
        index = json.load(f)
    assert f"var-datasource={index['datasources']['replay']}" in out.stdout
    assert all(f"/d/{d['uid']}?from={manifest.window_start_ms}" in out.stdout for d in index["dashboards"])
    before = raw(source, DEFAULT_SELECTOR, manifest.window_start_ms, manifest.window_end_ms)
    after = raw(f"http://127.0.0.1:{port}", DEFAULT_SELECTOR, manifest.window_start_ms, manifest.window_end_ms)
    assert set(before) == set(after), "series differ"
    assert before == after, "samples differ"
    assert sum(len(v) for v in after.values()) == manifest.samples and len(after) == manifest.series


def test_record_then_import_loses_and_adds_nothing(stack, replay_dir):
    bundle = os.path.join(replay_dir, "recorded.zip")
    instance = stack.s.address("mariadb")
    command = [f"--target=innodb={stack.s.url('innodb_exporter')}/metrics",
               f"--target=mysqld={stack.s.url('mysqld_exporter')}/metrics",
               f"--target=node={stack.s.url('node_exporter')}/metrics", f"--instance={instance}", "--interval=2",
               f"--out={bundle}", "--texts", f"--mysqld.address={instance}",
               f"--config.my-cnf={stack.cnf_path('innodb_exporter')}", "--texts-interval=5"]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    proc = subprocess.Popen([sys.executable, "-m", "innodb_replay.cli", "record", *command],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    time.sleep(25)
    proc.send_signal(signal.SIGINT)  # Ctrl-C finishes the bundle
    stdout, stderr = proc.communicate(60)
    assert proc.returncode == 0, stderr
    reader = BundleReader(bundle)
    contents, manifest = reader.verify(), reader.manifest
    assert manifest.kind == "record" and contents.samples > 1000 and contents.texts >= 2
    recorded = bundle_samples(bundle)
    port = free_port()
    out = replay("import", bundle, f"--data-dir={os.path.join(replay_dir, 'data')}", f"--port={port}")
    assert out.returncode == 0, out.stderr
    served = raw(f"http://127.0.0.1:{port}", f'{{instance="{instance}"}}', manifest.window_start_ms,
                 manifest.window_end_ms)
    rules = {k for k in served if ":" in dict(k)["__name__"]}
    assert rules, "the recording rules the dashboards use were not computed for the recorded window"
    served = {k: v for k, v in served.items() if k not in rules}
    assert set(recorded) == set(served), "series differ"
    assert all(same_values(recorded[k], served[k]) for k in recorded), "samples differ"
    # The raw texts it kept read back with the exporter's parser.
    parsed = subprocess.run([sys.executable, "-m", "innodb_exporter", "parse", bundle], capture_output=True,
                            text=True, cwd=ROOT, env=env)
    assert parsed.returncode == 0 and "innodb_history_list_length" in parsed.stdout, parsed.stderr


def test_rules_are_computed_for_a_window_that_starts_a_second_before_a_block_boundary(replay_dir):
    """promtool computes rules block by block (2 h) and gives up at the first block in which no evaluation
    falls: such a window once got no rule output at all (the live bottleneck test saw it now and then)."""
    boundary = -(-START_MS // limits.BLOCK_MS) * limits.BLOCK_MS  # the first block boundary after START_MS
    start, end = boundary - 1000, boundary + 180_000
    bundle = os.path.join(replay_dir, "boundary.zip")
    writer = BundleWriter(bundle, Manifest("export", "http://prometheus:9090", start, end))
    writer.add_chunk({series_key("innodb_up", {"instance": "db1:3306", "job": "innodb"}):
                      [(t, "1") for t in range(boundary, end + 1, 5000)]}, start, end)
    writer.close()
    rules = os.path.join(replay_dir, "rules.yml")
    with open(rules, "w") as f:
        yaml.safe_dump({"groups": [{"name": "boundary", "rules": [
            {"record": "job:innodb_up:max", "expr": "max by (job) (innodb_up)"}]}]}, f)
    port = free_port()
    out = replay("import", bundle, f"--data-dir={os.path.join(replay_dir, 'data')}", f"--port={port}",
                 f"--rules={rules}")
    assert out.returncode == 0, out.stderr
    assert "recording rules the bundle lacks, run 1 of 1: job:innodb_up:max (TSDB blocks written: 1)" in out.stderr
    computed = raw(f"http://127.0.0.1:{port}", "job:innodb_up:max", start - 600_000, end)
    times = [t for samples in computed.values() for t, _ in samples]
    assert times, f"no rule output for the window: {out.stdout}"
    # Evaluated from two intervals before the window, where there is no data: nothing written there.
    assert min(times) >= start and max(times) >= end - 2 * RULES_INTERVAL_S * 1000


@pytest.fixture(scope="module")
def small_bundle(stack):
    """A minute of the stack's metrics, exported once for the tests that only need some bundle."""
    directory = tempfile.mkdtemp(prefix="innodb-replay-bundle-")
    path = os.path.join(directory, "minute.zip")
    out = replay("export", f"--prometheus={stack.s.url('prometheus')}", "--start=now-60s", f"--out={path}", "--quiet")
    assert out.returncode == 0, out.stderr
    yield path
    shutil.rmtree(directory, ignore_errors=True)


def _untouched(data_dir):
    return not os.path.exists(data_dir)


def test_truncated_bundle_fails_before_touching_the_data_directory(small_bundle, replay_dir):
    bundle = small_bundle
    with open(bundle, "rb") as f:
        data = f.read()
    cut = os.path.join(replay_dir, "cut.zip")
    with open(cut, "wb") as f:
        f.write(data[: len(data) * 2 // 3])
    data_dir = os.path.join(replay_dir, "data")
    out = replay("import", cut, f"--data-dir={data_dir}", "--no-start")
    assert out.returncode == 1 and "not a complete bundle" in out.stderr, out.stderr
    assert _untouched(data_dir)


def test_checksum_mismatch_fails_before_touching_the_data_directory(small_bundle, replay_dir):
    bundle = small_bundle
    altered = os.path.join(replay_dir, "altered.zip")
    with zipfile.ZipFile(bundle) as src, zipfile.ZipFile(altered, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in src.namelist():
            data = src.read(name)
            if name.startswith("samples/"):
                data = data.replace(b" 1 ", b" 2 ", 1)  # one value changed, the manifest kept
            dst.writestr(name, data)
    data_dir = os.path.join(replay_dir, "data")
    out = replay("import", altered, f"--data-dir={data_dir}", "--no-start")
    assert out.returncode == 1 and "checksum mismatch" in out.stderr, out.stderr
    assert _untouched(data_dir)


def test_empty_window_writes_nothing(stack, replay_dir):
    bundle = os.path.join(replay_dir, "empty.zip")
    out = replay("export", f"--prometheus={stack.s.url('prometheus')}", "--start=2001-01-01T00:00:00Z",
                 "--end=2001-01-01T01:00:00Z", f"--out={bundle}", "--quiet")
    assert out.returncode == 1 and "no samples" in out.stderr, out.stderr
    assert not os.path.exists(bundle) and not os.path.exists(bundle + ".partial")


def test_prometheus_down_is_a_clear_error(replay_dir):
    bundle = os.path.join(replay_dir, "down.zip")
    out = replay("export", f"--prometheus=http://127.0.0.1:{free_port()}", "--start=now-5m", f"--out={bundle}")
    assert out.returncode == 1 and "cannot reach Prometheus" in out.stderr, out.stderr
    assert not os.listdir(replay_dir)


def test_the_data_directory_must_be_fresh(small_bundle, replay_dir):
    bundle = small_bundle
    data_dir = os.path.join(replay_dir, "data")
    os.makedirs(data_dir)
    with open(os.path.join(data_dir, "keep-me"), "w") as f:
        f.write("x")
    out = replay("import", bundle, f"--data-dir={data_dir}", "--no-start")
    assert out.returncode == 1 and "not empty" in out.stderr
    assert os.listdir(data_dir) == ["keep-me"]


def test_manifest_describes_the_bundle(stack, small_bundle, replay_dir):
    bundle = small_bundle
    with zipfile.ZipFile(bundle) as z:
        manifest = json.loads(z.read("manifest.json"))
        metadata = json.loads(z.read("metadata.json"))
    assert manifest["format"] == "innodb-replay/1" and manifest["tool"].startswith("innodb-replay ")
    assert manifest["source"] == stack.s.url("prometheus") and manifest["selector"] == DEFAULT_SELECTOR
    assert set(manifest["files"]) == {c["name"] for c in manifest["chunks"]} | {"metadata.json"}
    assert metadata["innodb_checkpoint_age_bytes"]["type"] == "gauge"
    assert "checkpoint" in metadata["innodb_checkpoint_age_bytes"]["help"].lower()


def test_a_started_import_keeps_its_files_to_itself_and_stops(tmp_path):
    """Its pid file and log go to DATA_DIR.prometheus/, nothing else beside the data directory is touched
    (a prometheus.yml there stays as it was), and innodb-replay stop finds it."""
    bundle = str(tmp_path / "b.zip")
    sound_bundle(bundle, chunks=2, series=3)
    parent = tmp_path / "incident"
    parent.mkdir()
    (parent / "prometheus.yml").write_text("# someone else's\n")
    data_dir = parent / "data"
    port = free_port()
    try:
        out = replay("import", bundle, f"--data-dir={data_dir}", f"--port={port}")
        assert out.returncode == 0, out.stderr
        assert sorted(os.listdir(parent)) == ["data", "data.prometheus", "prometheus.yml"]
        assert (parent / "prometheus.yml").read_text() == "# someone else's\n"
        assert sorted(os.listdir(parent / "data.prometheus")) == ["prometheus.log", "prometheus.pid"]
        served = raw(f"http://127.0.0.1:{port}", '{job="innodb"}', 0, 2**41)
        assert sum(len(v) for v in served.values()) == BundleReader(bundle).verify().samples
        # A second import into the same place is refused before it touches anything.
        again = replay("import", bundle, f"--data-dir={data_dir}", f"--port={free_port()}")
        assert again.returncode == 1 and "already serves" in again.stderr, again.stderr
        pid = int((parent / "data.prometheus" / "prometheus.pid").read_text())
    finally:
        stopped = replay("stop", f"--data-dir={data_dir}")
    assert stopped.returncode == 0 and stopped.stdout.strip() == "stopped"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_an_import_refuses_a_home_it_did_not_make(tmp_path):
    bundle = str(tmp_path / "b.zip")
    sound_bundle(bundle)
    (tmp_path / "data.prometheus").mkdir()
    (tmp_path / "data.prometheus" / "notes.txt").write_text("mine")
    out = replay("import", bundle, f"--data-dir={tmp_path / 'data'}", f"--port={free_port()}")
    assert out.returncode == 1 and "did not put there" in out.stderr, out.stderr
    assert not (tmp_path / "data").exists()
    assert os.listdir(tmp_path / "data.prometheus") == ["notes.txt"]


def test_an_export_carries_the_evidence_captures_of_its_window(stack, replay_dir):
    """A capture the stack's exporter took goes into the bundle, and innodb-exporter parse reads it there."""
    import urllib.request

    exporter = stack.s.url("innodb_exporter")
    alert = {"status": "firing", "labels": {"alertname": "InnoDBCheckpointAgeHigh", "instance": stack.s.address("mariadb"),
                                            "severity": "warning"}}
    request = urllib.request.Request(exporter + "/capture", data=json.dumps({"version": "4", "alerts": [alert]}).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.load(response)
    assert answer["started"] or answer["cooling_down"], answer  # cooling down: another test's capture is there
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with urllib.request.urlopen(exporter + "/api/captures", timeout=10) as response:
            listing = json.load(response)["captures"]
        if listing:
            break
        time.sleep(1)
    assert listing, "no capture appeared"
    started = datetime.datetime.fromisoformat(listing[0]["started"]).timestamp()
    bundle = os.path.join(replay_dir, "with-captures.zip")
    out = replay("export", "--prometheus", stack.s.url("prometheus"), "--start", f"{started - 60:.0f}",
                 "--end", f"{time.time() + 1:.0f}", "--out", bundle, "--quiet", "--captures", exporter)
    assert out.returncode == 0, out.stderr
    assert "evidence captures" in out.stdout
    with zipfile.ZipFile(bundle) as z:
        texts = [n for n in z.namelist() if n.startswith(f"texts/{listing[0]['id']}-")]
    assert any(n.endswith("engine-innodb-status.txt") for n in texts) and any(n.endswith("capture.json") for n in texts)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    parsed = subprocess.run([sys.executable, "-m", "innodb_exporter", "parse", bundle], capture_output=True, text=True,
                            env=env, timeout=60)
    assert parsed.returncode == 0, parsed.stderr
    assert "innodb_redo_lsn_bytes" in parsed.stdout
