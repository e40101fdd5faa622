"""``innodb-replay export``: every raw sample of a time window, off a Prometheus, into a bundle.

Raw, not resampled: each chunk of the window is read with a range selector (``{selector}[600000ms]``
evaluated at the chunk's end), which returns the samples exactly as stored, at their original
timestamps. Chunks are sized to a number of samples, so memory stays bounded however long the window
and however many the series.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import time
import urllib.parse
from dataclasses import dataclass

from innodb_bundle import limits
from innodb_bundle.bundle import BundleWriter, Manifest, series_key
from innodb_bundle.terminal import Progress
from innodb_exporter.capture.store import FILE_RE, ID_RE, MANIFEST as CAPTURE_MANIFEST

from . import TOOL
from .endpoints import Endpoint, EndpointError

DEFAULT_SELECTOR = '{job=~"innodb|mysqld|node|prometheus|alertmanager"}'


class ExportError(Exception):
    pass


class Prometheus:
    """The few Prometheus HTTP API calls export needs, with errors an operator can act on."""

    ANSWER_BYTES = 1 << 30

    def __init__(self, url: str, timeout: float = 120):
        try:
            self.endpoint = Endpoint.parse(url.rstrip("/"))
        except EndpointError as exc:
            raise ExportError(f"--prometheus: {exc}") from None
        self.url = self.endpoint.url  # without credentials: printed and stored in the bundle
        self.timeout = timeout

    def get(self, path: str, **params) -> dict:
        try:
            body = json.loads(self.endpoint.get(self.timeout, self.ANSWER_BYTES,
                                                f"{path}?{urllib.parse.urlencode(params, doseq=True)}"))
        except EndpointError as exc:
            if exc.body:
                try:
                    detail = json.loads(exc.body).get("error", exc)
                except (ValueError, AttributeError):
                    detail = exc
                raise ExportError(f"Prometheus at {self.url} answered {exc}: {detail}") from None
            raise ExportError(f"cannot reach Prometheus at {self.url}: {exc}") from None
        except ValueError as exc:
            raise ExportError(f"Prometheus at {self.url} answered something that is not JSON: {exc}") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            raise ExportError(f"Prometheus at {self.url}: {body.get('error', body) if isinstance(body, dict) else body}")
        return body["data"]

    def raw(self, selector: str, start_ms: int, end_ms: int) -> list[dict]:
        """Every stored sample of the selector with a timestamp in [start, end] (both in ms).

        One millisecond wider than asked: Prometheus 2 closes a range at both ends, 3 opens it on the left.
        """
        query = f"{selector}[{end_ms - start_ms + 1}ms]"
        return self.get("/api/v1/query", query=query, time=f"{end_ms / 1000:.3f}")["result"]

    def samples(self, selector: str, start_ms: int, end_ms: int, piece_ms: int = limits.HOUR_MS * 24) -> dict:
        """Every stored sample of the selector in [start, end], a day at a time: {labels: [(ms, value)]}, labels
        as a sorted tuple of (name, value) pairs without __name__."""
        out: dict[tuple, list[tuple[int, float]]] = {}
        low, first = start_ms, True
        while True:
            high = min(low + piece_ms, end_ms)
            for result in self.raw(selector, low, high):
                labels = tuple(sorted((k, v) for k, v in result["metric"].items() if k != "__name__"))
                kept = [(round(float(t) * 1000), float(v)) for t, v in result.get("values", [])]
                # A sample on a piece's boundary belongs to the earlier piece.
                out.setdefault(labels, []).extend((t, v) for t, v in kept if (low <= t if first else low < t) and t <= high)
            if high >= end_ms:
                break
            low, first = high, False
        return {labels: sorted(values) for labels, values in out.items() if values}

    def query_range(self, expr: str, start_s: float, end_s: float, step_s: float) -> list[dict]:
        """A range query in pieces of at most 10,000 steps (Prometheus answers at most 11,000 points a series),
        the pieces of each series joined: [{"metric": labels, "values": [(seconds, value)]}]."""
        out: dict[tuple, dict] = {}
        piece = step_s * 10_000
        low = start_s
        while low <= end_s:
            high = min(low + piece, end_s)
            for result in self.get("/api/v1/query_range", query=expr, start=f"{low:.3f}", end=f"{high:.3f}",
                                   step=f"{step_s:g}")["result"]:
                entry = out.setdefault(tuple(sorted(result["metric"].items())), {"metric": result["metric"],
                                                                                 "values": []})
                entry["values"] += [(float(t), float(v)) for t, v in result["values"]]
            low = high + step_s
        return list(out.values())

    def series(self, match: str, start_ms: int, end_ms: int) -> list[dict]:
        """The label sets of the series ``match`` selects in the window."""
        return self.get("/api/v1/series", **{"match[]": match, "start": f"{start_ms / 1000:.3f}",
                                             "end": f"{end_ms / 1000:.3f}"})

    def names(self, start_ms: int, end_ms: int) -> set[str]:
        """The metric names with samples in the window."""
        return set(self.get("/api/v1/label/__name__/values", start=f"{start_ms / 1000:.3f}",
                            end=f"{end_ms / 1000:.3f}"))

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
        seconds = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds) or not 0 <= seconds < 1e11:  # float() reads inf and nan too
            raise ExportError(f"the time {text!r} is not a time")
        return int(seconds * 1000)
    try:
        parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ExportError(f"cannot read the time {text!r}: use now, now-30m, unix seconds or 2026-11-21T06:40:00Z") from None
    if parsed.tzinfo is None:
        raise ExportError(f"the time {text!r} has no time zone: add Z or +02:00")
    return int(parsed.timestamp() * 1000)


@dataclass
class ExportResult:
    manifest: Manifest
    seconds: float
    left_out: int  # series import would refuse (a name or labels longer than limits.py allows)
    captures: int = 0  # evidence captures of the window kept as texts
    captures_gone: int = 0  # listed, then removed by the exporter (its byte budget) before they were read


def list_captures(exporter: Endpoint, start_ms: int, end_ms: int) -> list[tuple[str, list[str]]]:
    """The exporter's evidence captures that started in the window, as (id, files): read and checked before
    any sample is exported, so that a wrong --captures fails at once."""
    where = f"--captures {exporter.url}"
    try:
        listing = json.loads(exporter.get(30, limits.MANIFEST_BYTES, "/api/captures"))
    except EndpointError as exc:
        raise ExportError(f"{where}: {exc}") from None
    except (ValueError, RecursionError):
        raise ExportError(f"{where}: /api/captures answered no JSON (is it this exporter?)") from None
    captures = listing.get("captures") if isinstance(listing, dict) else None
    if not isinstance(captures, list) or not all(isinstance(c, dict) for c in captures):
        raise ExportError(f"{where}: /api/captures is not the exporter's list of captures")
    chosen = []
    for capture in captures:
        started = _parse_iso_ms(capture.get("started", ""))
        if started is None or not start_ms <= started <= end_ms:
            continue
        capture_id, snapshots = capture.get("id"), capture.get("snapshots")
        try:
            names = [f for snapshot in snapshots for f in snapshot["files"]]
        except (TypeError, KeyError):
            names = None
        # Names become members of the bundle and paths on the exporter: only what an exporter writes.
        if not (isinstance(capture_id, str) and ID_RE.match(capture_id)) or names is None \
                or not all(isinstance(n, str) and FILE_RE.match(n) for n in names):
            raise ExportError(f"{where}: a capture whose id or file names no exporter gives")
        chosen.append((capture_id, names + [CAPTURE_MANIFEST]))
    return chosen


def add_captures(writer: BundleWriter, exporter: Endpoint, chosen: list[tuple[str, list[str]]]) -> tuple[int, int]:
    """Each file of the chosen captures, a text of the bundle named ``<capture id>-<file>`` (``innodb-exporter
    parse BUNDLE`` reads their status texts). Returns (kept, gone): a capture the exporter removed since
    the listing is left out."""
    kept = gone = 0
    for capture_id, texts in capture_texts(exporter, chosen):
        if texts is None:
            gone += 1
            continue
        for name, data in texts:
            if not writer.add_text(f"{capture_id}-{name}", data):
                raise ExportError(f"capture {capture_id}: {name} is larger than import takes")
        kept += 1
    return kept, gone


def capture_texts(exporter: Endpoint, chosen: list[tuple[str, list[str]]]):
    """(capture id, [(file, text)]) of each chosen capture, read off the exporter; None for the files of one it
    removed since the listing."""
    for capture_id, names in chosen:
        texts = []
        try:
            for name in names:
                texts.append((name, exporter.get(30, limits.TEXT_BYTES, f"/captures/{capture_id}/{name}")
                              .decode("utf-8", "replace")))
        except EndpointError as exc:
            if exc.status == 404:
                yield capture_id, None
                continue
            raise ExportError(f"--captures {exporter.url}: capture {capture_id}: {exc}") from None
        yield capture_id, texts


def _parse_iso_ms(text: str) -> int | None:
    try:
        return int(datetime.datetime.fromisoformat(text).timestamp() * 1000)
    except (TypeError, ValueError):
        return None


def export(url: str, start_ms: int, end_ms: int, out: str, selector: str = DEFAULT_SELECTOR,
           chunk_samples: int = 50_000, progress: bool = True, captures: Endpoint | None = None) -> ExportResult:
    """Export the window in chunks of about ``chunk_samples`` samples: memory follows that, not the window."""
    if end_ms <= start_ms:
        raise ExportError("the window is empty: --end must be after --start")
    if end_ms - start_ms > limits.WINDOW_MS:
        raise ExportError(f"the window is longer than import takes ({limits.WINDOW_MS // limits.HOUR_MS} hours): "
                          "export it in parts")
    prometheus = Prometheus(url)
    metadata = prometheus.metadata()  # also proves Prometheus answers before anything is written
    chosen = list_captures(captures, start_ms, end_ms) if captures is not None else []
    started = time.monotonic()
    writer = BundleWriter(out, Manifest("export", prometheus.url, start_ms, end_ms, selector=selector, tool=TOOL))
    bar = Progress(end_ms - start_ms, "exporting") if progress else None
    span_ms = 60_000  # the first chunk measures the sample density; the next ones are sized from it
    data_start = None  # where the first chunk with samples began
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
            if written and data_start is None:
                data_start = chunk_start
            # Samples per ms, the higher of two measures, each of which reads low in one case: the last chunk
            # alone (it may fall between two scrapes) and all chunks since the data began (a gap in it).
            density = max(written / (chunk_end - chunk_start),
                          writer.manifest.samples / (chunk_end - data_start) if data_start is not None else 0)
            span_ms = int(min(max(chunk_samples / density if density else span_ms * 4, 1000), limits.CHUNK_SPAN_MS))
            chunk_start = chunk_end
        if bar:
            bar.finish()
        if writer.manifest.samples == 0:
            raise ExportError(f"no samples match {selector} between {start_ms / 1000:.0f} and {end_ms / 1000:.0f} "
                              "(wrong window or selector?); nothing written")
        writer.add_metadata(metadata)
        kept, gone = add_captures(writer, captures, chosen) if captures is not None else (0, 0)
        manifest = writer.close()
    except BaseException:
        writer.abort()
        raise
    return ExportResult(manifest, time.monotonic() - started, len(writer.left_out), kept, gone)
