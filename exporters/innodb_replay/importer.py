"""``innodb-replay import``: a bundle into a fresh Prometheus data directory, served by a replay Prometheus.

The bundle is checked whole (limits.py, manifest, every line of every chunk, every checksum) before any
directory is touched. Its chunks become TSDB blocks through ``promtool tsdb create-blocks-from
openmetrics``, fed runs of consecutive chunks (limits.py), each run into a scratch directory of its own
(promtool reopens every block of its output directory after each block it writes), and killed after a
timeout.
The recording rules whose series a bundle lacks (all of them in a recorded bundle; in an export, those its
selector left out or its Prometheus did not have, such as the bottleneck classes) are computed for its
window with ``promtool tsdb create-blocks-from rules`` from the stack's own rule files, so the dashboards
show every panel. promtool computes a rule from the data as it was before the run, so a rule that reads
another rule's output goes into a later run, after the replay Prometheus has loaded the earlier blocks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass

import yaml

from innodb_bundle import limits
from innodb_bundle.bundle import BundleError, BundleReader, Chunk, Contents, Manifest
from innodb_bundle.terminal import Progress, printable

RULES_INTERVAL_S = 15  # the stack's evaluation_interval (provisioning/prometheus/prometheus.yml)
# The sample spacing the replay's windows assume: the Replay data source's scrape interval
# (provisioning/grafana/datasources/prometheus.yml), from which Grafana sizes $__rate_interval.
REPLAY_SCRAPE_INTERVAL_S = 15
RULES_WINDOW_S = 60  # signals/config.py's record_rate_window and bottleneck_window (a test holds them equal)


def sparse_samples_note(spacing_s: dict[str, int], rate_panels: dict[str, list[str]] | None = None) -> str | None:
    """What to do when a job's samples are further apart than the replay's windows expect (a recording with
    --interval 60, an export from a Prometheus that scrapes a job every 30 s): the rate panels of that job
    would be empty. ``spacing_s``: each job's own spacing (its series' median, Contents.spacing_s);
    ``rate_panels``: job -> the panels that take a rate of its series. None when every job is close enough.

    Grafana's $__rate_interval is four of the data source's scrape intervals and a rate needs two samples in
    it: spacing up to 1.5 intervals leaves room for a late sample. The recording rules' windows are a minute."""
    sparse = {job: s for job, s in spacing_s.items() if s > REPLAY_SCRAPE_INTERVAL_S * 1.5}
    if not sparse:
        return None
    jobs = ", ".join(f"{job or '(no job)'} every {s}s" for job, s in sorted(sparse.items()))
    note = (f"samples of {jobs}, where the replay's windows expect {REPLAY_SCRAPE_INTERVAL_S}s: set the Replay "
            f"data source's scrape interval to {max(sparse.values())}s in Grafana (Connections, Data sources, "
            "Replay), which keeps every job's rate panels filled")
    empty = sorted({panel for job in sparse for panel in (rate_panels or {}).get(job, [])})
    if empty:
        note += "; until then these stay empty: " + "; ".join(empty)
    too_sparse_for_rules = sorted(job for job, s in sparse.items() if s > RULES_WINDOW_S / 2)
    if too_sparse_for_rules:
        note += (f"; the recording rules take {RULES_WINDOW_S}s windows, so what they compute from "
                 f"{', '.join(too_sparse_for_rules)} (the bottleneck timeline among them) stays empty")
    return note


class ReplayImportError(Exception):
    """The import cannot go on; nothing was left half done."""


@dataclass
class ImportResult:
    manifest: Manifest
    contents: Contents  # what the chunks really hold: the counts to print
    data_dir: str
    seconds: float
    runs: int  # promtool runs


def _promtool() -> str:
    path = shutil.which("promtool")
    if not path:
        raise ReplayImportError("promtool is not installed (apt-get install prometheus)")
    return path


def _fresh(data_dir: str) -> None:
    if os.path.exists(data_dir) and (not os.path.isdir(data_dir) or os.listdir(data_dir)):
        raise ReplayImportError(f"{data_dir} is not empty: import needs a fresh Prometheus data directory "
                                "(remove that one, after innodb-replay stop, or give another --data-dir)")


def _windows(start_ms: int, end_ms: int) -> int:
    """The 2-hour windows promtool walks for an input from start to end: a block each, a parse each."""
    return end_ms // limits.BLOCK_MS - start_ms // limits.BLOCK_MS + 1


