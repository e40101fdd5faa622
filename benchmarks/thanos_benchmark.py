"""What the highly available pair behind Thanos costs, for one server watched: each component's CPU and
memory, and the bytes the bucket gains per day.

    .venv/bin/python benchmarks/thanos_benchmark.py [--minutes 10] [--block 2m] [--rate 200] [--json FILE]

It brings up the native stack with STACK_STORE=thanos on Prometheus 3 (stack/tools.py builds Prometheus 3 and
Thanos first if need be) on free ports: the demo MariaDB 10.11 (tuned) under sysbench oltp_read_write at
--rate transactions per second, both exporters and node_exporter, two replicas with their sidecars, the store
gateway and Thanos Query. Blocks are --block long (the sidecar uploads a block once Prometheus cuts it; 2h in
production, shorter here so that blocks reach the bucket within the run). Once the first block is in the
bucket, over --minutes:

  * each component's CPU time (utime + stime from /proc) as a share of one core, and its resident memory
    at the end; the replicas' CPU per scrape (Prometheus' own scrape count);
  * the samples each replica appended (prometheus_tsdb_head_samples_appended_total), hence the samples per
    day of this one server, and the bytes of the blocks uploaded to the bucket, per sample and per day;
  * Thanos Query answering a dashboard's worth of queries: one query_range of every panel over the last hour
    at 15 s, and the CPU it took.

The figures are for one server: the pair and Thanos cost this much to watch it, and docs/fleet.md says which
of them grow with servers. Short blocks hold fewer samples per index and chunk: the bytes per sample are an
upper bound of what 2-hour blocks take (and the compactor, not run here, shrinks them further).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
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

from dashboards import preview  # noqa: E402
from proc_stats import cpu_seconds, load_average, memory_mb  # noqa: E402
from stack import tools  # noqa: E402
from stack.native import Stack  # noqa: E402
from stack.settings import DEFAULT_PORTS, STORES, Settings  # noqa: E402
from support.dashboards import panel_queries  # noqa: E402
from support.servers import free_port, wait_for  # noqa: E402

DAY_S = 86400
COMPONENTS = ("prometheus", *STORES["thanos"])


def get_json(url: str, **params):
    with urllib.request.urlopen(url + "?" + urllib.parse.urlencode(params), timeout=120) as r:
        return json.load(r)


def scalar(url: str, expr: str) -> float:
    return sum(float(r["value"][1]) for r in get_json(url + "/api/v1/query", query=expr)["data"]["result"])


def bucket_bytes(stack: Stack) -> int:
    return sum(os.path.getsize(p) for p in glob.glob(stack.s.path("thanos", "bucket", "**"), recursive=True)
               if os.path.isfile(p))


def blocks(stack: Stack) -> int:
    return len(glob.glob(stack.s.path("thanos", "bucket", "*", "meta.json")))


def measure(stack: Stack, minutes: float) -> dict:
    pids = {name: stack.services[name].pid() for name in COMPONENTS}
    replicas = stack.s.replicas()
    print("waiting for the first block of each replica in the bucket", file=sys.stderr, flush=True)
    wait_for(lambda: blocks(stack) >= 2, 900, interval=10, what="the first block of each replica in the bucket")
    load_before = load_average()
    start = time.time()
    cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
    appended = {r: scalar(stack.s.url(r), "prometheus_tsdb_head_samples_appended_total") for r in replicas}
    scrapes = {r: scalar(stack.s.url(r), "sum(prometheus_target_interval_length_seconds_count)") for r in replicas}
    stored, block_count = bucket_bytes(stack), blocks(stack)
    while time.time() < start + minutes * 60:
        time.sleep(min(60.0, start + minutes * 60 - time.time()))
        print(f"{(time.time() - start) / 60:.0f} of {minutes:g} minutes; {blocks(stack) - block_count} blocks uploaded",
              file=sys.stderr, flush=True)
    end = time.time()
    used = {name: cpu_seconds(pid) - cpu[name] for name, pid in pids.items()}
    appended = {r: scalar(stack.s.url(r), "prometheus_tsdb_head_samples_appended_total") - appended[r] for r in replicas}
    scrapes = {r: scalar(stack.s.url(r), "sum(prometheus_target_interval_length_seconds_count)") - scrapes[r]
               for r in replicas}
    uploaded, new_blocks = bucket_bytes(stack) - stored, blocks(stack) - block_count
    load_after = load_average()
    seconds = end - start
    # A dashboard's worth of queries through Query: every panel over the last hour.
    query_cpu = cpu_seconds(pids["thanos_query"])
    values = preview.variables(stack.s.address("mariadb"), 3600, 15, "1h")
    queried = time.time()
    answered = sum(preview.query_range(stack.s.url("thanos_query"), preview.substitute(t["expr"], values),
                                       queried - 3600, queried, 15).get("status") == "success"
                   for _, _, t in panel_queries())
    query_cpu = cpu_seconds(pids["thanos_query"]) - query_cpu
    per_replica_samples = appended[replicas[0]] / seconds * DAY_S
    return {
        "seconds": round(seconds),
        "components": {name: {"cpu_share_of_a_core": round(used[name] / seconds, 4),
                              "rss_mb": round(memory_mb(pid)[0], 1)} for name, pid in pids.items()},
        "replica_cpu_ms_per_scrape": round(used["prometheus"] / scrapes[replicas[0]] * 1000, 2),
        "samples_per_day_per_replica": round(per_replica_samples),
        "blocks_uploaded": new_blocks,
        "bucket_bytes_per_sample": round(uploaded / sum(appended.values()), 2) if uploaded else None,
        "bucket_mb_per_day": round(uploaded / seconds * DAY_S / 1e6, 1),
        "dashboard_queries": answered,
        "query_cpu_s_for_every_panel_over_an_hour": round(query_cpu, 2),
        "load_average": [load_before, load_after],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--block", default="2m", help="TSDB block length (default 2m)")
    p.add_argument("--rate", type=int, default=200, help="sysbench transactions per second (default 200)")
    p.add_argument("--json", help="also write the figures as JSON to FILE")
    args = p.parse_args(argv)
    for name in ("prometheus", "thanos"):
        tools.ensure(name)
    root = tempfile.mkdtemp(prefix="thanos-benchmark-")
    settings = Settings(root=root, ports={name: free_port() for name in DEFAULT_PORTS}, sysbench_threads=2,
                        sysbench_rate=args.rate, store="thanos", prometheus="3", block_duration=args.block,
                        replica_retention="1h", bucket_sync="30s")
    stack = Stack(settings)
    try:
        stack.up()
        figures = measure(stack, args.minutes)
    finally:
        stack.down()
        shutil.rmtree(root, ignore_errors=True)
    figures.update(block=args.block, rate=args.rate)
    print(json.dumps(figures, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            f.write(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
