"""One exporter, a fleet of servers: /probe for 10, 50, 100, 200 targets, scraped by Prometheus every 5 s.

    .venv/bin/python benchmarks/fleet_benchmark.py [--targets 10,50,100,200] [--seconds 120] [--servers 1]
                                                   [--threads 2] [--rate 200] [--flavour mariadb-10.11]
                                                   [--json FILE] [--quick]

The targets are loopback aliases (127.0.0.2, 127.0.0.3, ...; the kernel answers all of 127.0.0.0/8)
of one or a few servers (MariaDB 10.11 unless --flavour says otherwise; tuned configuration, listening
on every alias, under sysbench oltp_read_write): to the exporter each alias is another server, with a
connection of its own. Prometheus runs the stack's own provisioning/prometheus/prometheus.yml; the
targets file is written the way write-targets.sh writes it, and the exporter allows exactly the servers
of that file (--probe.targets-file), as a fleet deployment would.

For each target count, after the new targets have been scraped twice (connections open), over
--seconds of steady scraping:
  * the exporter's CPU time (utime + stime from /proc) per scrape, and as a share of one core per
    target; the scrapes are Prometheus' own, from its scrape_duration_seconds samples (each scrape
    counted for the part of it inside the window);
  * its resident memory (now and peak);
  * scrape latency p50 / p99 (scrape_duration_seconds over every scrape of every target) and errors
    (scrapes with up == 0, or innodb_up == 0: the exporter answered but could not read the server);
  * Prometheus' CPU per scrape, its resident memory and head series, for the Prometheus side of the fleet;
  * the load average at start and end (the figures are only as quiet as the machine).
The target count at which the exporter's CPU fills one core is extrapolated from the CPU per scrape
at the largest count measured: 5 s / (CPU seconds per scrape). Goal (issue 14): 500 targets per core.
It prints a table and writes the same as JSON (--json FILE, or - for stdout).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "exporters"))

from innodb_replay.processes import terminate  # noqa: E402
from proc_stats import cpu_seconds, load_average, memory_mb, percentile  # noqa: E402
from stack.servers import options  # noqa: E402
from support.exporter import Exporter  # noqa: E402
from support.servers import FLAVORS, Sysbench, free_port, server, wait_for  # noqa: E402

USER, PASSWORD = "fleet_exp", "Fleet-bench-pw-1"
INTERVAL = 5.0  # the innodb job's scrape_interval in provisioning/prometheus/prometheus.yml
FIRST_ALIAS = ipaddress.IPv4Address("127.0.0.2")  # 127.0.0.1 stays the servers' own address


# --- the fleet -------------------------------------------------------------------------------------

def aliases(count: int) -> list[str]:
    return [str(FIRST_ALIAS + i) for i in range(count)]


class Fleet:
    """``servers`` servers under sysbench, target i served by server i % servers on its own alias."""

    def __init__(self, flavour: str, servers: int, max_targets: int, threads: int, rate: int, table_size: int):
        per_server = -(-max_targets // servers)
        self.servers, self.loads, self.addresses = [], [], []
        all_aliases = aliases(per_server * servers)
        try:
            for n in range(servers):
                mine = all_aliases[n::servers]
                db = server(flavour, "tuned", options=options(flavour, "tuned") + (
                    f"--bind-address={','.join(['127.0.0.1', *mine])}",
                    f"--max-connections={2 * per_server + 50}"))
                self.servers.append(db)
                db.start()
                db.create_user(USER, PASSWORD)
                self.loads.append(Sysbench(db, threads=threads, table_size=table_size).prepare()
                                  .start(seconds=24 * 3600, rate=rate))
                self.addresses.append([f"{alias}:{db.port}" for alias in mine])
        except BaseException:
            self.stop()
            raise

    def targets(self, count: int) -> list[str]:
        """The first ``count`` targets, spread over the servers."""
        spread = [address for group in zip(*self.addresses) for address in group]
        if count > len(spread):
            raise ValueError(f"{count} targets asked, the fleet has {len(spread)}")
        return spread[:count]

    def stop(self) -> None:
        for load in self.loads:
            load.stop()
        for db in self.servers:
            db.cleanup()


class Prometheus:
    """Prometheus with the stack's prometheus.yml, the innodb job's targets in targets/mysql.yml."""

    def __init__(self, workdir: str):
        self.dir = workdir
        shutil.copy(os.path.join(ROOT, "provisioning", "prometheus", "prometheus.yml"), workdir)
        os.makedirs(os.path.join(workdir, "targets"))
        for name in ("mysqld-exporter", "node", "prometheus", "alertmanager"):  # the stack's other jobs: none here
            self._write(name, [])
        self.targets_file = self._write("mysql", [])
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(workdir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [shutil.which("prometheus") or "/usr/bin/prometheus",
             f"--config.file={os.path.join(workdir, 'prometheus.yml')}",
             f"--storage.tsdb.path={os.path.join(workdir, 'data')}", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(lambda: urllib.request.urlopen(self.url + "/-/ready", timeout=2).status == 200, 60,
                 what=f"prometheus on {self.url}")

    def _write(self, name: str, groups: list) -> str:
        """A file_sd file, written atomically as write-targets.sh does."""
        path = os.path.join(self.dir, "targets", f"{name}.yml")
        with open(path + ".tmp", "w") as f:
            json.dump(groups, f)  # JSON is YAML
        os.replace(path + ".tmp", path)
        return path

    def set_targets(self, targets: list[str], exporter: str) -> None:
        self._write("mysql", [{"targets": targets, "labels": {"__innodb_exporter": exporter}}])

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        params = {"query": expr} | ({"time": f"{at:.3f}"} if at else {})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}", timeout=60) as r:
            return json.load(r)["data"]["result"]

    def active(self) -> dict[str, str]:
        """{instance: health} of the innodb job's targets."""
        with urllib.request.urlopen(self.url + "/api/v1/targets?state=active", timeout=30) as r:
            targets = json.load(r)["data"]["activeTargets"]
        return {t["labels"]["instance"]: t["health"] for t in targets if t["labels"]["job"] == "innodb"}

    def scrapes(self, start: float, end: float) -> list[tuple[str, float, float]]:
        """(instance, start, seconds) of every innodb scrape that started in [start - INTERVAL, end]."""
        window = int(end - start + INTERVAL) + 1
        rows = self.query(f'scrape_duration_seconds{{job="innodb"}}[{window}s]', at=end)
        return [(r["metric"]["instance"], float(t), float(v)) for r in rows for t, v in r["values"]
                if float(t) <= end]

    def failed(self, expr: str, start: float, end: float) -> int:
        """Samples of ``expr`` (an innodb job series) equal to 0 in the window."""
        window = int(end - start) + 1
        rows = self.query(f"{expr}[{window}s]", at=end)
        return sum(1 for r in rows for t, v in r["values"] if float(t) >= start and float(v) == 0)

    def head_series(self) -> int:
        with urllib.request.urlopen(self.url + "/api/v1/status/tsdb", timeout=30) as r:
            return json.load(r)["data"]["headStats"]["numSeries"]

    def stop(self) -> None:
        terminate(self.proc)
        self.log.close()


