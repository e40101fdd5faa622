"""Our exporter against Debian's mysqld_exporter, side by side on one MariaDB under one sysbench load.

    python benchmarks/scrape_benchmark.py [--scrapes 300] [--threads 4] [--overhead-seconds 20]

Prints, for the same InnoDB sources (mysqld_exporter with --collect.info_schema.innodb_metrics,
--collect.engine_innodb_status, --collect.global_status, --collect.perf_schema.eventswaits, its
other default collectors off):
  * scrape latency p50 / p99 of each, and our p50 over theirs;
  * the time the server spends on each exporter's queries per scrape (performance_schema, per user),
    and our p50 over our server time;
  * resident memory of each exporter;
  * the time to parse a 1 MB SHOW ENGINE INNODB STATUS text;
  * sysbench throughput with and without our exporter scraped every second.
Targets: our p50 < mysqld_exporter's p50; our p50 < 2 x our server time; parse < 20 ms; < 60 MB RSS;
scraping every second costs < 1 % of throughput.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "exporters"))

from innodb_exporter.parsers import innodb_status  # noqa: E402
from support.exporter import Exporter  # noqa: E402
from support.servers import MariaDB, Sysbench, free_port, wait_for  # noqa: E402

OURS, THEIRS, PASSWORD = "innodb_exp", "mysqld_exp", "Bench-pw-1"
MYSQLD_EXPORTER_FLAGS = [
    "--collect.info_schema.innodb_metrics", "--collect.engine_innodb_status", "--collect.global_status",
    "--collect.perf_schema.eventswaits", "--no-collect.global_variables", "--no-collect.slave_status",
    "--no-collect.info_schema.innodb_cmp", "--no-collect.info_schema.innodb_cmpmem",
    "--no-collect.info_schema.query_response_time",
]


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def get(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as response:
        response.read()
    return time.perf_counter() - started


def rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory in MB from /proc."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def server_time(db, user: str) -> tuple[int, float]:
    """(statements, seconds) the server spent on this user's statements so far."""
    rows = db.sql("SELECT COALESCE(SUM(COUNT_STAR), 0), COALESCE(SUM(SUM_TIMER_WAIT), 0) FROM "
                  "performance_schema.events_statements_summary_by_user_by_event_name WHERE USER = %s", (user,))
    return int(rows[0][0]), int(rows[0][1]) / 1e12


class MysqldExporter:
    def __init__(self, db):
        self.port = free_port()
        env = dict(os.environ, DATA_SOURCE_NAME=f"{THEIRS}:{PASSWORD}@(127.0.0.1:{db.port})/")
        binary = shutil.which("prometheus-mysqld-exporter") or "/usr/bin/prometheus-mysqld-exporter"
        self.proc = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{self.port}", *MYSQLD_EXPORTER_FLAGS],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        wait_for(lambda: get(self.url) >= 0, 20, what="mysqld_exporter")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def one_megabyte_status() -> str:
    """A real 5.7 status text whose transaction list is repeated to 1 MB, as on a server with many sessions."""
    with open(os.path.join(ROOT, "tests", "fixtures", "innodb_status", "mysql-5.7.26-semaphores.txt")) as f:
        text = f.read()
    start = text.index("LIST OF TRANSACTIONS FOR EACH SESSION:\n") + len("LIST OF TRANSACTIONS FOR EACH SESSION:\n")
    end = text.index("--------\nFILE I/O")
    entries = text[start:end]
    copies = (1024 * 1024 - len(text)) // len(entries) + 1
    return text[:start] + entries * copies + text[end:]


def parse_benchmark(rounds: int = 30) -> None:
    text = one_megabyte_status()
    innodb_status.parse(text)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        status = innodb_status.parse(text)
        times.append(time.perf_counter() - started)
    print(f"parse {len(text) / 1e6:.2f} MB status text ({status.transactions.listed} transactions): "
          f"median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms  (target < 20 ms)")


