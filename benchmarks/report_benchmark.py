"""The post-incident report of a 24-hour bundle of one server: build time, peak memory and the report's size.

    python benchmarks/report_benchmark.py [--hours 24] [--keep DIR]

A synthetic bundle is written first, with the real writer and the shape of a real export of one server:
the InnoDB exporter's series of MariaDB 10.11 (the golden exposition of tests/golden/servers/, with the
stack's job and instance labels) every 5 s, and mysqld_exporter, node_exporter and Prometheus series every
15 s, about 2,300 series in all (as the README's export of one server holds). Its day holds an incident: a
transaction held open for two hours under writes (the history list grows, purge stalls), then a write
burst that takes checkpoint age past 90 % of its limit, and a settings change after it; the capture the
history page took is in the bundle as texts, as ``export --captures`` keeps it. The bundle carries no ALERTS
and no recording rule's series, as an export with the default selector, so the report computes the classes
and the alerts itself: the slowest path.

Then ``innodb-replay report BUNDLE --out FILE`` runs as an operator runs it, and the benchmark prints its
wall time, the peak resident memory of its largest process (promtool and the scratch Prometheus
included) and the size of the HTML file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "exporters")]

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from innodb_bundle.bundle import BundleWriter, Manifest, series_key  # noqa: E402

INSTANCE = "db1:3306"
GOLDEN = os.path.join(ROOT, "tests", "golden", "servers", "mariadb-10.11.19.prom")
STATUS_TEXT = os.path.join(ROOT, "tests", "fixtures", "innodb_status", "mariadb-10.11.19.txt")
HOUR = 3600
MAX_AGE = 1_073_741_824.0  # the max checkpoint age of a 1 GiB REDO log, about


class Day:
    """The incident's shape over the window: what each key series does at a second ``t`` from the start."""

    def __init__(self, hours: float):
        self.span = hours * HOUR
        # The held transaction and the write burst, placed at the same share of any window.
        self.held = (0.38 * self.span, 0.47 * self.span)
        self.burst = (0.62 * self.span, 0.64 * self.span)
        self.change = 0.66 * self.span  # innodb_log_file_size raised after the burst

    def oldest(self, t: float) -> float:
        start, end = self.held
        return t - start if start <= t < end else 1 + (t % 7)

    def history(self, t: float) -> float:
        start, end = self.held
        if start <= t < end:
            return 2_000 + 400 * (t - start)  # 400 undo log records a second that purge cannot remove
        if end <= t < end + 1800:  # purge catches up in half an hour
            return 2_000 + 400 * (end - start) * (1 - (t - end) / 1800)
        return 2_000 + 500 * math.sin(t / 900)

    def age_ratio(self, t: float) -> float:
        start, end = self.burst
        if start <= t < end:
            return 0.93 if (t - start) > 0.3 * (end - start) else 0.8
        scale = 0.25 if t >= self.change else 1.0  # a REDO log four times as large after the change
        return scale * (0.30 + 0.05 * math.sin(t / 600))

    def writes_pending(self, t: float) -> float:
        start, end = self.burst
        return 14.0 if start <= t < end else 0.0

    def purging(self, t: float) -> bool:
        start, end = self.held
        return not start <= t < end


def golden_series() -> list[tuple[str, dict, str]]:
    """(name, labels, type) of every series of a real scrape of MariaDB 10.11 by the InnoDB exporter."""
    with open(GOLDEN, encoding="utf-8") as f:
        families = list(text_string_to_metric_families(f.read()))
    return [(s.name, dict(s.labels), family.type) for family in families for s in family.samples
            if not s.name.endswith("_created")]


