"""``innodb-replay import`` with promtool and without a server: the promtool runs and their bounds, the
files it leaves, the links it prints."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess

import pytest
import yaml
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from innodb_bundle import limits
from innodb_bundle.bundle import BundleReader, BundleWriter, Manifest, series_key
from innodb_bundle.manifest import Chunk
from innodb_replay import cli, importer, links, replay_prometheus
from innodb_replay.importer import (REPLAY_SCRAPE_INTERVAL_S, RULES_INTERVAL_S, ReplayImportError, import_bundle,
                                    most_blocks, plan_runs, sparse_samples_note)
from stack.native import Stack
from stack.settings import Settings
from support.bundles import START_MS, replay_command, sound_bundle, with_promtool
from support.exporter import ROOT

DAY_MS = 24 * limits.HOUR_MS


def test_runs_group_dense_chunks_by_size_and_sparse_ones_by_days():
    dense = [Chunk(f"samples/{n:06d}.om", START_MS + n * 60_000, START_MS + (n + 1) * 60_000, 10, 50_000)
             for n in range(30)]
    runs = plan_runs(dense, lambda name: 5 * limits.MiB)
    assert [len(r) for r in runs] == [12, 12, 6]  # 64 MiB of 5 MiB chunks
    sparse = [Chunk(f"samples/{n:06d}.om", START_MS + n * DAY_MS, START_MS + (n + 1) * DAY_MS, 1, 12)
              for n in range(31)]
    runs = plan_runs(sparse, lambda name: 2000)
    assert len(runs) == 1 and most_blocks(runs) == 31 * 12 + 1


def test_a_bundle_that_would_make_too_many_blocks_is_refused_before_the_data_directory(tmp_path, monkeypatch):
    bundle = str(tmp_path / "b.zip")
    sound_bundle(bundle, chunks=3)
    with BundleReader(bundle) as reader:
        runs = plan_runs(reader.manifest.chunks, reader.size)
    monkeypatch.setattr(limits, "BLOCKS", most_blocks(runs) - 1)
    with pytest.raises(ReplayImportError, match="TSDB blocks; import makes at most"):
        import_bundle(bundle, str(tmp_path / "data"))
    assert not (tmp_path / "data").exists()


@pytest.mark.slow
def test_the_sparsest_bundle_import_takes_is_imported_in_one_promtool_run(tmp_path, monkeypatch):
    """One sample every two hours over the longest window: a block per window, about 372, in one run. The work
    is bounded by what the import hands promtool (one run, at most limits.BLOCKS blocks), not timed."""
    bundle = str(tmp_path / "sparse.zip")
    step = 2 * limits.HOUR_MS
    writer = BundleWriter(bundle, Manifest("export", "http://p:9090", START_MS, START_MS + limits.WINDOW_MS))
    for day in range(limits.WINDOW_MS // DAY_MS):
        low = START_MS + day * DAY_MS
        first = low + (step if day else 0)  # a sample on a boundary belongs to the earlier chunk
        writer.add_chunk({series_key("innodb_up", {"job": "innodb"}): [
            (t, "1") for t in range(first, low + DAY_MS + 1, step)]}, low, low + DAY_MS)
    writer.close()
    promtool_runs = []
    real = importer.run_promtool
    monkeypatch.setattr(importer, "run_promtool", lambda command, *args: promtool_runs.append(command[1:3]) or real(
        command, *args))
    result = import_bundle(bundle, str(tmp_path / "data"))  # its own promtool timeout guards against a hang
    blocks = os.listdir(tmp_path / "data")
    assert result.contents.samples == limits.WINDOW_MS // step + 1 and result.runs == 1
    assert promtool_runs == [["tsdb", "create-blocks-from"]]  # one promtool run, for every chunk
    assert len(blocks) <= limits.BLOCKS and len(blocks) == result.contents.samples


@pytest.mark.slow
def test_promtool_is_killed_after_its_timeout(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    pid_file = tmp_path / "promtool.pid"
    (fake / "promtool").write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 120\n")
    (fake / "promtool").chmod(0o755)
    bundle = str(tmp_path / "b.zip")
    sound_bundle(bundle)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    # The fake promtool sleeps for 120 s; the command is given up on at 60 s (replay_command raises): an import
    # that waited for promtool instead of killing it at its 2 s fails the test there.
    run = replay_command("import", bundle, f"--data-dir={tmp_path / 'data'}", "--no-start", "--promtool-timeout=2",
                         env=env, timeout=60)
    assert run.returncode == 1 and "did not finish" in run.stderr and "within 2s" in run.stderr, run.stderr
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not (tmp_path / "data").exists()


def test_a_command_past_its_resident_memory_bound_is_killed(tmp_path):
    """replay_command's bound on what the command and its promtool hold in memory together, which holds Go
    programs to what they use rather than to the address space they reserve."""
    bundle = str(tmp_path / "b.zip")
    sound_bundle(bundle)
    run = replay_command("import", bundle, f"--data-dir={tmp_path / 'data'}", "--no-start", resident_limit=1 << 20)
    assert run.returncode == -signal.SIGKILL and "killed by the test: resident memory" in run.stderr, run


def independent_counts(bundle: str) -> tuple[int, int]:
    """(samples, series) of a bundle, counted with prometheus_client's parser rather than ours."""
    series, samples = set(), 0
    with BundleReader(bundle) as reader:
        for chunk in reader.manifest.chunks:
            text = reader.chunk(chunk.name).decode()
            for family in text_string_to_metric_families(text):
                for s in family.samples:
                    series.add((s.name, tuple(sorted(s.labels.items()))))
                    samples += 1
    return samples, len(series)


