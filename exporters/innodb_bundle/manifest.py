"""The manifest of a bundle: what it says it holds, read strictly.

Its author may be an attacker, so every field has one type and a range, and the chunk windows must
be ordered, inside the bundle's window and not overlapping; what the chunks really hold is counted
by the reader and must agree with what the manifest says.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass, field

from . import limits
from .archive import CHUNK_NAME, BundleError

FORMAT = "innodb-replay/1"
KINDS = ("export", "record")
_KEYS = {"format", "tool", "kind", "source", "selector", "created", "window", "series", "samples", "chunks", "files"}
_WINDOW_KEYS = {"start_ms", "end_ms", "start", "end"}
_CHUNK_KEYS = {"name", "start_ms", "end_ms", "series", "samples"}
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Chunk:
    name: str
    start_ms: int
    end_ms: int
    series: int
    samples: int

    def to_json(self) -> dict:
        return {"name": self.name, "start_ms": self.start_ms, "end_ms": self.end_ms, "series": self.series,
                "samples": self.samples}


@dataclass
class Manifest:
    kind: str  # "export" or "record"
    source: str | list[str]  # a Prometheus URL, or the scraped JOB=URLs (never with credentials)
    window_start_ms: int
    window_end_ms: int
    selector: str = ""
    series: int = 0
    samples: int = 0
    chunks: list[Chunk] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # member -> sha256
    tool: str = ""  # what wrote the bundle and its version (innodb_replay.TOOL)
    created: str = ""

    def to_json(self) -> dict:
        return {"format": FORMAT, "tool": self.tool, "kind": self.kind, "source": self.source,
                "selector": self.selector, "created": self.created,
                "window": {"start_ms": self.window_start_ms, "end_ms": self.window_end_ms,
                           "start": iso(self.window_start_ms), "end": iso(self.window_end_ms)},
                "series": self.series, "samples": self.samples, "chunks": [c.to_json() for c in self.chunks],
                "files": self.files}


def iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds")


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def load_json(raw: bytes, what: str):
    """JSON from a bundle: no NaN, no nesting deep enough to exhaust the stack, no endless integers."""
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, int digits
        raise BundleError(f"{what} is not valid JSON: {type(exc).__name__}") from None


def _object(value, what: str, keys: set[str]) -> dict:
    if not isinstance(value, dict):
        raise BundleError(f"the manifest's {what} must be an object, not {type(value).__name__}")
    if set(value) != keys:
        missing, unknown = sorted(keys - set(value)), sorted(set(value) - keys)
        detail = "; ".join(part for part in (f"missing {', '.join(missing)}" if missing else "",
                                             f"{len(unknown)} unknown key(s)" if unknown else "") if part)
        raise BundleError(f"the manifest's {what} is not what this tool writes ({detail})")
    return value


def _int(value, what: str, low: int = 0, high: int = limits.MAX_MS) -> int:
    if type(value) is not int or not low <= value <= high:  # bool is an int subclass: refused too
        raise BundleError(f"the manifest's {what} must be a whole number from {low} to {high}")
    return value


def _str(value, what: str, longest: int) -> str:
    if not isinstance(value, str) or len(value) > longest:
        raise BundleError(f"the manifest's {what} must be a text of at most {longest} characters")
    return value


def _source(value) -> str | list[str]:
    if isinstance(value, list):
        if len(value) > 64:
            raise BundleError("the manifest's source lists more than 64 targets")
        return [_str(v, "source", 2048) for v in value]
    return _str(value, "source", 2048)


def parse(raw: bytes) -> Manifest:
    data = load_json(raw, "the manifest")
    if not isinstance(data, dict):
        raise BundleError("the manifest is not a JSON object")
    if data.get("format") != FORMAT:
        found = data.get("format")
        shown = repr(found[:40]) if isinstance(found, str) else type(found).__name__
        raise BundleError(f"unknown bundle format {shown} (this tool reads {FORMAT})")
    _object(data, "top level", _KEYS)
    kind = data["kind"]
    if kind not in KINDS:
        raise BundleError(f"the manifest's kind must be one of {', '.join(KINDS)}")
    window = _object(data["window"], "window", _WINDOW_KEYS)
    start, end = _int(window["start_ms"], "window start"), _int(window["end_ms"], "window end")
    _str(window["start"], "window start", 64), _str(window["end"], "window end", 64)
    if end < start:
        raise BundleError("the manifest's window ends before it starts")
    if end - start > limits.WINDOW_MS:
        raise BundleError(f"the bundle's window is {(end - start) / limits.HOUR_MS:.0f} hours; import takes at most "
                          f"{limits.WINDOW_MS // limits.HOUR_MS} hours")
    files = data["files"]
    if not isinstance(files, dict) or len(files) > limits.MEMBERS:
        raise BundleError(f"the manifest's files must be an object of at most {limits.MEMBERS} members")
    for name, digest in files.items():
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise BundleError("the manifest's files must map each member to its SHA-256 in hex")
    manifest = Manifest(kind=kind, source=_source(data["source"]), window_start_ms=start, window_end_ms=end,
                        selector=_str(data["selector"], "selector", 4096),
                        series=_int(data["series"], "series", high=limits.SERIES),
                        samples=_int(data["samples"], "samples", high=2**62), chunks=_chunks(data["chunks"], start, end),
                        files=dict(files), tool=_str(data["tool"], "tool", 200),
                        created=_str(data["created"], "created", 64))
    counted = sum(c.samples for c in manifest.chunks)
    if counted != manifest.samples:
        raise BundleError(f"the manifest counts {manifest.samples} samples but its chunks {counted}")
    unlisted = [c.name for c in manifest.chunks if c.name not in files]
    if unlisted:
        raise BundleError(f"the manifest lists chunks without a checksum: {len(unlisted)}")
    return manifest


def _chunks(value, window_start: int, window_end: int) -> list[Chunk]:
    if not isinstance(value, list) or not 1 <= len(value) <= limits.MEMBERS:
        raise BundleError(f"the manifest's chunks must be a list of 1 to {limits.MEMBERS} chunks")
    chunks: list[Chunk] = []
    names: set[str] = set()
    for number, item in enumerate(value, start=1):
        what = f"chunk {number}"
        item = _object(item, what, _CHUNK_KEYS)
        chunk = Chunk(name=_str(item["name"], f"{what} name", 40), start_ms=_int(item["start_ms"], f"{what} start"),
                      end_ms=_int(item["end_ms"], f"{what} end"), series=_int(item["series"], f"{what} series", 1,
                                                                             limits.SERIES),
                      samples=_int(item["samples"], f"{what} samples", 1, 2**62))
        if not CHUNK_NAME.fullmatch(chunk.name):
            raise BundleError(f"the manifest's {what} is not named samples/NNNNNN.om")
        if chunk.name in names:
            raise BundleError(f"the manifest lists {chunk.name} twice")
        names.add(chunk.name)
        if not window_start <= chunk.start_ms <= chunk.end_ms <= window_end:
            raise BundleError(f"{chunk.name} is not inside the bundle's window")
        if chunk.end_ms - chunk.start_ms > limits.CHUNK_SPAN_MS:
            raise BundleError(f"{chunk.name} spans more than {limits.CHUNK_SPAN_MS // limits.HOUR_MS} hours")
        if chunks and chunk.start_ms < chunks[-1].end_ms:
            raise BundleError(f"{chunk.name} overlaps {chunks[-1].name} or comes before it: chunks are in time order")
        chunks.append(chunk)
    return chunks
