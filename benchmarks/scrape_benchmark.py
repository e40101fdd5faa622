"""Our exporter against Debian's mysqld_exporter, side by side on one server under one sysbench load.

    python benchmarks/scrape_benchmark.py [--scrapes 300] [--threads 4] [--overhead-seconds 20] [--tables 0]
                                          [--flavour mariadb-10.11] [--config tuned|stock] [--no-gzip]

Prints, for the same InnoDB sources (mysqld_exporter with --collect.info_schema.innodb_metrics,
--collect.engine_innodb_status, --collect.global_status, --collect.perf_schema.eventswaits, its
other default collectors off), both connecting over TLS where the server offers it (MySQL 8+; the header
line says what each used), each scraped alternately as Prometheus scrapes (a kept-alive connection,
its headers: OpenMetrics first, gzip, the stack's 4 s timeout; ours through /probe, as the stack scrapes
it; --no-gzip asks for uncompressed answers):
  * scrape latency p50 / p99 of each, and our p50 over theirs;
  * CPU time of each exporter process per scrape (utime + stime from /proc over all the scrapes), and
    ours over theirs;
  * the time the server spends on each exporter's queries per scrape (performance_schema, per user),
    and our p50 over our server time;
  * resident memory of each exporter, serving one server;
  * our scrape's query (from the server's general log) sent by the benchmark itself, without the exporter:
    the floor that no work on the exporter can bring its p50 under;
  * each exporter scraped alone, the server's time statement by statement (performance_schema's digests),
    which says where a scrape's latency goes;
  * the time to parse a 1 MB SHOW ENGINE INNODB STATUS text;
  * sysbench throughput with and without our exporter scraped every second.
--tables N first creates and opens N more InnoDB tables: the performance_schema summaries cost the server
time in proportion to the latch instances, which grow with the tables.
Targets (issue 14): our CPU per scrape and our p50 at most 0.3 x mysqld_exporter's; at most 40 MB
resident; our p50 < 2 x our server time; parse < 20 ms; scraping every second costs < 1 % of throughput.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "exporters"))

from proc_stats import cpu_seconds, load_average, memory_mb, percentile  # noqa: E402

from innodb_exporter.parsers import innodb_status  # noqa: E402
from innodb_exporter.scraping.connection import ConnectionSettings  # noqa: E402
from innodb_exporter.scraping.health import SOURCE_DURATION  # noqa: E402
from innodb_exporter.scraping.scrape import SEPARATOR  # noqa: E402
from innodb_exporter.scraping.session import Session  # noqa: E402
from support.exporter import Exporter  # noqa: E402
from support.servers import FLAVORS, Sysbench, free_port, server, wait_for  # noqa: E402

OURS, THEIRS, PASSWORD = "innodb_exp", "mysqld_exp", "Bench-pw-1"
MYSQLD_EXPORTER_FLAGS = [
    "--collect.info_schema.innodb_metrics", "--collect.engine_innodb_status", "--collect.global_status",
    "--collect.perf_schema.eventswaits", "--no-collect.global_variables", "--no-collect.slave_status",
    "--no-collect.info_schema.innodb_cmp", "--no-collect.info_schema.innodb_cmpmem",
    "--no-collect.info_schema.query_response_time",
]


def installed_exporter() -> list[str]:
    """The exporter as `pip install ./exporters` deploys it, in a virtual environment of its own: the test
    environment also holds the tests' libraries (cryptography, for one), which PyMySQL would load and which
    would count in the exporter's memory."""
    venv = os.path.join(os.environ.get("TMPDIR", "/tmp"), "innodb-exporter-benchmark-venv")
    script = os.path.join(venv, "bin", "innodb-exporter")
    stamp = os.path.join(venv, ".installed")
    sources = os.path.join(ROOT, "exporters")
    newest = max(os.path.getmtime(os.path.join(d, f)) for d, _, files in os.walk(sources) for f in files
                 if f.endswith((".py", ".toml")))
    if not os.path.exists(stamp) or os.path.getmtime(stamp) < newest:
        print(f"installing the exporter into {venv}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet", sources], check=True)
        open(stamp, "w").close()
    return [script]