def tps(db, seconds: int, threads: int) -> float:
    sb = Sysbench(db, threads=threads)
    out = subprocess.run(["sysbench", sb.workload, *sb.common, f"--threads={threads}", f"--time={seconds}",
                          "--db-ps-mode=disable", "--mysql-ignore-errors=all", "run"], capture_output=True, text=True)
    return float(re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out.stdout).group(1))


def overhead(db, exporter_url: str, seconds: int, threads: int, pairs: int = 2) -> None:
    stop = threading.Event()

    def scrape_every_second():
        while not stop.wait(1.0):
            get(exporter_url)

    without, with_ = [], []
    for _ in range(pairs):
        without.append(tps(db, seconds, threads))
        stop.clear()
        scraper = threading.Thread(target=scrape_every_second)
        scraper.start()
        with_.append(tps(db, seconds, threads))
        stop.set()
        scraper.join()
    base, loaded = statistics.mean(without), statistics.mean(with_)
    print(f"sysbench tps without scraping {', '.join(f'{t:.1f}' for t in without)}; scraped every second "
          f"{', '.join(f'{t:.1f}' for t in with_)}; cost {100 * (base - loaded) / base:+.2f} %  (target < 1 %)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scrapes", type=int, default=300)
    p.add_argument("--threads", type=int, default=4, help="sysbench threads")
    p.add_argument("--overhead-seconds", type=int, default=20, help="length of each throughput run; 0 skips it")
    p.add_argument("--only-parse", action="store_true")
    args = p.parse_args()
    parse_benchmark()
    if args.only_parse:
        return 0
    with MariaDB() as db:
        for user in (OURS, THEIRS):
            db.create_user(user, PASSWORD)
        load = Sysbench(db, threads=args.threads).prepare().start(seconds=3600)
        ours = Exporter(db.address, OURS, PASSWORD)
        theirs = MysqldExporter(db)
        try:
            for _ in range(10):  # warm up both, and the server's caches
                get(ours.url + "/metrics")
                get(theirs.url)
            before = {u: server_time(db, u) for u in (OURS, THEIRS)}
            latency = {OURS: [], THEIRS: []}
            for _ in range(args.scrapes):
                latency[OURS].append(get(ours.url + "/metrics"))
                latency[THEIRS].append(get(theirs.url))
            after = {u: server_time(db, u) for u in (OURS, THEIRS)}
            print(f"MariaDB {db.sql('SELECT VERSION()')[0][0]}, sysbench oltp_read_write {args.threads} threads, "
                  f"{args.scrapes} scrapes each, alternating")
            for user, name in ((OURS, "innodb-exporter"), (THEIRS, "mysqld_exporter")):
                server = (after[user][1] - before[user][1]) / args.scrapes
                statements = (after[user][0] - before[user][0]) / args.scrapes
                print(f"{name:16} p50 {percentile(latency[user], 50) * 1000:7.2f} ms  p99 "
                      f"{percentile(latency[user], 99) * 1000:7.2f} ms  server time {server * 1000:6.2f} ms "
                      f"in {statements:.1f} statements per scrape")
            p50_ours, p50_theirs = percentile(latency[OURS], 50), percentile(latency[THEIRS], 50)
            server_ours = (after[OURS][1] - before[OURS][1]) / args.scrapes
            print(f"our p50 / mysqld_exporter p50 = {p50_ours / p50_theirs:.2f}  (target < 1)")
            print(f"our p50 / server time of our queries = {p50_ours / server_ours:.2f}  (target < 2)")
            cores = os.cpu_count() or 1
            print(f"scraped every second, our queries keep the server busy {server_ours * 1000:.1f} ms per second: "
                  f"{100 * server_ours / cores:.2f} % of its {cores} cores at most")
            for name, pid in (("innodb-exporter", ours.proc.pid), ("mysqld_exporter", theirs.proc.pid)):
                current, peak = rss_mb(pid)
                print(f"{name:16} resident memory {current:.1f} MB, peak {peak:.1f} MB" +
                      ("  (target < 60 MB)" if name == "innodb-exporter" else ""))
            if args.overhead_seconds:
                load.stop()
                overhead(db, ours.url + "/metrics", args.overhead_seconds, args.threads)
        finally:
            ours.stop()
            theirs.stop()
            load.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
