"""``innodb-replay record``: scrape exporters into a bundle on a host where no Prometheus runs.

dim_STAT's offline collection: record on the customer's host, analyse at home. Each scrape's samples
get the labels Prometheus would give them (``job``, ``instance``, and ``up``), so the bundle imports
into a Prometheus that the stack's dashboards read unchanged. Ctrl-C (or ``--duration``) ends the
recording and seals the bundle.

With ``--texts`` and server credentials, the raw ``SHOW ENGINE INNODB STATUS`` and ``SHOW ENGINE INNODB
MUTEX`` texts are kept too, at a slower interval, the way pt-stalk does. Off by default: the status
text can hold query text. ``innodb-exporter parse BUNDLE`` reads them back.

A target URL may carry ``user:password@`` (or a user, with ``--target-password-file``): that becomes
HTTP basic auth and is never printed nor stored. A target that never answered makes the command fail.
"""

from __future__ import annotations

import datetime
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from innodb_bundle import limits
from innodb_bundle.bundle import BundleWriter, Manifest, format_value, series_key
from innodb_bundle.terminal import Progress, printable
from innodb_exporter.scraping.connection import ConnectionSettings, describe

from . import TOOL
from .endpoints import Endpoint, EndpointError

SCRAPE_BYTES = 64 * limits.MiB  # an exporter's answer (Prometheus' body_size_limit has no default)


class RecordError(Exception):
    pass


@dataclass(frozen=True)
class Target:
    job: str
    endpoint: Endpoint

    @property
    def url(self) -> str:
        return self.endpoint.url  # never with credentials

    @classmethod
    def parse(cls, text: str, password_file: str | None = None) -> "Target":
        job, sep, url = text.partition("=")
        if not sep or not job or not url.startswith(("http://", "https://")):
            raise RecordError(f"--target {printable(job or text, 40)}=…: expected JOB=URL, "
                              "e.g. innodb=http://127.0.0.1:9207/metrics")
        try:
            return cls(job, Endpoint.parse(url, password_file, "--target-password-file"))
        except EndpointError as exc:
            raise RecordError(f"--target {printable(job, 40)}: {exc}") from None


def scrape(target: Target, instance: str, timeout: float) -> tuple[list, dict, str | None]:
    """(samples as (name, labels, value), metadata, error) of one scrape, labelled as Prometheus would;
    error is None when the scrape succeeded."""
    started = time.monotonic()
    error = None
    try:
        text = target.endpoint.get(timeout, SCRAPE_BYTES).decode("utf-8", "replace")
        families = list(text_string_to_metric_families(text))
    except EndpointError as exc:
        families, error = [], str(exc)
    except ValueError as exc:  # the text format parser
        families, error = [], f"not the Prometheus text format: {exc}"
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
    samples.append(("up", dict(own), 0.0 if error else 1.0))
    samples.append(("scrape_duration_seconds", dict(own), time.monotonic() - started))
    return samples, metadata, error


@dataclass
class TargetHealth:
    """How a target's scrapes went; the last distinct error is printed once, not at every scrape."""

    answered: int = 0
    failed: int = 0
    last_error: str | None = field(default=None)

    def note(self, job: str, url: str, error: str | None) -> None:
        if error is None:
            self.answered += 1
            self.last_error = None
            return
        self.failed += 1
        if error != self.last_error:
            print(f"innodb-replay record: {printable(job, 40)} {url}: {printable(error)}", file=sys.stderr)
        self.last_error = error


@dataclass
class RecordResult:
    manifest: Manifest
    silent: dict[str, str]  # job -> why, for the targets of which no scrape succeeded
    left_out: int  # series import would refuse (a name or labels longer than limits.py allows)


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


NOTE_SECONDS = 600.0  # between the lines an open-ended recording prints