# What Prometheus 2.42 sends with every scrape (seen by a listener it scraped); the timeout is the innodb
# job's (prometheus.yml). It asks for gzip, which both exporters honour: mysqld_exporter's 170 KB answer
# costs it 4 ms of CPU a scrape to compress, ours (35 to 60 KB) 0.3 ms.
PROMETHEUS_HEADERS = {
    "User-Agent": "Prometheus/2.42.0",
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
              "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
    "X-Prometheus-Scrape-Timeout-Seconds": "4",
}


class Scraper:
    """Scrapes one URL over one kept-alive connection, as Prometheus does."""

    def __init__(self, url: str, gzip_asked: bool = True):
        parts = urllib.parse.urlsplit(url)
        self.path = parts.path + (f"?{parts.query}" if parts.query else "")
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        self.headers = {k: v for k, v in PROMETHEUS_HEADERS.items() if gzip_asked or k != "Accept-Encoding"}
        self.body = b""  # the last answer, decompressed
        self.encoding = ""  # its Content-Encoding

    def get(self) -> float:
        started = time.perf_counter()
        self.conn.request("GET", self.path, headers=self.headers)
        response = self.conn.getresponse()
        self.body = response.read()
        self.encoding = response.getheader("Content-Encoding") or "identity"
        if self.encoding == "gzip":  # timed too: Prometheus decompresses as it reads
            self.body = gzip.decompress(self.body)
        if response.status != 200:
            raise RuntimeError(f"{self.path}: HTTP {response.status}")
        return time.perf_counter() - started


def get(url: str) -> float:
    return Scraper(url).get()


SOURCE_SECONDS = re.compile(rb'^' + SOURCE_DURATION.name.encode() + rb'\{source="([a-z_]+)"\} (\S+)$', re.M)


def statement_times(db, scraper: "Scraper", scrapes: int) -> tuple[list[tuple[float, str]], dict[str, float]]:
    """(server seconds per scrape, statement) for every statement one exporter runs, scraped alone (but for
    the load) ``scrapes`` times: performance_schema's digests, emptied first. The exporters connect without a
    default schema and sysbench with one, which tells their statements apart; nothing else runs meanwhile
    but this function's own TRUNCATE. With them, our seconds per scrape by source, as we expose them
    (none for mysqld_exporter)."""
    by_source: dict[str, float] = {}
    with db.connect() as conn, conn.cursor() as cur:
        cur.execute("TRUNCATE TABLE performance_schema.events_statements_summary_by_digest")
        for _ in range(scrapes):
            scraper.get()
            for source, seconds in SOURCE_SECONDS.findall(scraper.body):
                by_source[source.decode()] = by_source.get(source.decode(), 0.0) + float(seconds) / scrapes
        cur.execute("SELECT SUM_TIMER_WAIT, DIGEST_TEXT FROM performance_schema.events_statements_summary_by_digest"
                    " WHERE SCHEMA_NAME IS NULL AND (DIGEST_TEXT IS NULL OR DIGEST_TEXT NOT LIKE 'TRUNCATE%')"
                    " ORDER BY SUM_TIMER_WAIT DESC")
        # A NULL digest is the row performance_schema counts statements in once its digest table is full.
        return [(int(timer) / 1e12 / scrapes, _readable(text) if text else "(past the digest table's size)")
                for timer, text in cur.fetchall()], by_source


def _readable(digest: str) -> str:
    """A digest as one reads SQL: "SELECT `a` , `b` FROM `s` . `t`" -> "SELECT a, b FROM s.t"."""
    text = " ".join(str(digest).split()).replace("`", "")
    return text.replace(" . ", ".").replace(" , ", ", ")


def print_statement_times(db, scrapers: dict, scrapes: int) -> None:
    for user, name in ((OURS, "innodb-exporter"), (THEIRS, "mysqld_exporter")):
        times, by_source = statement_times(db, scrapers[user], scrapes)
        print(f"{name} alone, {scrapes} scrapes: server time {sum(t for t, _ in times) * 1000:.2f} ms per scrape, "
              "by statement:")
        for seconds, text in times:
            print(f"  {seconds * 1000:6.2f} ms  {text[:240]}")
        if len({text for _, text in times}) < len(times):
            print("  (MariaDB's digests name every statement of a multi-statement query after its first)")
        if by_source:
            print(f"{name} alone, the same scrapes: time per scrape by source ({SOURCE_DURATION.name}):")
            for source, seconds in sorted(by_source.items(), key=lambda item: -item[1]):
                print(f"  {seconds * 1000:6.2f} ms  {source}")


