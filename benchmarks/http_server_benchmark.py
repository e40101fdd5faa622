"""The exporter's HTTP server against maintained ones, under the attacks it must survive (issue 28).

    .venv/bin/pip install -r benchmarks/requirements-http.txt     # the candidates, pinned
    flock /tmp/innodb-heavy.lock .venv/bin/python benchmarks/http_server_benchmark.py \
        [--servers innodb-exporter,cheroot,hypercorn,gunicorn-gthread] [--json FILE]

Each server runs in a process of its own and serves the same WSGI app: a 50 KB exposition after 5 ms of
waiting with the GIL released (a scrape waiting on its database). Each is configured with its settings
nearest to the exporter's (docs/http.md lists them): a 5 s deadline or read timeout on a request head, 120 s
of keep-alive, 64 app threads, a listen backlog of 4,096. A candidate that is not installed is skipped.

Against each, from this process (loopback only, every loop bounded in time):
  * CPU per scrape: 300 scrapes one after another on a kept-alive connection, as Prometheus scrapes;
    the server's CPU time (utime + stime of its processes, from /proc) over them, and their p50 latency;
  * 200 concurrent scrapes, each on a connection of its own: answered, p50 / p99 / max latency;
  * an idle-connection flood: 1,024 connections that send nothing, then 20 scrapes on new connections
    (answered, p50 / max); after 8 s, how many idle connections the server has closed; its memory;
  * slowloris: 100 connections each sending a request head one byte every 0.5 s (each byte well within
    any per-read timeout) for 15 s, with a scrape every 0.5 s meanwhile (answered within 5 s, or not);
    how many slowloris connections the server closed, and when it closed the first and the last.
  * framing: 14 badly framed requests (those of tests/unit/test_webserver.py: Content-Length with
    Transfer-Encoding, a 20-digit chunk size, bare LF, obs-fold, ...), each with a request pipelined behind
    it: how many the server refuses and closes without reading what follows, how many it leaves hanging
    (no answer within 3 s), and how many let the request behind be answered.
It prints a table and, with --json, writes the figures. ``--exporter-tree DIR`` serves innodb-exporter from
another checkout's exporters/ (e.g. ``git archive <commit> exporters | tar -x -C /tmp/before``), for a
before/after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from proc_stats import CLOCK_TICKS, percentile  # noqa: E402

APP_SECONDS = 0.005
BODY = b"".join(b'innodb_bench_metric_%d{instance="db1:3306",kind="k%d"} %d\n' % (i, i % 7, i * 7)
                for i in range(1100))
HEAD_DEADLINE, KEEP_ALIVE, THREADS, BACKLOG = 5, 120, 64, 4096
SERVERS = ("innodb-exporter", "cheroot", "hypercorn", "gunicorn-gthread")
MODULES = {"innodb-exporter": "h11", "cheroot": "cheroot", "hypercorn": "hypercorn", "gunicorn-gthread": "gunicorn"}
SCRAPE = b"GET /metrics HTTP/1.1\r\nHost: bench\r\nAccept-Encoding: identity\r\n\r\n"


def app(environ, start_response):
    environ["wsgi.input"].read()
    time.sleep(APP_SECONDS)
    start_response("200 OK", [("Content-Type", "text/plain; version=0.0.4"), ("Content-Length", str(len(BODY)))])
    return [BODY]


# --- the servers, each in a process of its own ------------------------------------------------------


def serve(name: str, port: int, tree: str) -> None:
    if name == "innodb-exporter":
        sys.path.insert(0, tree)
        from innodb_exporter.web.server import Limits, serve as serve_ours
        serve_ours(app, host="127.0.0.1", port=port,
                   limits=Limits(head_timeout=HEAD_DEADLINE, idle_timeout=KEEP_ALIVE, workers=THREADS,
                                 backlog=BACKLOG))
    elif name == "cheroot":
        from cheroot import wsgi
        server = wsgi.Server(("127.0.0.1", port), app, numthreads=THREADS, max=THREADS,
                             request_queue_size=BACKLOG, timeout=HEAD_DEADLINE)
        signal.signal(signal.SIGTERM, lambda *_: server.stop())
        server.start()
    elif name == "hypercorn":
        import asyncio
        from hypercorn.asyncio import serve as serve_hypercorn
        from hypercorn.config import Config
        config = Config()
        config.bind = [f"127.0.0.1:{port}"]
        config.read_timeout, config.keep_alive_timeout = HEAD_DEADLINE, KEEP_ALIVE
        config.ssl_handshake_timeout, config.backlog = HEAD_DEADLINE, BACKLOG
        config.h11_max_incomplete_size, config.accesslog = 16 * 1024, None
        loop = asyncio.new_event_loop()
        loop.set_default_executor(__import__("concurrent.futures").futures.ThreadPoolExecutor(THREADS))
        loop.run_until_complete(serve_hypercorn(app, config, mode="wsgi"))
    elif name == "gunicorn-gthread":
        from gunicorn.app.base import BaseApplication

        class Bench(BaseApplication):
            def load_config(self):
                for key, value in {"bind": f"127.0.0.1:{port}", "worker_class": "gthread", "workers": 1,
                                   "threads": THREADS, "worker_connections": 1024, "keepalive": KEEP_ALIVE,
                                   "timeout": 30, "backlog": BACKLOG, "loglevel": "warning"}.items():
                    self.cfg.set(key, value)

            def load(self):
                return app
        Bench().run()
    else:
        raise SystemExit(f"unknown server {name}")


class Served:
    def __init__(self, name: str, tree: str):
        self.name = name
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", name, "--port", str(self.port),
                                      "--exporter-tree", tree],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up:
            try:
                if scrape(self.port, 2)[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{name} did not answer on port {self.port}")

    def pids(self) -> list[int]:
        """The server's process and its children (gunicorn's worker)."""
        found, parents = [self.proc.pid], {self.proc.pid}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) in parents:
                            found.append(int(entry))
                except (OSError, ValueError, IndexError):
                    pass
        return found

    def cpu(self) -> float:
        total = 0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except OSError:
                pass
        return total / CLOCK_TICKS

    def rss_mb(self) -> float:
        total = 0.0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/status") as f:
                    total += next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) / 1024
            except (OSError, StopIteration):
                pass
        return total

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --- the client ---------------------------------------------------------------------------------


def read_response(sock: socket.socket) -> int:
    """Reads one response with a Content-Length; its status."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the answer")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the body")
        rest += chunk
    return int(head.split()[1])