def test_no_start_writes_blocks_nobody_else_can_change_and_prints_what_is_there(tmp_path, promtool):
    bundle = str(tmp_path / "b.zip")
    sound_bundle(bundle, chunks=4, series=5, per_chunk=7)
    data_dir = tmp_path / "data"
    run = replay_command("import", bundle, f"--data-dir={data_dir}", "--no-start", umask=0, env=with_promtool(promtool))
    assert run.returncode == 0, run.stderr
    for directory, dirs, files in os.walk(data_dir):
        for path in [directory] + [os.path.join(directory, n) for n in dirs + files]:
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            assert not mode & 0o022, f"{path} is {mode:o}"
    samples, series = independent_counts(bundle)
    assert f"imported {samples} samples of {series} series" in run.stdout
    assert f"REPLAY_DATA_DIR={data_dir} REPLAY_USER={os.getuid()}:{os.getgid()}" in run.stdout
    assert not os.path.exists(f"{data_dir}.prometheus"), "--no-start starts nothing and keeps nothing for it"
    assert "--no-start computes no recording rules" in run.stderr  # the bottleneck panels would stay empty unsaid


@pytest.mark.slow
def test_links_come_from_the_dashboards_index(tmp_path):
    with open(os.path.join(ROOT, "dashboards", "index.json")) as f:
        index = json.load(f)
    bundle = str(tmp_path / "b.zip")
    sound_bundle(bundle)
    run = replay_command("import", bundle, f"--data-dir={tmp_path / 'data'}", "--no-start")
    assert run.returncode == 0, run.stderr
    for dashboard in index["dashboards"]:
        assert f"/d/{dashboard['uid']}?from=" in run.stdout and dashboard["title"] in run.stdout
    assert f"var-datasource={index['datasources']['replay']}" in run.stdout
    assert "var-instance=db1%3A3306" in run.stdout
    # Another index, named on the command line.
    other = tmp_path / "index.json"
    other.write_text(json.dumps({"datasources": {"prometheus": "p", "replay": "elsewhere"},
                                 "dashboards": [{"uid": "only-one", "title": "Only one"}]}))
    run = replay_command("import", bundle, f"--data-dir={tmp_path / 'data2'}", "--no-start",
                         f"--dashboards-index={other}")
    assert run.returncode == 0 and "/d/only-one?" in run.stdout and "var-datasource=elsewhere" in run.stdout
    assert "/d/innodb-overview" not in run.stdout
    # A named index that cannot be read stops the import before it starts.
    run = replay_command("import", bundle, f"--data-dir={tmp_path / 'data3'}", "--no-start",
                         f"--dashboards-index={tmp_path / 'missing.json'}")
    assert run.returncode == 1 and "cannot read the dashboards index" in run.stderr
    assert not (tmp_path / "data3").exists()