def scrape_statements(db, scraper: "Scraper", scrapes: int = 5) -> list[str]:
    """The statements our exporter sends in a scrape's query, as the server's general log records them: MariaDB
    logs the query, MySQL each of its statements, in the order run (the log's CSV table reads back in the order
    written). A scrape's statements start with its core source's, SHOW GLOBAL STATUS; of ``scrapes`` scrapes
    the most frequent set is kept (a connection's first and the once-a-minute readings send others too)."""
    db.sql("SET GLOBAL log_output = 'TABLE'")
    db.sql("TRUNCATE TABLE mysql.general_log")
    db.sql("SET GLOBAL general_log = ON")
    try:
        for _ in range(scrapes):
            scraper.get()
    finally:
        db.sql("SET GLOBAL general_log = OFF")
    rows = db.sql("SELECT argument FROM mysql.general_log WHERE command_type = 'Query' AND user_host LIKE %s",
                  (f"{OURS}[%",))
    db.sql("TRUNCATE TABLE mysql.general_log")
    queries: list[list[str]] = []
    for (text,) in rows:
        text = text.decode() if isinstance(text, bytes) else str(text)
        if text.lstrip().startswith("SHOW GLOBAL STATUS") or not queries:
            queries.append([])
        # MySQL logs each statement with what separates it from the next.
        queries[-1].extend(statement.strip(SEPARATOR + " ") for statement in text.split(SEPARATOR))
    if not queries:
        raise RuntimeError(f"the server's general log holds no query of {OURS}: cannot replay a scrape")
    return list(max(set(map(tuple, queries)), key=queries.count))


def replay_floor(db, statements: list[str], theirs: "Scraper", scrapes: int) -> None:
    """Our scrape's query sent by this benchmark over a connection made as the exporter makes its own (same
    user, TLS where offered, a kept connection), every answer read and nothing computed, alternating with
    mysqld_exporter's scrapes as the main run does: the server's part of our latency, under which no work on
    the exporter can bring its p50."""
    session = Session(ConnectionSettings(host="127.0.0.1", port=db.port, user=OURS, password=PASSWORD))
    session.open(time.monotonic() + 10)
    try:
        replayed, scraped = [], []
        for _ in range(scrapes):
            started = time.perf_counter()
            with session.cursor(time.monotonic() + 10) as cursor:
                cursor.execute(SEPARATOR.join(statements))
                cursor.fetchall()
                while cursor.nextset():
                    cursor.fetchall()
            replayed.append(time.perf_counter() - started)
            scraped.append(theirs.get())
    finally:
        session.close()
    floor, p50_theirs = percentile(replayed, 50), percentile(scraped, 50)
    print(f"our scrape's query ({len(statements)} statements) replayed without the exporter, alternating with "
          f"mysqld_exporter: p50 {floor * 1000:.2f} ms against its {p50_theirs * 1000:.2f} ms = "
          f"{floor / p50_theirs:.2f}: the floor under our p50 / mysqld_exporter's")


def open_tables(db, count: int) -> None:
    """``count`` more InnoDB tables, each with a secondary index and a row, read once so InnoDB opens them."""
    db.sql("CREATE DATABASE IF NOT EXISTS bench_tables")
    with db.connect() as conn, conn.cursor() as cur:
        for i in range(count):
            cur.execute(f"CREATE TABLE bench_tables.t{i} (id INT PRIMARY KEY, a INT, KEY (a)) ENGINE=InnoDB")
            cur.execute(f"INSERT INTO bench_tables.t{i} VALUES (1, 1)")
            cur.execute(f"SELECT * FROM bench_tables.t{i}")
            if (i + 1) % 1000 == 0:
                print(f"{i + 1} of {count} tables", file=sys.stderr)


def tables_and_latches(db) -> str:
    rows = db.sql("SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE ENGINE = 'InnoDB'),"
                  " (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench_tables'),"
                  " (SELECT COUNT(*) FROM performance_schema.mutex_instances),"
                  " (SELECT COUNT(*) FROM performance_schema.rwlock_instances),"
                  " (SELECT COUNT(*) FROM performance_schema.cond_instances)")
    return ("{} InnoDB tables ({} of them made by --tables); {} mutex, {} rwlock and {} cond instances in "
            "performance_schema").format(*rows[0])