# --- one step --------------------------------------------------------------------------------------

def inside(scrapes, start: float, end: float) -> float:
    """Scrapes inside [start, end], each counted for the share of its duration inside."""
    total = 0.0
    for _, began, seconds in scrapes:
        finished = began + seconds
        overlap = min(finished, end) - max(began, start)
        if seconds <= 0:
            total += start <= began <= end
        elif overlap > 0:
            total += overlap / seconds
    return total


def measure(fleet: Fleet, prometheus: Prometheus, exporter: Exporter, count: int, seconds: float) -> dict:
    targets = fleet.targets(count)
    prometheus.set_targets(targets, exporter.url.removeprefix("http://"))
    wait_for(lambda: set(prometheus.active()) == set(targets), 60, interval=1,
             what=f"Prometheus scraping {count} targets")
    time.sleep(2 * INTERVAL + 1)  # every new target scraped twice: its connection is open
    load_before = load_average()
    start, exporter_cpu, prometheus_cpu = time.time(), cpu_seconds(exporter.proc.pid), cpu_seconds(prometheus.proc.pid)
    time.sleep(seconds)
    end, exporter_cpu, prometheus_cpu = (time.time(), cpu_seconds(exporter.proc.pid) - exporter_cpu,
                                         cpu_seconds(prometheus.proc.pid) - prometheus_cpu)
    load_after = load_average()
    time.sleep(INTERVAL)  # the scrapes that started inside the window have finished and been stored
    scrapes = prometheus.scrapes(start, end)
    done = inside(scrapes, start, end)
    durations = [s for _, began, s in scrapes if start <= began <= end]
    rss, peak = memory_mb(exporter.proc.pid)
    prometheus_rss, _ = memory_mb(prometheus.proc.pid)
    per_scrape = exporter_cpu / done
    return {
        "targets": count,
        "seconds": round(end - start, 1),
        "scrapes": round(done, 1),
        "exporter_cpu_ms_per_scrape": round(per_scrape * 1000, 2),
        "exporter_cpu_cores": round(exporter_cpu / (end - start), 3),
        "exporter_cpu_share_per_target": round(per_scrape / INTERVAL, 5),  # of one core, scraped every 5 s
        "exporter_rss_mb": round(rss, 1),
        "exporter_peak_rss_mb": round(peak, 1),
        "scrape_p50_ms": round(percentile(durations, 50) * 1000, 1),
        "scrape_p99_ms": round(percentile(durations, 99) * 1000, 1),
        "scrapes_failed": prometheus.failed('up{job="innodb"}', start, end),
        "servers_unreadable": prometheus.failed('innodb_up{job="innodb"}', start, end),
        "prometheus_cpu_ms_per_scrape": round(prometheus_cpu / done * 1000, 2),
        "prometheus_rss_mb": round(prometheus_rss, 1),
        "prometheus_head_series": prometheus.head_series(),
        "samples_per_scrape": round(statistics.mean(
            float(r["value"][1]) for r in prometheus.query('scrape_samples_scraped{job="innodb"}'))),
        "load_average": [load_before, load_after],
    }