def other_series() -> list[tuple[str, str, dict, str]]:
    """(job, name, labels, type): mysqld_exporter's, node_exporter's and Prometheus' own, as many as one
    server's export holds."""
    out = [("mysqld", "mysql_global_status_queries", {}, "counter")]
    out += [("mysqld", f"mysql_global_status_bench_{n}", {}, "counter" if n % 3 else "gauge") for n in range(520)]
    out += [("mysqld", f"mysql_global_variables_bench_{n}", {}, "gauge") for n in range(560)]
    modes = ("idle", "iowait", "user", "system", "nice", "irq", "softirq", "steal")
    out += [("node", "node_cpu_seconds_total", {"cpu": str(c), "mode": m}, "counter") for c in range(2) for m in modes]
    for device in ("sda", "sdb"):
        for name in ("node_disk_reads_completed_total", "node_disk_writes_completed_total",
                     "node_disk_read_bytes_total", "node_disk_written_bytes_total", "node_disk_read_time_seconds_total",
                     "node_disk_write_time_seconds_total", "node_disk_io_time_seconds_total",
                     "node_disk_flush_requests_total", "node_disk_flush_requests_time_seconds_total"):
            out.append(("node", name, {"device": device}, "counter"))
    out += [("node", f"node_bench_{n}", {}, "gauge") for n in range(380)]
    out += [("prometheus", f"prometheus_bench_{n}", {}, "counter" if n % 2 else "gauge") for n in range(620)]
    return out


def _times(low: int, high: int, step: int, first_chunk: bool) -> range:
    """The scrape times of a chunk (low, high]: a sample on a boundary belongs to the earlier chunk."""
    begin = low if first_chunk else low + 1
    return range(begin + (-begin % step), high + 1, step)


def _fmt(value: float) -> str:
    return repr(float(value))


def build_bundle(path: str, hours: float, end_s: int, chunk_seconds: int = 150) -> dict:
    """Write the synthetic bundle; returns its counts."""
    day = Day(hours)
    start_s = end_s - int(hours * HOUR)
    rng = random.Random(11)
    innodb = golden_series()
    others = other_series()
    writer = BundleWriter(path, Manifest("export", "http://prometheus.bench:9090", start_s * 1000, end_s * 1000,
                                         selector='{job=~"innodb|mysqld|node|prometheus|alertmanager"}',
                                         tool="report_benchmark"))
    # Counters carry on from chunk to chunk; each series has its own pace.
    totals: dict[tuple, float] = {}
    paces = {}
    for name, labels, kind in innodb:
        paces[("innodb", name, tuple(sorted(labels.items())))] = rng.uniform(0.5, 50)
    for job, name, labels, kind in others:
        paces[(job, name, tuple(sorted(labels.items())))] = rng.uniform(0.5, 50)
    held_for = 3900  # the history page fired an hour and five minutes into the hold
    capture_at = day.held[0] + held_for
    try:
        low = start_s
        while low < end_s:
            high = min(low + chunk_seconds, end_s)
            series: dict = {}
            for step, rows in ((5, [("innodb", n, lab, k) for n, lab, k in innodb]), (15, others)):
                times = _times(low, high, step, low == start_s)
                for row_job, name, labels, kind in rows:
                    key = (row_job, name, tuple(sorted(labels.items())))
                    full = {**labels, "job": row_job, "instance": INSTANCE}
                    series[series_key(name, full)] = [(t * 1000, _value(day, key, kind, t - start_s, totals, paces))
                                                      for t in times]
            for job, step in (("innodb", 5), ("mysqld", 15), ("node", 15), ("prometheus", 15)):
                series[series_key("up", {"job": job, "instance": INSTANCE})] = [
                    (t * 1000, "1.0") for t in _times(low, high, step, low == start_s)]
            # The exporter's mark of the capture, from the capture on; the tuning loop's mark of the change.
            mark = [(t * 1000, _fmt(start_s + capture_at)) for t in _times(low, high, 5, low == start_s)
                    if t - start_s >= capture_at]
            if mark:
                series[series_key("innodb_exporter_last_capture_timestamp_seconds",
                                  {"job": "innodb", "instance": INSTANCE})] = mark
            change = [(t * 1000, _fmt(start_s + day.change)) for t in _times(low, high, 15, low == start_s)
                      if t - start_s >= day.change]
            if change:
                series[series_key("innodb_setting_last_change_timestamp_seconds",
                                  {"job": "innodb", "instance": INSTANCE, "setting": "innodb_log_file_size",
                                   "from": "268435456", "to": "1073741824", "restart": "1"})] = change
            writer.add_chunk(series, low * 1000, high * 1000)
            low = high
        writer.add_metadata({})
        _add_capture(writer, start_s + capture_at, held_for)
        manifest = writer.close()
    except BaseException:
        writer.abort()
        raise
    return {"series": manifest.series, "samples": manifest.samples, "chunks": len(manifest.chunks)}


