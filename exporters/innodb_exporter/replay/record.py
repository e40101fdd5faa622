"""``innodb-replay record``: scrape exporters into a bundle on a host where no Prometheus runs.

dim_STAT's offline collection: record on the customer's host, analyse at home. Each scrape's samples
get the labels Prometheus would give them (``job``, ``instance``, and ``up``), so the bundle imports
into a Prometheus that the stack's dashboards read unchanged. Ctrl-C (or ``--duration``) ends the
recording and seals the bundle.

With ``--texts`` and server credentials, the raw ``SHOW ENGINE INNODB STATUS`` and ``SHOW ENGINE INNODB
MUTEX`` texts are kept too, at a slower interval, the way pt-stalk does. Off by default: the status
text can hold query text. ``innodb-exporter parse BUNDLE`` reads them back.
"""

from __future__ import annotations

import datetime
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from ..connection import ConnectionSettings, describe
from .bundle import BundleWriter, Manifest, format_value, series_key
from .export import Progress


class RecordError(Exception):
    pass


@dataclass(frozen=True)
class Target:
    job: str
    url: str

    @classmethod
    def parse(cls, text: str) -> "Target":
        job, sep, url = text.partition("=")
        if not sep or not job or not url.startswith(("http://", "https://")):
            raise RecordError(f"--target {text!r}: expected JOB=URL, e.g. innodb=http://127.0.0.1:9207/metrics")
        return cls(job, url)


def scrape(target: Target, instance: str, timeout: float) -> tuple[list, dict, bool]:
    """(samples as (name, labels, value), metadata, up) of one scrape, labelled as Prometheus would."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(target.url, timeout=timeout) as response:
            text = response.read().decode("utf-8", "replace")
        families = list(text_string_to_metric_families(text))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"innodb-replay record: {target.job} {target.url}: {getattr(exc, 'reason', exc)}", file=sys.stderr)
        families, ok = [], False
    else:
        ok = True
    own = {"job": target.job, "instance": instance}
    samples, metadata = [], {}
    for family in families:
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            # As at a Prometheus scrape: an empty label is no label, and the target's own labels win.
            labels = {(f"exported_{k}" if k in own else k): v for k, v in sample.labels.items() if v != ""}
            labels.update(own)
            samples.append((sample.name, labels, sample.value))
            metadata.setdefault(sample.name, {"type": family.type, "help": family.documentation,
                                              "unit": family.unit or ""})
    samples.append(("up", dict(own), 1.0 if ok else 0.0))
    samples.append(("scrape_duration_seconds", dict(own), time.monotonic() - started))
    return samples, metadata, ok


def fetch_texts(settings: ConnectionSettings, timeout: float) -> list[tuple[str, str]]:
    """The raw status and mutex texts, as (suffix, text)."""
    conn = settings.connect(read_timeout=timeout, connect_timeout=timeout)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW ENGINE INNODB STATUS")
            status = cur.fetchone()[2]
            cur.execute("SHOW ENGINE INNODB MUTEX")
            mutex = "\n".join("\t".join(str(c) for c in row) for row in cur.fetchall())
    finally:
        conn.close()
    return [("engine-innodb-status.txt", status if isinstance(status, str) else status.decode()),
            ("engine-innodb-mutex.tsv", "Type\tName\tStatus\n" + mutex + "\n")]


def _stamp(ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H-%M-%S.") + f"{ms % 1000:03d}Z"


def record(targets: list[Target], instance: str, out: str, interval: float = 5.0,
           duration: float | None = None, texts: ConnectionSettings | None = None, texts_interval: float = 60.0,
           chunk_seconds: int = 600, stop: threading.Event | None = None) -> Manifest:
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
    now_ms = int(time.time() * 1000)
    writer = BundleWriter(out, Manifest("record", [f"{t.job}={t.url}" for t in targets], now_ms, now_ms,
                                        selector=f'{{instance="{instance}"}}'))
    buffer: dict = {}
    chunk_start = first = last = None
    next_texts = time.monotonic()
    bar = Progress(int(duration * 1000) if duration else 1, "recording") if duration else None
    ended = time.monotonic() + duration if duration else None
    try:
        while not stop.is_set():
            tick = time.monotonic()
            ts = int(time.time() * 1000)
            first = ts if first is None else first
            chunk_start = ts if chunk_start is None else chunk_start
            for target in targets:
                samples, metadata, _ = scrape(target, instance, timeout=max(1.0, interval * 0.8))
                writer.add_metadata(metadata)
                for name, labels, value in samples:
                    buffer.setdefault(series_key(name, labels), []).append((ts, format_value(value)))
            last = ts
            if texts is not None and tick >= next_texts:
                next_texts = tick + texts_interval
                try:
                    for suffix, text in fetch_texts(texts, timeout=max(1.0, interval)):
                        writer.add_text(f"{_stamp(ts)}-{suffix}", text)
                except Exception as exc:  # a failed text is reported; the samples go on
                    print(f"innodb-replay record: texts: {describe(exc, texts)[1]}", file=sys.stderr)
            if ts - chunk_start >= chunk_seconds * 1000:
                writer.add_chunk(buffer, chunk_start, ts)
                buffer, chunk_start = {}, None
            if bar:
                bar.update(ts - first, writer.manifest.samples + sum(len(v) for v in buffer.values()))
            if ended is not None and time.monotonic() >= ended:
                break
            stop.wait(max(0.0, interval - (time.monotonic() - tick)))
        if bar:
            bar.finish()
        if first is None:
            raise RecordError("stopped before the first scrape; nothing written")
        if buffer:
            writer.add_chunk(buffer, chunk_start, last)
        writer.manifest.window_start_ms, writer.manifest.window_end_ms = first, last
        return writer.close()
    except BaseException:
        writer.abort()
        raise
