"""The replay bundle: one portable file with every raw sample of a time window.

A ZIP archive (readable anywhere, compressed member by member):

    manifest.json          format, tool version, kind (export / record), source, window, counts, and
                           the SHA-256 of every other member: written last, so a cut file has none
    metadata.json          type and help per metric name, as the source knew them
    samples/000001.om      OpenMetrics text, one member per time chunk, each series in time order,
                           every sample with its original timestamp; the input of
                           `promtool tsdb create-blocks-from openmetrics`
    texts/…                raw SHOW ENGINE INNODB STATUS / MUTEX texts (record, when asked)

The writer streams: it never holds more than one chunk, and writes to ``<path>.partial``, renamed only
when the manifest is in, so a failure never leaves a file that looks complete.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import zipfile
from dataclasses import dataclass, field

from .. import __version__

FORMAT = "innodb-replay/1"
MANIFEST = "manifest.json"
METADATA = "metadata.json"


class BundleError(Exception):
    """A bundle that cannot be trusted: truncated, corrupt, or not a bundle."""


def format_value(value: float | str) -> str:
    """A sample value as OpenMetrics writes it; strings from the Prometheus API pass through unchanged."""
    if isinstance(value, str):
        return value
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def series_text(name: str, labels: tuple[tuple[str, str], ...]) -> str:
    if not labels:
        return name
    return name + "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}"


SeriesKey = tuple  # (name, ((label, value), ...)) with labels sorted


def series_key(name: str, labels: dict[str, str]) -> SeriesKey:
    return name, tuple(sorted(labels.items()))


def openmetrics_chunk(series: dict[SeriesKey, list[tuple[int, str]]]) -> bytes:
    """OpenMetrics text for a chunk: families grouped, each series' samples sorted by time (ms)."""
    by_name: dict[str, list[SeriesKey]] = {}
    for key in series:
        by_name.setdefault(key[0], []).append(key)
    lines = []
    for name in sorted(by_name):
        # "unknown" keeps promtool from applying counter or histogram naming rules; the real type is
        # in metadata.json.
        lines.append(f"# TYPE {name} unknown")
        for key in sorted(by_name[name]):
            prefix = series_text(*key)
            for ts, value in sorted(series[key]):
                lines.append(f"{prefix} {value} {ts // 1000}.{ts % 1000:03d}")
    lines.append("# EOF")
    return ("\n".join(lines) + "\n").encode()


@dataclass
class Manifest:
    kind: str  # "export" or "record"
    source: object  # a Prometheus URL, or the scraped URLs
    window_start_ms: int
    window_end_ms: int
    selector: str = ""
    series: int = 0
    samples: int = 0
    chunks: list[dict] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # member -> sha256
    tool: str = f"innodb-replay {__version__}"
    created: str = ""

    def to_json(self) -> dict:
        return {"format": FORMAT, "tool": self.tool, "kind": self.kind, "source": self.source,
                "selector": self.selector, "created": self.created,
                "window": {"start_ms": self.window_start_ms, "end_ms": self.window_end_ms,
                           "start": _iso(self.window_start_ms), "end": _iso(self.window_end_ms)},
                "series": self.series, "samples": self.samples, "chunks": self.chunks, "files": self.files}

    @classmethod
    def from_json(cls, data: dict) -> "Manifest":
        if data.get("format") != FORMAT:
            raise BundleError(f"unknown bundle format {data.get('format')!r} (this tool reads {FORMAT})")
        try:
            window = data["window"]
            return cls(kind=data["kind"], source=data["source"], window_start_ms=int(window["start_ms"]),
                       window_end_ms=int(window["end_ms"]), selector=data.get("selector", ""),
                       series=int(data["series"]), samples=int(data["samples"]), chunks=list(data["chunks"]),
                       files=dict(data["files"]), tool=data.get("tool", ""), created=data.get("created", ""))
        except (KeyError, TypeError, ValueError) as exc:
            raise BundleError(f"the manifest is incomplete: {exc}") from exc


def _iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds")


