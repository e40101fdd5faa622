"""A flood of capture webhooks against the exporter, while Prometheus-like scrapes of /metrics go on.

    python benchmarks/webhook_flood.py [--flavour mariadb-10.11] [--body-bytes 1000000] [--instances 18000]
                                       [--burst 70] [--posters 8] [--seconds 40] [--source DIR] [--json FILE]

One server (a throwaway one of --flavour, tuned), one exporter with --capture.dir, scraped on /metrics
once a second (15 s timeout) through four phases:
  baseline    10 s of scrapes alone;
  single      one POST of --body-bytes naming --instances distinct servers the exporter does not scrape
              (the body the issue reports: 996,902 bytes, 18,000 instances);
  burst       --burst such POSTs at once, then 10 s to settle;
  sustained   --posters clients posting it back to back for --seconds, then 10 s to settle.
For each phase: the scrapes' latency (p50, max, and how many timed out), the exporter's resident memory
(at the start, the highest seen, at the end), what its log grew (bytes and lines), and the POSTs' answers.
--source runs the exporter of another checkout (its exporters/ directory is put first on PYTHONPATH), so
that the same script measures before and after a change.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "exporters"))

from proc_stats import memory_mb, percentile  # noqa: E402

from support.exporter import Exporter  # noqa: E402
from support.servers import EXPORTER_PASSWORD, EXPORTER_USER, FLAVORS, server  # noqa: E402

SCRAPE_TIMEOUT = 15.0
SCRAPE_EVERY = 1.0


def flood_body(size: int, instances: int) -> bytes:
    """A firing webhook of about ``size`` bytes whose alerts name ``instances`` distinct servers."""
    alerts = [{"labels": {"instance": f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}:3306"}} for i in range(instances)]
    body = {"version": "4", "status": "firing", "receiver": "capture", "alerts": alerts, "externalURL": ""}
    pad = size - len(json.dumps(body).encode())
    body["externalURL"] = "x" * max(0, pad)
    return json.dumps(body).encode()


class Watch:
    """Scrapes /metrics every second and samples the exporter's memory, in threads of their own."""

    def __init__(self, exporter: Exporter):
        self.exporter = exporter
        self.stop = threading.Event()
        self.scrapes: list[tuple[float, float | None]] = []  # (when, seconds or None when it timed out)
        self.rss: list[tuple[float, float]] = []
        self.threads = [threading.Thread(target=self._scrape, daemon=True),
                        threading.Thread(target=self._memory, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _scrape(self):
        conn = None
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                conn = conn or http.client.HTTPConnection("127.0.0.1", self.exporter.port, timeout=SCRAPE_TIMEOUT)
                conn.request("GET", "/metrics", headers={"X-Prometheus-Scrape-Timeout-Seconds": "10"})
                response = conn.getresponse()
                response.read()
                self.scrapes.append((started, time.monotonic() - started if response.status == 200 else None))
            except (OSError, http.client.HTTPException):
                self.scrapes.append((started, None))
                conn = None
            self.stop.wait(max(0.0, SCRAPE_EVERY - (time.monotonic() - started)))

    def _memory(self):
        while not self.stop.is_set():
            try:
                self.rss.append((time.monotonic(), memory_mb(self.exporter.proc.pid)[0]))
            except (OSError, KeyError):
                pass
            self.stop.wait(0.2)

    def close(self):
        self.stop.set()
        for thread in self.threads:
            thread.join(SCRAPE_TIMEOUT + 5)


def post(port: int, body: bytes) -> tuple[int | str, float]:
    started = time.monotonic()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("POST", "/capture", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        conn.close()
        return response.status, time.monotonic() - started
    except (OSError, http.client.HTTPException) as exc:
        return type(exc).__name__, time.monotonic() - started


def log_size(exporter: Exporter) -> tuple[int, int]:
    exporter._log.flush()
    with open(exporter.log_path, "rb") as f:
        data = f.read()
    return len(data), data.count(b"\n")


def phase(name: str, exporter: Exporter, watch: Watch, work, settle: float = 0.0) -> dict:
    bytes0, lines0 = log_size(exporter)
    rss0 = memory_mb(exporter.proc.pid)[0]
    start = time.monotonic()
    answers = work()
    if settle:
        time.sleep(settle)
    end = time.monotonic()
    bytes1, lines1 = log_size(exporter)
    scrapes = [s for t, s in watch.scrapes if start <= t <= end]
    done = [s for s in scrapes if s is not None]
    peak = max([r for t, r in watch.rss if start <= t <= end] or [rss0])
    return {"phase": name, "seconds": round(end - start, 1), "scrapes": len(scrapes),
            "scrape_timeouts": len(scrapes) - len(done),
            "scrape_p50_ms": round(percentile(done, 50) * 1000, 1) if done else None,
            "scrape_max_ms": round(max(done) * 1000, 1) if done else None,
            "rss_start_mb": round(rss0, 1), "rss_peak_mb": round(peak, 1),
            "rss_end_mb": round(memory_mb(exporter.proc.pid)[0], 1),
            "log_bytes": bytes1 - bytes0, "log_lines": lines1 - lines0,
            "posts": dict(collections.Counter(str(status) for status, _ in answers)),
            "post_max_s": round(max((s for _, s in answers), default=0.0), 2)}


def run(args) -> list[dict]:
    body = flood_body(args.body_bytes, args.instances)
    if args.source:
        os.environ["PYTHONPATH"] = os.path.join(os.path.abspath(args.source), "exporters")
    with tempfile.TemporaryDirectory(prefix="webhook-flood-") as captures, server(args.flavour, "tuned") as db:
        db.start()
        db.create_user()
        command = [sys.executable, "-m", "innodb_exporter"] if args.source else None
        with Exporter(db.address, EXPORTER_USER, EXPORTER_PASSWORD, f"--capture.dir={captures}",
                      command=command) as exporter:
            for _ in range(3):
                exporter.scrape()
            watch = Watch(exporter)
            results = [phase("baseline", exporter, watch, lambda: (time.sleep(10), [])[1])]
            results.append(phase("single", exporter, watch, lambda: [post(exporter.port, body)]))

            def burst():
                out: list = []
                threads = [threading.Thread(target=lambda: out.append(post(exporter.port, body)))
                           for _ in range(args.burst)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                return out

            results.append(phase("burst", exporter, watch, burst, settle=10))

            def sustained():
                out: list = []
                end = time.monotonic() + args.seconds

                def poster():
                    while time.monotonic() < end:
                        out.append(post(exporter.port, body))

                threads = [threading.Thread(target=poster) for _ in range(args.posters)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                return out

            results.append(phase("sustained", exporter, watch, sustained, settle=10))
            watch.close()
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--flavour", choices=FLAVORS, default="mariadb-10.11")
    p.add_argument("--body-bytes", type=int, default=1_000_000)
    p.add_argument("--instances", type=int, default=18_000)
    p.add_argument("--burst", type=int, default=70)
    p.add_argument("--posters", type=int, default=8)
    p.add_argument("--seconds", type=float, default=40)
    p.add_argument("--source", help="a checkout whose exporter to run (default: this one)")
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args(argv)
    results = run(args)
    print(f"webhook flood: {args.body_bytes:,} bytes naming {args.instances:,} instances, exporter of "
          f"{args.source or ROOT}")
    print(f"{'phase':10} {'scrapes':>7} {'timeouts':>8} {'p50 ms':>8} {'max ms':>8} {'RSS MB start/peak/end':>22} "
          f"{'log bytes':>10} {'log lines':>9}  posts")
    for r in results:
        rss = f"{r['rss_start_mb']:.0f}/{r['rss_peak_mb']:.0f}/{r['rss_end_mb']:.0f}"
        print(f"{r['phase']:10} {r['scrapes']:>7} {r['scrape_timeouts']:>8} {r['scrape_p50_ms'] or '-':>8} "
              f"{r['scrape_max_ms'] or '-':>8} {rss:>22} {r['log_bytes']:>10,} {r['log_lines']:>9,}  "
              f"{r['posts']} (slowest {r['post_max_s']} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"body_bytes": args.body_bytes, "instances": args.instances, "source": args.source or ROOT,
                       "phases": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