def record(targets: list[Target], instance: str, out: str, interval: float = 5.0,
           duration: float | None = None, texts: ConnectionSettings | None = None, texts_interval: float = 60.0,
           chunk_seconds: int = 600, chunk_samples: int = 50_000, stop: threading.Event | None = None) -> RecordResult:
    """Scrape until ``stop``, Ctrl-C, ``duration`` or the longest window import takes; a chunk every
    ``chunk_seconds`` or ``chunk_samples``, whichever comes first. RecordError, and no bundle, when no
    target ever answered."""
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
    now_ms = int(time.time() * 1000)
    writer = BundleWriter(out, Manifest("record", [f"{t.job}={t.url}" for t in targets], now_ms, now_ms, tool=TOOL,
                                        selector=f'{{instance="{instance}"}}'))
    health = {t.job: TargetHealth() for t in targets}
    buffer: dict = {}
    buffered = 0
    chunk_start = first = last = None
    next_texts = time.monotonic()
    bar = Progress(int(duration * 1000) if duration else 1, "recording") if duration else None
    ended = time.monotonic() + duration if duration else None
    next_note = time.monotonic() + NOTE_SECONDS  # until Ctrl-C: a line now and then says it still records
    try:
        while not stop.is_set():
            tick = time.monotonic()
            ts = int(time.time() * 1000)
            ts = ts if last is None else max(ts, last + 1)  # a clock set back must not reorder samples
            first = ts if first is None else first
            chunk_start = ts if chunk_start is None else chunk_start
            for target in targets:
                samples, metadata, error = scrape(target, instance, timeout=max(1.0, interval * 0.8))
                health[target.job].note(target.job, target.url, error)
                writer.add_metadata(metadata)
                for name, labels, value in samples:
                    buffer.setdefault(series_key(name, labels), []).append((ts, format_value(value)))
                buffered += len(samples)
            last = ts
            if texts is not None and tick >= next_texts:
                next_texts = tick + texts_interval
                try:
                    for suffix, text in fetch_texts(texts, timeout=max(1.0, interval)):
                        if not writer.add_text(f"{_stamp(ts)}-{suffix}", text):
                            print(f"innodb-replay record: texts: a {suffix} larger than {limits.TEXT_BYTES} bytes "
                                  "was left out", file=sys.stderr)
                except Exception as exc:  # a failed text is reported; the samples go on
                    print(f"innodb-replay record: texts: {describe(exc, texts)[1]}", file=sys.stderr)
            if ts - chunk_start >= chunk_seconds * 1000 or buffered >= chunk_samples:
                writer.add_chunk(buffer, chunk_start, ts)
                buffer, buffered, chunk_start = {}, 0, None
            if bar:
                bar.update(ts - first, writer.manifest.samples + buffered)
            elif tick >= next_note:
                next_note = tick + NOTE_SECONDS
                print(f"recording: {writer.manifest.samples + buffered} samples in {(ts - first) / 60000:.0f} min "
                      "(Ctrl-C ends it)", file=sys.stderr, flush=True)
            if ended is not None and time.monotonic() >= ended:
                break
            if ts - first + interval * 1000 > limits.WINDOW_MS:
                print(f"innodb-replay record: {limits.WINDOW_MS // limits.HOUR_MS} hours recorded, the longest "
                      "window import takes: the recording ends here", file=sys.stderr)
                break
            stop.wait(max(0.0, interval - (time.monotonic() - tick)))
        if bar:
            bar.finish()
        if first is None:
            raise RecordError("stopped before the first scrape; nothing written")
        silent = {job: h.last_error or "no answer" for job, h in health.items() if h.answered == 0}
        if len(silent) == len(targets):
            raise RecordError("no scrape of any target succeeded (" +
                              "; ".join(f"{printable(job, 40)}: {printable(why)}" for job, why in silent.items()) +
                              "); nothing written")
        if buffer:
            writer.add_chunk(buffer, chunk_start, last)
        writer.manifest.window_start_ms, writer.manifest.window_end_ms = first, last
        return RecordResult(writer.close(), silent, len(writer.left_out))
    except BaseException:
        writer.abort()
        raise
