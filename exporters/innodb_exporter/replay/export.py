"""``innodb-replay export``: every raw sample of a time window, off a Prometheus, into a bundle.

Raw, not resampled: each chunk of the window is read with a range selector (``{selector}[600000ms]``
evaluated at the chunk's end), which returns the samples exactly as stored, at their original
timestamps. Chunks are sized to a number of samples, so memory stays bounded however long the window
and however many the series.
"""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from .bundle import BundleWriter, Manifest, series_key

DEFAULT_SELECTOR = '{job=~"innodb|mysqld|node|prometheus|alertmanager"}'


class ExportError(Exception):
    pass


class Prometheus:
    """The few Prometheus HTTP API calls export needs, with errors an operator can act on."""

    def __init__(self, url: str, timeout: float = 120):
        self.url = url.rstrip("/")
        self.timeout = timeout

    def get(self, path: str, **params) -> dict:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            try:
                detail = json.load(exc).get("error", exc.reason)
            except (ValueError, AttributeError):
                detail = exc.reason
            raise ExportError(f"Prometheus at {self.url} answered {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ExportError(f"cannot reach Prometheus at {self.url}: {reason}") from None
        if body.get("status") != "success":
            raise ExportError(f"Prometheus at {self.url}: {body.get('error', body)}")
        return body["data"]

    def raw(self, selector: str, start_ms: int, end_ms: int) -> list[dict]:
        """Every stored sample of the selector with a timestamp in [start, end] (both in ms).

        One millisecond wider than asked: Prometheus 2 closes a range at both ends, 3 opens it on the left.
        """
        query = f"{selector}[{end_ms - start_ms + 1}ms]"
        return self.get("/api/v1/query", query=query, time=f"{end_ms / 1000:.3f}")["result"]

    def metadata(self) -> dict[str, dict]:
        data = self.get("/api/v1/metadata")
        return {name: {"type": m[0].get("type", ""), "help": m[0].get("help", ""), "unit": m[0].get("unit", "")}
                for name, m in data.items() if m}


_RELATIVE_RE = re.compile(r"now(?:-(\d+)([smhdw]))?$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(text: str, now: float | None = None) -> int:
    """Milliseconds from ``now``, ``now-30m``, unix seconds, or an RFC 3339 time (``2026-11-21T06:40:00Z``)."""
    import datetime

    now = time.time() if now is None else now
    m = _RELATIVE_RE.fullmatch(text.strip())
    if m:
        offset = int(m.group(1)) * _UNITS[m.group(2)] if m.group(1) else 0
        return int((now - offset) * 1000)
    try:
        return int(float(text) * 1000)
    except ValueError:
        pass
    try:
        parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ExportError(f"cannot read the time {text!r}: use now, now-30m, unix seconds or 2026-11-21T06:40:00Z") from None
    if parsed.tzinfo is None:
        raise ExportError(f"the time {text!r} has no time zone: add Z or +02:00")
    return int(parsed.timestamp() * 1000)


class Progress:
    """A progress bar on a terminal; a line per tenth elsewhere (logs)."""

    def __init__(self, total: int, what: str, stream=sys.stderr):
        self.total, self.what, self.stream = max(total, 1), what, stream
        self.started = time.monotonic()
        self.tty = stream.isatty()
        self._last_tenth = -1

    def update(self, done: int, samples: int) -> None:
        share = min(1.0, done / self.total)
        rate = samples / max(time.monotonic() - self.started, 1e-9)
        if self.tty:
            bar = "#" * int(share * 30)
            self.stream.write(f"\r{self.what} [{bar:<30}] {share:4.0%}  {samples} samples  {rate:,.0f}/s")
            self.stream.flush()
        elif int(share * 10) > self._last_tenth:
            self._last_tenth = int(share * 10)
            self.stream.write(f"{self.what}: {share:.0%}, {samples} samples, {rate:,.0f} samples/s\n")

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")


@dataclass
class ExportResult:
    manifest: Manifest
    seconds: float


def export(url: str, start_ms: int, end_ms: int, out: str, selector: str = DEFAULT_SELECTOR,
           chunk_samples: int = 50_000, progress: bool = True) -> ExportResult:
    """Export the window in chunks of about ``chunk_samples`` samples: memory follows that, not the window."""
    if end_ms <= start_ms:
        raise ExportError("the window is empty: --end must be after --start")
    prometheus = Prometheus(url)
    metadata = prometheus.metadata()  # also proves Prometheus answers before anything is written
    started = time.monotonic()
    writer = BundleWriter(out, Manifest("export", prometheus.url, start_ms, end_ms, selector=selector))
    bar = Progress(end_ms - start_ms, "exporting") if progress else None
    span_ms = 60_000  # the first chunk measures the sample density; the next ones are sized from it
    try:
        chunk_start = start_ms
        while chunk_start <= end_ms:
            chunk_end = min(chunk_start + span_ms, end_ms)
            series = {}
            # The range is closed at both ends: a sample on a chunk boundary belongs to the earlier chunk.
            lower = chunk_start if chunk_start == start_ms else chunk_start + 1
            for result in prometheus.raw(selector, chunk_start, chunk_end):
                labels = dict(result["metric"])
                name = labels.pop("__name__", "")
                samples = [(round(float(ts) * 1000), value) for ts, value in result.get("values", [])]
                samples = [(ts, v) for ts, v in samples if lower <= ts <= chunk_end]
                if samples and name:
                    series[series_key(name, labels)] = samples
            written = writer.add_chunk(series, chunk_start, chunk_end)
            if bar:
                bar.update(chunk_end - start_ms, writer.manifest.samples)
            if chunk_end == end_ms:
                break
            density = written / max(chunk_end - chunk_start, 1)  # samples per ms
            span_ms = int(min(max(chunk_samples / density if density else span_ms * 4, 1000), 86_400_000))
            chunk_start = chunk_end
        if bar:
            bar.finish()
        if writer.manifest.samples == 0:
            raise ExportError(f"no samples match {selector} between {start_ms / 1000:.0f} and {end_ms / 1000:.0f} "
                              "(wrong window or selector?); nothing written")
        writer.add_metadata(metadata)
        manifest = writer.close()
    except BaseException:
        writer.abort()
        raise
    return ExportResult(manifest, time.monotonic() - started)