def transport(db, user: str, scraper: "Scraper") -> str:
    """How an exporter's connection reaches the server (TCP/IP, SSL/TLS), seen in performance_schema while it
    is scraped: mysqld_exporter opens its connection for each scrape and closes it after."""
    stop = threading.Event()
    failed: list[BaseException] = []

    def scrape():
        try:
            while not stop.is_set():
                scraper.get()
        except BaseException as exc:  # raised below, in the benchmark's own thread
            failed.append(exc)

    scraping = threading.Thread(target=scrape)
    scraping.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not failed:
            rows = db.sql("SELECT CONNECTION_TYPE FROM performance_schema.threads WHERE PROCESSLIST_USER = %s", (user,))
            if rows:
                return str(rows[0][0])
            time.sleep(0.005)
        return "no connection seen"
    finally:
        stop.set()
        scraping.join()
        if failed:
            raise RuntimeError(f"scraping {user}'s exporter failed: {failed[0]}") from failed[0]


def server_time(db, user: str) -> tuple[int, float]:
    """(statements, seconds) the server spent on this user's statements so far."""
    rows = db.sql("SELECT COALESCE(SUM(COUNT_STAR), 0), COALESCE(SUM(SUM_TIMER_WAIT), 0) FROM "
                  "performance_schema.events_statements_summary_by_user_by_event_name WHERE USER = %s", (user,))
    return int(rows[0][0]), int(rows[0][1]) / 1e12


