"""Export and import throughput and peak memory for a window of over a million samples.

    python benchmarks/replay_benchmark.py [--series 2000] [--samples-per-series 600]

A source Prometheus is built from synthetic series shaped like the stack's (innodb_* counters and
gauges, job and instance labels, one sample every 5 s) backfilled with promtool; then
``innodb-replay export`` reads the whole window off it and ``innodb-replay import`` writes it into a
fresh data directory. Prints samples per second and the peak resident memory of each command.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from stack.servers import free_port, wait_for  # noqa: E402


def synthetic(path: str, series: int, per_series: int, end_s: int) -> int:
    """OpenMetrics with ``series`` series of ``per_series`` samples each, 5 s apart, ending at end_s."""
    rng = random.Random(7)
    start_s = end_s - 5 * (per_series - 1)
    with open(path, "w") as f:
        for family in range(series // 20):
            name = f"innodb_metrics_bench_{family}_total" if family % 2 else f"innodb_bench_gauge_{family}"
            f.write(f"# TYPE {name} unknown\n")
            for s in range(20):
                labels = f'instance="db{s % 5}:3306",job="innodb",shard="{s}"'
                value = rng.random() * 1000
                for i in range(per_series):
                    value = value + rng.random() * 10 if family % 2 else rng.random() * 1e6
                    f.write(f"{name}{{{labels}}} {value!r} {start_s + 5 * i}.{rng.randrange(1000):03d}\n")
        f.write("# EOF\n")
    return (series // 20) * 20 * per_series


def run_measured(cmd: list[str], env=None) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, stdout) of a command; the peak is of its largest process, children included."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {err.read()[-2000:]}")
        return seconds, usage.ru_maxrss / 1024, out.read()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--series", type=int, default=2000)
    p.add_argument("--samples-per-series", type=int, default=600)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="replay-bench-")
    replay = [sys.executable, "-m", "innodb_replay.cli"]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    prometheus = None
    try:
        end_s = int(time.time()) - 3600
        source_om = os.path.join(work, "source.om")
        total = synthetic(source_om, args.series, args.samples_per_series, end_s)
        source_dir = os.path.join(work, "source")
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", source_om, source_dir], check=True,
                       capture_output=True)
        port = free_port()
        prometheus = subprocess.Popen(["prometheus", f"--storage.tsdb.path={source_dir}",
                                       f"--config.file={os.path.join(ROOT, 'provisioning', 'prometheus', 'replay.yml')}",
                                       "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: urllib.request.urlopen(url + "/-/ready", timeout=2).status == 200, 60, what="Prometheus")
        start_s = end_s - 5 * (args.samples_per_series - 1)
        bundle = os.path.join(work, "bench.zip")
        print(f"window: {total} samples in {args.series} series, {args.samples_per_series} samples each "
              f"({(end_s - start_s) / 60:.0f} minutes at 5 s)")

        seconds, peak, _ = run_measured([*replay, "export", f"--prometheus={url}", f"--start={start_s}",
                                         f"--end={end_s + 1}", '--selector={job="innodb"}', f"--out={bundle}",
                                         "--quiet"], env)
        print(f"export: {total / seconds:,.0f} samples/s ({seconds:.1f} s), peak RSS {peak:.0f} MB, "
              f"bundle {os.path.getsize(bundle) / 1e6:.1f} MB")
        seconds, peak, out = run_measured([*replay, "import", bundle, f"--data-dir={os.path.join(work, 'replay')}",
                                           "--no-start"], env)
        print(f"import: {total / seconds:,.0f} samples/s ({seconds:.1f} s), peak RSS {peak:.0f} MB "
              f"(the largest of innodb-replay and promtool)")
        imported = int(out.split()[1])
        print(f"imported {imported} samples; {'all' if imported == total else 'NOT all'} of the {total}")
    finally:
        if prometheus:
            prometheus.terminate()
            prometheus.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