# --- output ----------------------------------------------------------------------------------------

COLUMNS = (("targets", "targets", "{}"), ("scrapes", "scrapes", "{:.0f}"),
           ("exporter_cpu_ms_per_scrape", "CPU ms/scrape", "{:.2f}"),
           ("exporter_cpu_share_per_target", "core %/target", "{:.3%}"),
           ("exporter_cpu_cores", "cores", "{:.3f}"), ("exporter_rss_mb", "RSS MB", "{:.1f}"),
           ("scrape_p50_ms", "p50 ms", "{:.1f}"), ("scrape_p99_ms", "p99 ms", "{:.1f}"),
           ("scrapes_failed", "failed", "{}"), ("servers_unreadable", "unreadable", "{}"),
           ("prometheus_cpu_ms_per_scrape", "Prom ms/scrape", "{:.2f}"), ("prometheus_rss_mb", "Prom MB", "{:.0f}"),
           ("load_average", "load avg", "{0[0]:.1f}-{0[1]:.1f}"))


def table(steps: list[dict]) -> str:
    rows = [[title for _, title, _ in COLUMNS]] + [[fmt.format(step[key]) for key, _, fmt in COLUMNS] for step in steps]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in rows)


def saturation(steps: list[dict]) -> dict:
    largest = max(steps, key=lambda s: s["targets"])
    per_scrape = largest["exporter_cpu_ms_per_scrape"] / 1000
    return {"targets_per_core": int(INTERVAL / per_scrape), "from_targets": largest["targets"],
            "how": f"extrapolated: {INTERVAL:.0f} s scrape interval / {per_scrape * 1000:.2f} ms of exporter CPU per "
                   f"scrape measured at {largest['targets']} targets"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", default="10,50,100,200", help="comma-separated target counts, in order")
    p.add_argument("--seconds", type=float, default=120, help="measuring window per target count")
    p.add_argument("--servers", type=int, default=1, help="servers the targets are aliases of")
    p.add_argument("--flavour", choices=FLAVORS, default="mariadb-10.11", help="the servers' flavour")
    p.add_argument("--threads", type=int, default=2, help="sysbench threads per server")
    p.add_argument("--rate", type=int, default=200, help="sysbench transactions per second per server (0: unthrottled)")
    p.add_argument("--table-size", type=int, default=20000, help="sysbench rows per table")
    p.add_argument("--json", help="write the results as JSON to this file (- for stdout)")
    p.add_argument("--quick", action="store_true", help="3 targets for 10 s: checks that it runs")
    args = p.parse_args(argv)
    if args.quick:
        args.targets, args.seconds, args.table_size = "3", 10, 1000
    counts = [int(n) for n in args.targets.split(",")]

    began = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="fleet-benchmark-")
    fleet = prometheus = exporter = None
    try:
        fleet = Fleet(args.flavour, args.servers, max(counts), args.threads, args.rate, args.table_size)
        prometheus = Prometheus(workdir)
        # The exporter allows exactly the servers of the targets file Prometheus reads (re-read as it changes).
        exporter = Exporter(fleet.servers[0].address, USER, PASSWORD, f"--probe.targets-file={prometheus.targets_file}",
                            f"--probe.max-connections={max(256, 2 * max(counts))}")
        print(f"servers, Prometheus and the exporter up ({time.monotonic() - began:.0f} s)", file=sys.stderr)
        steps = []
        for count in counts:
            steps.append(measure(fleet, prometheus, exporter, count, args.seconds))
            print(f"{count} targets measured ({time.monotonic() - began:.0f} s)", file=sys.stderr)
        result = {
            "benchmark": "fleet", "interval_seconds": INTERVAL, "cpus": os.cpu_count(),
            "server": f"{args.flavour} {fleet.servers[0].sql('SELECT VERSION()')[0][0]}", "servers": args.servers,
            "sysbench": {"threads_per_server": args.threads, "rate_per_server": args.rate},
            "steps": steps, "saturation": saturation(steps),
        }
    finally:
        for part in (prometheus, exporter, fleet):
            if part:
                part.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(table(steps))
    sat = result["saturation"]
    print(f"one core saturates at about {sat['targets_per_core']} targets ({sat['how']}; goal 500)")
    if args.json == "-":
        print(json.dumps(result, indent=2))
    elif args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