def plan_runs(chunks: list[Chunk], size) -> list[list[Chunk]]:
    """Consecutive chunks grouped into promtool runs of up to RUN_BYTES, and up to RUN_PARSE_BYTES parsed
    (bytes times windows): dense chunks go a few hours at a time, sparse ones many days."""
    runs: list[list[Chunk]] = []
    run_bytes = 0
    for chunk in chunks:
        grown = run_bytes + size(chunk.name)
        if runs and grown <= limits.RUN_BYTES \
                and grown * _windows(runs[-1][0].start_ms, chunk.end_ms) <= limits.RUN_PARSE_BYTES:
            runs[-1].append(chunk)
            run_bytes = grown
        else:
            runs.append([chunk])
            run_bytes = size(chunk.name)
    return runs


def most_blocks(runs: list[list[Chunk]]) -> int:
    """The most blocks promtool can write for these runs: one per 2-hour window a run spans (the samples
    are inside their chunk's window: verify() refuses any other)."""
    return sum(_windows(run[0].start_ms, run[-1].end_ms) for run in runs)


def run_promtool(command: list[str], timeout: float, what: str) -> str:
    """Run promtool; ReplayImportError when it fails or outlives ``timeout`` (then it is killed)."""
    try:
        out = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:  # subprocess.run has killed it
        raise ReplayImportError(f"promtool did not finish {what} within {timeout:g}s and was stopped") from None
    if out.returncode != 0:
        raise ReplayImportError(f"promtool refused {what}: {printable((out.stderr or out.stdout).strip()[-300:], 300)}")
    return out.stdout


def import_bundle(path: str, data_dir: str, promtool_timeout: float = limits.PROMTOOL_TIMEOUT_S,
                  progress: bool = False) -> ImportResult:
    """Check the bundle, then write its samples as TSDB blocks into ``data_dir`` (which must be new);
    ``progress`` says how far each step is, on standard error."""
    started = time.monotonic()
    try:
        reader = BundleReader(path)
    except BundleError as exc:
        raise ReplayImportError(str(exc)) from None
    with reader:
        try:
            runs = plan_runs(reader.manifest.chunks, reader.size)
            blocks = most_blocks(runs)
            if blocks > limits.BLOCKS:
                raise BundleError(f"{path}: its samples would make up to {blocks} TSDB blocks; import makes at most "
                                  f"{limits.BLOCKS} (a window or chunks spread thinner than any real bundle's)")
            bar = Progress(len(reader.manifest.chunks), "checking") if progress else None
            contents = reader.verify(bar)
            if bar:
                bar.finish()
        except BundleError as exc:
            raise ReplayImportError(str(exc)) from None
        _fresh(data_dir)
        promtool = _promtool()
        created = not os.path.exists(data_dir)
        os.makedirs(data_dir, mode=0o755, exist_ok=True)
        try:
            with tempfile.TemporaryDirectory(prefix="innodb-replay-") as scratch:
                for number, run in enumerate(runs, start=1):
                    what = f"run {number} of {len(runs)} ({run[0].name} to {run[-1].name})"
                    if progress:
                        print(f"writing TSDB blocks, {what}: {sum(c.samples for c in run)} samples",
                              file=sys.stderr, flush=True)
                    _import_run(reader, run, scratch, data_dir, promtool, promtool_timeout, what)
            _no_write_for_others(data_dir)
        except BaseException as exc:
            if created:
                shutil.rmtree(data_dir, ignore_errors=True)
            else:
                for entry in os.listdir(data_dir):
                    shutil.rmtree(os.path.join(data_dir, entry), ignore_errors=True)
            if isinstance(exc, BundleError):  # the file changed under us after verify()
                raise ReplayImportError(str(exc)) from None
            raise
    return ImportResult(reader.manifest, contents, data_dir, time.monotonic() - started, len(runs))


