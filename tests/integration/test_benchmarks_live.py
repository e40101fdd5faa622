"""The benchmarks that start servers, run short: they stay runnable and print what they promise (the
figures come from full runs; docs/fleet.md has them)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from support.golden import TESTS

pytestmark = pytest.mark.integration
BENCHMARKS = os.path.join(os.path.dirname(TESTS), "benchmarks")


def test_scrape_benchmark_says_what_each_statement_costs_the_server():
    """A short run against a real MariaDB under sysbench, both exporters scraped: the per-statement server
    time lists each exporter's own statements (ours also by source: MariaDB names every statement of our one
    query after its first), the tables made by --tables are there, and both exporters reach the server the
    same way and both answer gzipped, as Prometheus asks. Our scrape's query, taken from the server's general
    log, is replayed whole: the five statements the exporter sends."""
    out = subprocess.run([sys.executable, os.path.join(BENCHMARKS, "scrape_benchmark.py"), "--scrapes", "5",
                          "--statement-scrapes", "5", "--overhead-seconds", "0", "--tables", "30"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    tables = re.search(r"; (\d+) InnoDB tables \((\d+) of them made by --tables\); (\d+) mutex, (\d+) rwlock",
                       out.stdout)
    assert tables and int(tables.group(2)) == 30 and int(tables.group(1)) >= 34, out.stdout  # and sysbench's 4
    assert int(tables.group(3)) > 0 and int(tables.group(4)) > 0, out.stdout
    transports = re.search(r"innodb-exporter over (\S+), mysqld_exporter over (\S+); answers asked for gzip, "
                           r"came (\S+) \(\d+ KB\) and (\S+) \(\d+ KB\)\n", out.stdout)
    assert transports and transports.group(1) == transports.group(2) == "TCP/IP", out.stdout  # no TLS in 10.11
    assert transports.group(3) == transports.group(4) == "gzip", out.stdout  # both honour what Prometheus asks
    floor = re.search(r"^our scrape's query \((\d+) statements\) replayed without the exporter, alternating with "
                      r"mysqld_exporter: p50 ([\d.]+) ms against its ([\d.]+) ms", out.stdout, re.M)
    assert floor and floor.group(1) == "5" and float(floor.group(2)) > 0 and float(floor.group(3)) > 0, out.stdout
    ours = out.stdout.split("innodb-exporter alone, 5 scrapes: server time ")[1].split("mysqld_exporter alone")[0]
    theirs = out.stdout.split("mysqld_exporter alone, 5 scrapes: server time ")[1]
    assert "MariaDB's digests name every statement of a multi-statement query after its first" in ours
    by_source = {source: float(ms) for ms, source in re.findall(r"^ +([\d.]+) ms  ([a-z_]+)$", ours, re.M)}
    assert by_source["perf_schema_latches"] > 0 and by_source["engine_innodb_status"] > 0, ours
    assert by_source["engine_innodb_mutex"] == 0 and "sbtest" not in ours  # empty on MariaDB 10.6+, so not asked
    # Status, INNODB_METRICS, the status text, INNODB_TRX and the latch summary: no SHOW ENGINE INNODB MUTEX.
    assert re.search(r"^innodb-exporter .* in 5\.0 statements per scrape$", out.stdout, re.M), out.stdout
    assert "FROM performance_schema.events_waits_summary_global_by_event_name\n" in theirs  # every row
    assert "SHOW GLOBAL STATUS\n" in theirs and "SHOW ENGINE INNODB MUTEX" not in theirs


def test_fleet_benchmark_measures_a_small_fleet(tmp_path):
    """Three loopback aliases of one MariaDB under sysbench, scraped by Prometheus through one exporter."""
    result_file = tmp_path / "fleet.json"
    out = subprocess.run([sys.executable, os.path.join(BENCHMARKS, "fleet_benchmark.py"), "--quick",
                          "--json", str(result_file)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "CPU ms/scrape" in out.stdout and "one core saturates at about" in out.stdout
    with open(result_file) as f:
        result = json.load(f)
    [step] = result["steps"]
    assert step["targets"] == 3 and step["scrapes"] >= 3  # every target scraped at least once in 10 s
    assert step["scrapes_failed"] == 0 and step["servers_unreadable"] == 0
    assert step["exporter_cpu_ms_per_scrape"] > 0 and step["exporter_rss_mb"] > 0
    assert 0 < step["scrape_p50_ms"] <= step["scrape_p99_ms"]  # none failed: each within Prometheus' 4 s timeout
    assert result["saturation"]["targets_per_core"] > 0