class BundleWriter:
    """Write a bundle chunk by chunk; ``close()`` seals it, ``abort()`` removes the partial file."""

    def __init__(self, path: str, manifest: Manifest):
        self.path = path
        self.partial = path + ".partial"
        self.manifest = manifest
        self._zip = zipfile.ZipFile(self.partial, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True)
        self._series: set[SeriesKey] = set()
        self._metadata: dict[str, dict] = {}

    def add_chunk(self, series: dict[SeriesKey, list[tuple[int, str]]], start_ms: int, end_ms: int) -> int:
        """Write one chunk of samples; returns how many samples it held."""
        samples = sum(len(v) for v in series.values())
        if not samples:
            return 0
        name = f"samples/{len(self.manifest.chunks) + 1:06d}.om"
        data = openmetrics_chunk(series)
        self._zip.writestr(name, data)
        self._series.update(series)
        self.manifest.chunks.append({"name": name, "start_ms": start_ms, "end_ms": end_ms,
                                     "series": len(series), "samples": samples})
        self.manifest.files[name] = hashlib.sha256(data).hexdigest()
        self.manifest.samples += samples
        return samples

    def add_metadata(self, metadata: dict[str, dict]) -> None:
        self._metadata.update(metadata)

    def add_text(self, name: str, text: str) -> None:
        data = text.encode()
        member = f"texts/{name}"
        self._zip.writestr(member, data)
        self.manifest.files[member] = hashlib.sha256(data).hexdigest()

    def close(self) -> Manifest:
        names = {key[0] for key in self._series}
        metadata = json.dumps({n: m for n, m in sorted(self._metadata.items()) if n in names}, indent=1).encode()
        self._zip.writestr(METADATA, metadata)
        self.manifest.files[METADATA] = hashlib.sha256(metadata).hexdigest()
        self.manifest.series = len(self._series)
        self.manifest.created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        self._zip.writestr(MANIFEST, json.dumps(self.manifest.to_json(), indent=1))
        self._zip.close()
        os.replace(self.partial, self.path)
        return self.manifest

    def abort(self) -> None:
        try:
            self._zip.close()
        finally:
            if os.path.exists(self.partial):
                os.remove(self.partial)


class BundleReader:
    def __init__(self, path: str):
        self.path = path
        try:
            self._zip = zipfile.ZipFile(path)
        except FileNotFoundError:
            raise BundleError(f"{path}: no such file") from None
        except (zipfile.BadZipFile, OSError) as exc:
            raise BundleError(f"{path} is not a complete bundle (truncated or not a bundle): {exc}") from None
        try:
            self.manifest = Manifest.from_json(json.loads(self._zip.read(MANIFEST)))
        except KeyError:
            raise BundleError(f"{path} has no manifest: it was not finished (interrupted export?)") from None
        except (json.JSONDecodeError, zipfile.BadZipFile, OSError) as exc:
            raise BundleError(f"{path}: the manifest cannot be read: {exc}") from None

    def verify(self) -> Manifest:
        """Check every member against the manifest's checksums; raise BundleError on any mismatch."""
        members = set(self._zip.namelist()) - {MANIFEST}
        missing = sorted(set(self.manifest.files) - members)
        if missing:
            raise BundleError(f"{self.path} lacks {', '.join(missing)} listed in its manifest")
        extra = sorted(members - set(self.manifest.files))
        if extra:
            raise BundleError(f"{self.path} holds members its manifest does not list: {', '.join(extra)}")
        for member, expected in self.manifest.files.items():
            digest = hashlib.sha256()
            try:
                with self._zip.open(member) as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        digest.update(block)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise BundleError(f"{self.path}: {member} cannot be read: {exc}") from None
            if digest.hexdigest() != expected:
                raise BundleError(f"{self.path}: checksum mismatch in {member} (the bundle was altered or damaged)")
        counted = sum(int(c["samples"]) for c in self.manifest.chunks)
        if counted != self.manifest.samples:
            raise BundleError(f"{self.path}: the manifest counts {self.manifest.samples} samples but its chunks {counted}")
        return self.manifest

    def chunk(self, name: str) -> bytes:
        return self._zip.read(name)

    def metadata(self) -> dict:
        return json.loads(self._zip.read(METADATA))

    def texts(self) -> list[tuple[str, str]]:
        """(member, text) of the raw texts, in time order (their names start with the time)."""
        names = sorted(n for n in self._zip.namelist() if n.startswith("texts/"))
        return [(n, self._zip.read(n).decode("utf-8", "replace")) for n in names]

    def close(self) -> None:
        self._zip.close()


def is_bundle(path: str) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return MANIFEST in z.namelist()
    except (zipfile.BadZipFile, OSError):
        return False