def _import_run(reader: BundleReader, run: list[Chunk], scratch: str, data_dir: str, promtool: str,
                timeout: float, what: str) -> None:
    source = os.path.join(scratch, "run.om")
    blocks = os.path.join(scratch, "blocks")
    with open(source, "wb") as f:
        for chunk in run:
            reader.copy_chunk(chunk.name, f)
        f.write(b"# EOF\n")
    os.mkdir(blocks)
    run_promtool([promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", source, blocks], timeout, what)
    for block in os.listdir(blocks):
        shutil.move(os.path.join(blocks, block), os.path.join(data_dir, block))
    os.rmdir(blocks)
    os.remove(source)


def _no_write_for_others(root: str) -> None:
    """Blocks 0755/0644 or tighter, whatever the umask: the data directory is nobody else's to change."""
    for directory, dirs, files in os.walk(root):
        for path in [directory] + [os.path.join(directory, n) for n in dirs + files]:
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode) and mode & 0o022:
                os.chmod(path, stat.S_IMODE(mode) & ~0o022)


def metric_names(prometheus_url: str) -> set[str]:
    """The metric names the replay Prometheus holds: the bundle's."""
    try:
        with urllib.request.urlopen(prometheus_url + "/api/v1/label/__name__/values", timeout=30) as response:
            return set(json.load(response)["data"])
    except (OSError, ValueError, KeyError) as exc:
        raise ReplayImportError(f"the replay Prometheus at {prometheus_url} did not list its metrics: {exc}") from None


def read_rules(rule_files: list[str]) -> list[dict]:
    """The recording rules of Prometheus rule files; ReplayImportError names a file that is not one."""
    rules = []
    for path in rule_files:
        try:
            with open(path, encoding="utf-8") as f:
                groups = yaml.safe_load(f)["groups"]
            rules += [r for g in groups for r in g["rules"]
                      if isinstance(r, dict) and isinstance(r.get("record"), str) and isinstance(r.get("expr"), str)]
        except OSError as exc:
            raise ReplayImportError(f"--rules {path}: {exc.strerror}") from None
        except (yaml.YAMLError, UnicodeDecodeError, KeyError, TypeError):
            raise ReplayImportError(f"--rules {path}: not a Prometheus rule file (groups of rules)") from None
    return rules


def missing_rule_runs(rules: list[dict], present: set[str]) -> list[list[dict]]:
    """The recording rules whose output is not in ``present``, in promtool runs: a rule goes into the run
    after the last rule it reads from (by name: rules that share a name, like the bottleneck's classes,
    all come before any rule that reads that name)."""
    pending = [r for r in rules if r["record"] not in present]
    runs: list[list[dict]] = []
    while pending:
        def reads_pending(rule):
            return any(other is not rule
                       and re.search(rf"(?<![\w:]){re.escape(other['record'])}(?![\w:])", rule["expr"])
                       for other in pending)
        ready = [r for r in pending if not reads_pending(r)]
        if not ready:
            raise ReplayImportError("the recording rules read each other in a cycle: " +
                                    ", ".join(sorted({r["record"] for r in pending})))
        runs.append(ready)
        pending = [r for r in pending if not any(r is done for done in ready)]
    return runs


def write_rules(rules: list[dict], path: str) -> str:
    """One promtool run's rules as a rule file (one group: the order of a run does not matter)."""
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump({"groups": [{"name": "replay", "rules": rules}]}, f, sort_keys=False)
    return path


def backfill_rules(prometheus_url: str, rules_file: str, manifest: Manifest, data_dir: str,
                   promtool_timeout: float = limits.PROMTOOL_TIMEOUT_S) -> int:
    """Compute the recording rules over the bundle's window into blocks of ``data_dir``; returns blocks added."""
    promtool = _promtool()
    with tempfile.TemporaryDirectory(prefix="innodb-replay-rules-") as out_dir:
        # promtool evaluates block by block (2 h) and gives up at the first block in which no evaluation falls
        # (cmd/promtool/rules.go breaks out of its loop): a window starting less than an interval before a
        # block boundary got no rules at all. Two intervals earlier, the rules find no data and write nothing.
        start = manifest.window_start_ms // 1000 - 2 * RULES_INTERVAL_S
        end = manifest.window_end_ms // 1000 + 1
        run_promtool([promtool, "tsdb", "create-blocks-from", "rules", f"--start={start}", f"--end={end}",
                      f"--url={prometheus_url}", f"--output-dir={out_dir}", f"--eval-interval={RULES_INTERVAL_S}s",
                      rules_file], promtool_timeout, "the recording rules")
        blocks = [b for b in os.listdir(out_dir) if os.path.isdir(os.path.join(out_dir, b))]
        for block in blocks:
            shutil.move(os.path.join(out_dir, block), os.path.join(data_dir, block))
    _no_write_for_others(data_dir)
    return len(blocks)


def wait_ready(prometheus_url: str, timeout: float = 60, alive=lambda: True) -> None:
    """Until the Prometheus answers ready; ``alive`` says whether the process that should answer still runs
    (one that exited, say on a port taken meanwhile, is not waited for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise ReplayImportError(f"the replay Prometheus for {prometheus_url} exited: its log says why")
        try:
            with urllib.request.urlopen(prometheus_url + "/-/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise ReplayImportError(f"the replay Prometheus at {prometheus_url} did not become ready in {timeout:.0f}s")


def serves(prometheus_url: str, data_dir: str) -> bool:
    """Whether the Prometheus at the URL keeps its TSDB in ``data_dir`` (its flags say)."""
    try:
        with urllib.request.urlopen(prometheus_url + "/api/v1/status/flags", timeout=5) as r:
            flags = json.load(r).get("data", {})
    except (OSError, ValueError):
        return False
    path = flags.get("storage.tsdb.path", "") if isinstance(flags, dict) else ""
    return os.path.abspath(str(path)) == os.path.abspath(data_dir)