def scrape(port: int, timeout: float) -> tuple[int, float]:
    """(status, seconds) of a scrape on a connection of its own; raises OSError on failure."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(SCRAPE)
        return read_response(sock), time.monotonic() - started


def try_scrape(port: int, timeout: float) -> float | None:
    try:
        status, seconds = scrape(port, timeout)
        return seconds if status == 200 else None
    except OSError:
        return None


def ms(seconds) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"


def cpu_per_scrape(served: Served) -> dict:
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        for _ in range(20):  # warm up
            sock.sendall(SCRAPE)
            read_response(sock)
        cpu, latencies = served.cpu(), []
        for _ in range(300):
            started = time.monotonic()
            sock.sendall(SCRAPE)
            assert read_response(sock) == 200
            latencies.append(time.monotonic() - started)
        cpu = served.cpu() - cpu
    return {"cpu_ms_per_scrape": cpu / 300 * 1000, "p50_s": statistics.median(latencies)}


def concurrent(served: Served, count: int = 200) -> dict:
    barrier, results, lock = threading.Barrier(count), [], threading.Lock()

    def one():
        barrier.wait()
        seconds = try_scrape(served.port, 30)
        with lock:
            results.append(seconds)
    threads = [threading.Thread(target=one) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    ok = [s for s in results if s is not None]
    return {"answered": len(ok), "of": count, "p50_s": percentile(ok, 50) if ok else None,
            "p99_s": percentile(ok, 99) if ok else None, "max_s": max(ok) if ok else None}


def open_quietly(port: int, first: bytes = b"") -> socket.socket | None:
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        if first:
            sock.sendall(first)
        sock.setblocking(False)
        return sock
    except OSError:
        return None


def closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(65536) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def idle_flood(served: Served, count: int = 1024) -> dict:
    socks = [s for s in (open_quietly(served.port) for _ in range(count)) if s is not None]
    time.sleep(1.0)
    rss = served.rss_mb()
    latencies = [try_scrape(served.port, 10) for _ in range(20)]
    ok = [s for s in latencies if s is not None]
    time.sleep(max(0.0, 8.0 - sum(s if s is not None else 10 for s in latencies)))
    gone = sum(closed(s) for s in socks)
    for s in socks:
        s.close()
    return {"opened": len(socks), "answered": len(ok), "of": len(latencies),
            "p50_s": statistics.median(ok) if ok else None, "max_s": max(ok) if ok else None,
            "idle_closed_by_8s": gone, "rss_mb": rss}


def slowloris(served: Served, count: int = 100, seconds: float = 15.0) -> dict:
    start = time.monotonic()
    socks = {s: None for s in (open_quietly(served.port, b"GET /metrics HTTP/1.1\r\nHost: bench\r\nX-Slow: ")
                                for _ in range(count)) if s is not None}
    closed_at: dict[socket.socket, float] = {}
    scrapes: list[float | None] = []
    stop = threading.Event()

    def scraper():
        while not stop.is_set():
            scrapes.append(try_scrape(served.port, 5))
            stop.wait(0.5)
    thread = threading.Thread(target=scraper)
    thread.start()
    while time.monotonic() - start < seconds:
        for sock in socks:
            if sock in closed_at:
                continue
            try:
                sock.send(b"y")
            except OSError:
                closed_at[sock] = time.monotonic() - start
                continue
            if closed(sock):
                closed_at[sock] = time.monotonic() - start
        time.sleep(0.5)
    stop.set()
    thread.join(30)
    for sock in socks:
        sock.close()
    times = sorted(closed_at.values())
    ok = [s for s in scrapes if s is not None]
    return {"connections": len(socks), "closed_by_server": len(times), "first_closed_s": times[0] if times else None,
            "last_closed_s": times[-1] if times else None, "scrapes_answered": len(ok), "scrapes": len(scrapes),
            "scrape_p50_s": statistics.median(ok) if ok else None}


SECOND = b"GET /second HTTP/1.1\r\nHost: bench\r\n\r\n"
BAD_FRAMING = [  # the cases of tests/unit/test_webserver.py's test_a_badly_framed_request_is_refused_...
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\n",
    b"GET / HTTP/1.1\nHost: x\n\n",
    b"GET / HTTP/1.1\r\nHost: x\nX-A: 1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  2\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\nx\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy0\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-Trailer: 1\r\n\r\n",
    b"POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 1\r\n\r\nx",
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
]


def framing(served: Served) -> dict:
    refused = hung = smuggled = 0
    for request in BAD_FRAMING:
        with socket.create_connection(("127.0.0.1", served.port), timeout=3) as sock:
            sock.sendall(request + SECOND)
            answer, timed_out = b"", False
            try:
                while chunk := sock.recv(65536):
                    answer += chunk
            except socket.timeout:
                timed_out = True
            except OSError:
                pass
        statuses = [int(line.split()[1]) for line in answer.split(b"\r\n")
                    if line.startswith(b"HTTP/1.") and len(line.split()) > 1 and line.split()[1].isdigit()]
        if len(statuses) > 1:
            smuggled += 1
        elif not statuses:
            hung += 1
        elif statuses[0] >= 400 and not timed_out:
            refused += 1
    return {"cases": len(BAD_FRAMING), "refused_and_closed": refused, "no_answer": hung,
            "request_behind_answered": smuggled}


def installed(name: str) -> bool:
    try:
        __import__(MODULES[name])
        return True
    except ImportError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--json", default="")
    parser.add_argument("--exporter-tree", default=os.path.join(ROOT, "exporters"))
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.exporter_tree)
        return 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this process holds over a thousand sockets
    results = {}
    for name in args.servers.split(","):
        if not installed(name):
            print(f"{name}: not installed (pip install -r benchmarks/requirements-http.txt); skipped")
            continue
        print(f"{name} ...", flush=True)
        served = Served(name, args.exporter_tree)
        try:
            results[name] = {"cpu": cpu_per_scrape(served), "concurrent": concurrent(served),
                             "idle_flood": idle_flood(served), "slowloris": slowloris(served),
                             "framing": framing(served)}
            served_alive = served.proc.poll() is None
            results[name]["alive_at_end"] = served_alive
        finally:
            served.stop()
        time.sleep(2)  # let the sockets of one run go before the next
    print()
    print("| server | CPU per scrape | scrape p50 | 200 at once: answered, p50/p99/max | 1,024 idle: scrapes "
          "answered, p50/max | idle closed after 8 s | RSS under the flood | slowloris: closed by server "
          "(first/last) | scrapes answered during slowloris | bad framing: refused and closed / no answer / "
          "request behind answered |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        c, cc, f, s, b = r["cpu"], r["concurrent"], r["idle_flood"], r["slowloris"], r["framing"]
        print(f"| {name} | {c['cpu_ms_per_scrape']:.2f} ms | {ms(c['p50_s'])} | {cc['answered']}/{cc['of']}, "
              f"{ms(cc['p50_s'])}/{ms(cc['p99_s'])}/{ms(cc['max_s'])} | {f['answered']}/{f['of']}, "
              f"{ms(f['p50_s'])}/{ms(f['max_s'])} | {f['idle_closed_by_8s']}/{f['opened']} | {f['rss_mb']:.0f} MB | "
              f"{s['closed_by_server']}/{s['connections']} ({ms(s['first_closed_s'])}/{ms(s['last_closed_s'])}) | "
              f"{s['scrapes_answered']}/{s['scrapes']} | {b['refused_and_closed']}/{b['no_answer']}/"
              f"{b['request_behind_answered']} of {b['cases']} |")
    if args.json:
        text = json.dumps(results, indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