def _value(day: Day, key: tuple, kind: str, t: float, totals: dict, paces: dict) -> str:
    job, name, labels = key
    if job == "innodb":
        special = _innodb(day, name, dict(labels), t, totals, paces[key])
        if special is not None:
            return special
    if job == "node" and name == "node_cpu_seconds_total":
        share = {"idle": 0.55, "user": 0.3, "system": 0.1, "iowait": 0.05}.get(dict(labels)["mode"], 0.0)
        return _fmt(_count(totals, key, share * 15, t))
    if job == "node" and name.startswith("node_disk_"):  # 20 requests per scrape, 0.4 ms each, 2 % busy
        per_scrape = {"node_disk_io_time_seconds_total": 0.3}.get(name, 0.008 if "time_seconds" in name else 20)
        return _fmt(_count(totals, key, per_scrape, t))
    if kind == "counter":
        return _fmt(_count(totals, key, paces[key], t))
    return _fmt(round(paces[key] * 100 + 5 * math.sin(t / 300 + paces[key]), 3))


def _count(totals: dict, key, increment: float, t: float) -> float:
    """A counter that grows by ``increment`` at each sample (its value at ``t`` is asked once, in order)."""
    totals[key] = totals.get(key, 0.0) + increment
    return round(totals[key], 3)


def _innodb(day: Day, name: str, labels: dict, t: float, totals: dict, pace: float) -> str | None:
    key = ("innodb", name, tuple(sorted(labels.items())))
    max_age = MAX_AGE * (4 if t >= day.change else 1)
    if name == "innodb_up":
        return "1.0"
    if name == "innodb_checkpoint_age_bytes":
        return _fmt(round(day.age_ratio(t) * max_age))
    if name in ("innodb_checkpoint_age_max_bytes", "innodb_checkpoint_age_sync_bytes"):
        return _fmt(max_age)
    if name == "innodb_checkpoint_age_async_bytes":
        return _fmt(round(max_age * 7 / 8))
    if name in ("innodb_redo_flush_age_bytes", "innodb_redo_modified_age_bytes"):
        return _fmt(round(day.age_ratio(t) * max_age * 0.9))
    if name == "innodb_history_list_length":
        return _fmt(round(day.history(t)))
    if name == "innodb_oldest_transaction_seconds":
        return _fmt(round(day.oldest(t)))
    if name == "innodb_purge_undo_log_pages_total":
        return _fmt(_count(totals, key, 40 if day.purging(t) else 0, t))
    if name == "innodb_buffer_pool_pending_writes":
        return _fmt(day.writes_pending(t) if labels.get("kind") == "flush_list" else 0.0)
    if name == "innodb_redo_written_bytes_total":
        start, end = day.burst
        return _fmt(_count(totals, key, 5e7 if start <= t < end else 4e6, t))
    if name in ("innodb_free_page_waits_total", "innodb_buffer_pool_pending_reads", "innodb_lock_waiting_transactions",
                "innodb_redo_log_waits_total", "innodb_purge_dml_delay_seconds", "innodb_flush_sync_waits_total",
                "innodb_lru_get_free_loops_total"):
        return "0.0"
    if name == "innodb_flush_avg_seconds":
        return "0.05"
    if name == "innodb_active_transactions":
        return "9.0"
    if name == "innodb_latch_wait_seconds_total":
        return _fmt(_count(totals, key, 0.001 * pace, t))
    return None