class MysqldExporter:
    def __init__(self, db):
        self.port = free_port()
        # TLS where the server offers it (MySQL 8+), as ours connects (ssl-mode PREFERRED): without it the Go
        # driver talks in clear and the two would not do the same work (TLS costs it 1.1 ms of CPU a scrape
        # on MySQL 9.7).
        env = dict(os.environ, DATA_SOURCE_NAME=f"{THEIRS}:{PASSWORD}@(127.0.0.1:{db.port})/?tls=preferred")
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
    print(f"parse {len(text) / 1e6:.2f} MB status text ({status.transactions.active} active transactions): "
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
    cost, spread = 100 * (base - loaded) / base, 100 * (max(without) - min(without)) / base
    # Runs without scraping differ among themselves; a cost inside that spread is not a measurement.
    verdict = "inside the spread: not resolved, run longer" if abs(cost) <= spread else "outside the spread"
    print(f"sysbench tps without scraping {', '.join(f'{t:.1f}' for t in without)}; scraped every second "
          f"{', '.join(f'{t:.1f}' for t in with_)}; cost {cost:+.2f} %, the unscraped runs differ by "
          f"{spread:.2f} % ({verdict})  (target < 1 %)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scrapes", type=int, default=300)
    p.add_argument("--threads", type=int, default=4, help="sysbench threads")
    p.add_argument("--overhead-seconds", type=int, default=20, help="length of each throughput run; 0 skips it")
    p.add_argument("--flavour", choices=FLAVORS, default="mariadb-10.11",
                   help="the server (default mariadb-10.11)")
    p.add_argument("--config", choices=("tuned", "stock"), default="tuned",
                   help="its configuration: tuned (performance_schema on, the InnoDB latch instruments enabled and "
                        "timed; the default) or stock, as the package ships it")
    p.add_argument("--tables", type=int, default=0, help="InnoDB tables to create and open first (default 0)")
    p.add_argument("--statement-scrapes", type=int, default=100,
                   help="scrapes of each exporter alone for the per-statement server time")
    p.add_argument("--no-gzip", action="store_true",
                   help="scrape without asking for gzip, as a Prometheus 2.49+ job with enable_compression: false")
    p.add_argument("--only-parse", action="store_true")
    args = p.parse_args()
    parse_benchmark()
    if args.only_parse:
        return 0
    with server(args.flavour, args.config) as db:
        if not int(db.sql("SELECT @@performance_schema")[0][0]):
            print(f"scrape_benchmark: performance_schema is OFF on {args.flavour} {args.config}, and the server's time "
                  "per statement comes from it: use --config tuned, or a MySQL flavour", file=sys.stderr)
            return 2
        for user in (OURS, THEIRS):
            db.create_user(user, PASSWORD)
        open_tables(db, args.tables)
        load = Sysbench(db, threads=args.threads).prepare().start(seconds=3600)
        ours = Exporter(db.address, OURS, PASSWORD, command=installed_exporter())
        theirs = MysqldExporter(db)
        try:
            load_before = load_average()
            scrapers = {OURS: Scraper(f"{ours.url}/probe?target={db.address}", not args.no_gzip),
                        THEIRS: Scraper(theirs.url, not args.no_gzip)}
            for _ in range(10):  # warm up both, and the server's caches
                for scraper in scrapers.values():
                    scraper.get()
            pids = {OURS: ours.proc.pid, THEIRS: theirs.proc.pid}
            before = {u: server_time(db, u) for u in (OURS, THEIRS)}
            cpu_before = {u: cpu_seconds(pid) for u, pid in pids.items()}
            latency = {OURS: [], THEIRS: []}
            for _ in range(args.scrapes):
                for user, scraper in scrapers.items():
                    latency[user].append(scraper.get())
            cpu = {u: (cpu_seconds(pid) - cpu_before[u]) / args.scrapes for u, pid in pids.items()}
            after = {u: server_time(db, u) for u in (OURS, THEIRS)}
            print(f"{args.flavour} {db.sql('SELECT VERSION()')[0][0]} ({args.config}), sysbench oltp_read_write "
                  f"{args.threads} threads, {args.scrapes} scrapes each, alternating; load average "
                  f"{load_before:.1f} before, {load_average():.1f} after ({os.cpu_count()} CPUs); "
                  f"{tables_and_latches(db)}; innodb-exporter over {transport(db, OURS, scrapers[OURS])}, "
                  f"mysqld_exporter over {transport(db, THEIRS, scrapers[THEIRS])}; answers "
                  f"{'asked for gzip' if not args.no_gzip else 'asked uncompressed'}, came "
                  f"{scrapers[OURS].encoding} ({len(scrapers[OURS].body) // 1024} KB) and "
                  f"{scrapers[THEIRS].encoding} ({len(scrapers[THEIRS].body) // 1024} KB)")
            for user, name in ((OURS, "innodb-exporter"), (THEIRS, "mysqld_exporter")):
                seconds = (after[user][1] - before[user][1]) / args.scrapes
                statements = (after[user][0] - before[user][0]) / args.scrapes
                print(f"{name:16} p50 {percentile(latency[user], 50) * 1000:7.2f} ms  p99 "
                      f"{percentile(latency[user], 99) * 1000:7.2f} ms  CPU {cpu[user] * 1000:6.2f} ms  "
                      f"server time {seconds * 1000:6.2f} ms in {statements:.1f} statements per scrape")
            p50_ours, p50_theirs = percentile(latency[OURS], 50), percentile(latency[THEIRS], 50)
            server_ours = (after[OURS][1] - before[OURS][1]) / args.scrapes
            print(f"our CPU per scrape / mysqld_exporter's = {cpu[OURS] / cpu[THEIRS]:.2f}  (target <= 0.3)")
            print(f"our p50 / mysqld_exporter p50 = {p50_ours / p50_theirs:.2f}  (target <= 0.3)")
            print(f"our p50 / server time of our queries = {p50_ours / server_ours:.2f}  (target < 2)")
            cores = os.cpu_count() or 1
            print(f"scraped every second, our queries keep the server busy {server_ours * 1000:.1f} ms per second: "
                  f"{100 * server_ours / cores:.2f} % of its {cores} cores at most")
            for name, pid in (("innodb-exporter", ours.proc.pid), ("mysqld_exporter", theirs.proc.pid)):
                current, peak = memory_mb(pid)
                print(f"{name:16} resident memory serving one server {current:.1f} MB, peak {peak:.1f} MB" +
                      ("  (target <= 40 MB)" if name == "innodb-exporter" else ""))
            replay_floor(db, scrape_statements(db, scrapers[OURS]), scrapers[THEIRS], args.scrapes)
            print_statement_times(db, scrapers, args.statement_scrapes)
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