def test_without_an_index_it_says_so_instead_of_guessing_links(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(links, "CHECKOUT_INDEX", str(tmp_path / "no-checkout" / "index.json"))
    bundle = str(tmp_path / "b.zip")
    sound_bundle(bundle)
    assert cli.main(["import", bundle, f"--data-dir={tmp_path / 'data'}", "--no-start"]) == 0
    out = capsys.readouterr().out
    assert "no dashboard links" in out and "--dashboards-index" in out and "/d/" not in out


def test_the_stack_stops_the_replay_prometheus_of_the_default_data_directory(tmp_path):
    root = str(tmp_path / ".stack")
    stack = Stack(Settings(root=root))
    default = os.path.join(root, "replay", "data")  # .stack/replay/data: DEFAULT_REPLAY_DIR under the root
    assert cli.DEFAULT_REPLAY_DIR == os.path.join(".stack", "replay")
    assert stack.services["replay_prometheus"].pid_file == replay_prometheus.process(default).pid_file


def test_the_compose_replay_service_runs_as_the_user_who_imported(tmp_path):
    env_file = tmp_path / "env"
    with open(os.path.join(ROOT, ".env.example")) as f:
        env_file.write_text(f.read().replace("PASSWORD=\n", "PASSWORD=not-a-real-one\n"))
    binary = shutil.which("docker-compose")
    assert binary, "docker-compose is not installed (apt-get install docker-compose)"
    out = subprocess.run([binary, "--env-file", str(env_file), "--profile", "replay", "config"], capture_output=True,
                         text=True, cwd=ROOT, env={**os.environ, "REPLAY_USER": "1234:5678",
                                                   "REPLAY_DATA_DIR": str(tmp_path / "data")})
    assert out.returncode == 0, out.stderr
    service = yaml.safe_load(out.stdout)["services"]["replay-prometheus"]
    assert service["user"] == "1234:5678"
    assert any(str(tmp_path / "data") in str(volume) for volume in service["volumes"])


def test_rules_are_computed_at_the_stack_s_evaluation_interval():
    with open(os.path.join(ROOT, "provisioning", "prometheus", "prometheus.yml")) as f:
        interval = yaml.safe_load(f)["global"]["evaluation_interval"]
    assert interval == f"{RULES_INTERVAL_S}s"


def test_samples_further_apart_than_the_replay_windows_get_a_note_saying_what_to_set():
    assert sparse_samples_note({"innodb": 5, "mysqld": 15, "node": 15}) is None
    assert sparse_samples_note({}) is None
    note = sparse_samples_note({"innodb": 60})
    assert "innodb every 60s" in note and "scrape interval to 60s" in note and "bottleneck timeline" in note


def test_jobs_scraped_at_5_15_and_30_s_get_the_interval_of_the_sparsest_and_the_panels_it_keeps_filled(tmp_path):
    """The field check: a bundle of jobs at 5, 15 and 30 s was said to be "about 27s apart". Each job's own
    spacing, from its series in the bundle, and the panels of the 30 s job that stay empty until then."""
    bundle = str(tmp_path / "jobs.zip")
    writer = BundleWriter(bundle, Manifest("export", "http://p:9090", START_MS, START_MS + limits.HOUR_MS))
    writer.add_chunk({series_key("up", {"instance": "db1:3306", "job": job}): [
        (START_MS + i * step_s * 1000, "1") for i in range(3600 // step_s)]
        for job, step_s in (("innodb", 5), ("mysqld", 15), ("node", 30))}, START_MS, START_MS + limits.HOUR_MS)
    writer.close()
    reader = BundleReader(bundle)
    spacing = reader.verify().spacing_s
    assert spacing == {"innodb": 5, "mysqld": 15, "node": 30}
    panels = links.rate_panels(os.path.join(ROOT, "dashboards", "index.json"))
    assert panels["node"] and all(": " in p for p in panels["node"])
    note = sparse_samples_note(spacing, panels)
    assert "node every 30s" in note and "innodb" not in note.split(":")[0] and "scrape interval to 30s" in note
    assert panels["node"][0] in note and not any(p in note for p in panels.get("mysqld", []) if p not in panels["node"])
    assert "bottleneck timeline" not in note  # 30 s still gives a one-minute window two samples


def test_the_note_s_rule_window_is_the_rules_own():
    """The replay tool is installed without signals/: the window it advises by is held to the rules' here."""
    from signals import CONFIG

    assert {CONFIG["record_rate_window"], CONFIG["bottleneck_window"]} == {f"{importer.RULES_WINDOW_S // 60}m"}


def test_the_note_and_the_replay_data_source_assume_the_same_spacing():
    with open(os.path.join(ROOT, "provisioning", "grafana", "datasources", "prometheus.yml"), encoding="utf-8") as f:
        sources = {s["uid"]: s for s in yaml.safe_load(f)["datasources"]}
    assert sources["innodb-replay"]["jsonData"]["timeInterval"] == f"{REPLAY_SCRAPE_INTERVAL_S}s"


def test_a_taken_port_stops_the_import_instead_of_linking_to_what_answers_there(tmp_path):
    """Another replay Prometheus on the port answered ready, and its data was linked as the bundle's."""
    bundle = str(tmp_path / "b.zip")
    sound_bundle(bundle)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = replay_command("import", bundle, f"--data-dir={tmp_path / 'data'}", f"--port={port}")
    assert run.returncode == 1 and f"127.0.0.1:{port} is in use" in run.stderr, run.stderr
    assert not (tmp_path / "data").exists(), "refused before anything is written"
    assert replay_prometheus.process(str(tmp_path / "data")).pid() is None