def _add_capture(writer: BundleWriter, at_s: float, held_for: int) -> None:
    """The capture of the history page, as ``export --captures`` keeps it: the capture's description and two
    snapshots of the status text (a real MariaDB 10.11 one) and of INNODB_TRX, the held transaction first."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(at_s)) + ".000Z"
    capture_id = f"{stamp}-{INSTANCE.replace(':', '_')}"
    iso = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(at_s))
    with open(STATUS_TEXT, encoding="utf-8") as f:
        status = f.read()
    held_since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at_s - held_for))
    files = []
    for number in (1, 2):
        trx = ("trx_id\tstate\tstarted\tage_seconds\tthread_id\toperation_state\ttables_locked\tlock_structs\t"
               "rows_locked\trows_modified\tisolation_level\tquery\n"
               f"421337\tRUNNING\t{held_since}\t{held_for + 10 * (number - 1)}\t4242\t\t0\t2\t0\t1\tREPEATABLE READ\t\n"
               f"421990\tRUNNING\t{iso[:19].replace('T', ' ')}\t0\t4300\t\t1\t3\t1\t1\tREPEATABLE READ\t"
               "<64 bytes, sha256 1f2e3d4c5b6a7980>\n")
        for name, text in ((f"{number}-engine-innodb-status.txt", status), (f"{number}-innodb-trx.tsv", trx)):
            writer.add_text(f"{capture_id}-{name}", text)
            files.append(name)
    manifest = {"id": capture_id, "instance": INSTANCE, "server": INSTANCE, "started": iso,
                "alerts": [{"labels": {"alertname": "InnoDBHistoryListGrowing", "instance": INSTANCE,
                                       "job": "innodb", "severity": "warning"}, "startsAt": iso}],
                "query_text": False, "snapshots": [{"number": n, "at": iso, "files": [f for f in files
                                                                                       if f.startswith(f"{n}-")]}
                                                   for n in (1, 2)],
                "errors": [], "truncated": False, "finished": iso}
    writer.add_text(f"{capture_id}-capture.json", json.dumps(manifest, indent=1))


def run_measured(cmd: list[str], env=None) -> tuple[float, float, str, str]:
    """(seconds, peak RSS in MB of the largest process, stdout, stderr) of a command."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {stderr[-3000:]}")
        return seconds, usage.ru_maxrss / 1024, stdout, stderr


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hours", type=float, default=24.0, help="the bundle's window (default 24)")
    p.add_argument("--keep", metavar="DIR", help="keep the bundle and the report in DIR")
    args = p.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="report-bench-")
    os.makedirs(work, exist_ok=True)
    try:
        bundle = os.path.join(work, "day.zip")
        end_s = (int(time.time()) // HOUR - 48) * HOUR  # two days ago, on the hour
        started = time.monotonic()
        counts = build_bundle(bundle, args.hours, end_s)
        print(f"bundle: {counts['samples']} samples of {counts['series']} series in {counts['chunks']} chunks "
              f"over {args.hours:g} hours, {os.path.getsize(bundle) / 1e6:.0f} MB (written in "
              f"{time.monotonic() - started:.0f} s)")
        report = os.path.join(work, "report.html")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
        seconds, peak, _, stderr = run_measured([sys.executable, "-m", "innodb_replay.cli", "report", bundle,
                                                 f"--out={report}"], env)
        print(f"report: {seconds:.1f} s, peak RSS {peak:.0f} MB (the largest of innodb-replay, promtool and the "
              f"scratch Prometheus), {os.path.getsize(report) / 1e6:.2f} MB of HTML")
        print("its progress:\n" + "".join(f"  {line}\n" for line in stderr.splitlines()))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
