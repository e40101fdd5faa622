"""A chunk's text: OpenMetrics as export and record write it, and as import checks it line by line.

The writer and the checker share one grammar, narrower than OpenMetrics: ``# TYPE name unknown`` before
its family's samples, families in name order, ``name{label="value",...} value seconds.millis`` with each
series' samples together and in time order, the series of a family in the byte order of their text,
``# EOF`` last. The checker reads a chunk block by block, never holds more than a line (and a digest per
distinct series of the bundle), and refuses anything else, so promtool only ever sees what was checked.
"""

from __future__ import annotations

import hashlib
import math
import re

from . import limits
from .archive import BundleError

_NAME = rb"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = rb'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\n"])*)"'
_SERIES = re.compile(rb"(" + _NAME + rb")(?:\{(" + _LABEL + rb"(?:," + _LABEL + rb")*)\})?")
_LABEL_RE = re.compile(_LABEL)
_TYPE = re.compile(rb"# TYPE (" + _NAME + rb") unknown")
_VALUE = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|NaN|[+-]?Inf")
_TIMESTAMP = re.compile(rb"([0-9]{1,10})\.([0-9]{3})")
_NAME_STR = re.compile(_NAME.decode())
_LABEL_NAME_STR = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_ROOM = 64  # a value and a timestamp after the series on its line
INSTANCES = 100  # instances remembered for the printed links


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
    """One spelling per series, as Prometheus identifies it: labels by name, an empty value the same as none."""
    return name, tuple(sorted((k, v) for k, v in labels.items() if v != ""))


def series_fits(key: SeriesKey) -> bool:
    """Whether import will take this series: the writers leave out the rare one that it would refuse."""
    name, labels = key
    if not _NAME_STR.fullmatch(name) or len(labels) > limits.LABELS:
        return False
    if any(not _LABEL_NAME_STR.fullmatch(k) or k.startswith("__") for k, _ in labels):
        return False
    try:
        return len(series_text(name, labels).encode()) + _ROOM <= limits.LINE_BYTES
    except UnicodeEncodeError:  # a lone surrogate from a broken source
        return False


def openmetrics_chunk(series: dict[SeriesKey, list[tuple[int, str]]]) -> bytes:
    """OpenMetrics text for a chunk: families grouped, each series' samples sorted by time (ms).
    The caller keeps only series that ``series_fits``."""
    by_name: dict[str, list[SeriesKey]] = {}
    for key in series:
        by_name.setdefault(key[0], []).append(key)
    lines = []
    for name in sorted(by_name):
        # "unknown" keeps promtool from applying counter or histogram naming rules; the real type is
        # in metadata.json.
        lines.append(f"# TYPE {name} unknown")
        # In the byte order of their text, which the checker requires: a series twice is then out of order.
        prefixed = sorted((series_text(*key).encode(), key) for key in by_name[name])
        for prefix, key in prefixed:
            text = prefix.decode()
            for ts, value in sorted(series[key]):
                lines.append(f"{text} {value} {ts // 1000}.{ts % 1000:03d}")
    lines.append("# EOF")
    return ("\n".join(lines) + "\n").encode()


def _unescape(value: bytes) -> str:
    return re.sub(rb"\\(.)", lambda m: b"\n" if m[1] == b"n" else m[1], value).decode()


class Spacings:
    """How far apart each job's samples are: every series' own spacing in a chunk (its span over its samples
    less one), counted per job in whole seconds, so that memory stays bounded by jobs times spacings."""

    def __init__(self):
        self.counts: dict[str, dict[int, int]] = {}

    JOBS = 1000  # jobs counted at the most: a hostile bundle's made-up jobs cost no more than this

    def add(self, job: str, first_ms: int, last_ms: int, samples: int) -> None:
        if samples >= 2 and (job in self.counts or len(self.counts) < self.JOBS):
            per_job = self.counts.setdefault(job, {})
            seconds = round((last_ms - first_ms) / (samples - 1) / 1000)
            per_job[seconds] = per_job.get(seconds, 0) + 1

    def by_job(self) -> dict[str, int]:
        """Each job's median series spacing, in seconds."""
        out = {}
        for job, counts in self.counts.items():
            half, seen = sum(counts.values()) / 2, 0
            for seconds in sorted(counts):
                seen += counts[seconds]
                if seen >= half:
                    out[job] = seconds
                    break
        return out


class ChunkChecker:
    """Check one chunk's text as it streams in: ``feed`` blocks, then ``close``.

    Samples must lie in [start_ms, end_ms] and after ``after_ms`` (the previous chunk's end), so chunks
    cannot overlap. Families and the series of a family come in order, so that none can come twice.
    ``seen`` collects 8-byte digests of the bundle's distinct series, ``instances`` the instance label of
    ``innodb_up`` series, ``spacings`` how far apart each job's samples are.
    """

    def __init__(self, name: str, start_ms: int, end_ms: int, after_ms: int, seen: set[int], instances: set[str],
                 spacings: Spacings | None = None):
        self.name = name
        self.low, self.high = max(start_ms, after_ms + 1), end_ms
        self.seen, self.instances = seen, instances
        self.spacings = spacings if spacings is not None else Spacings()
        self.job = ""  # the job label of the series of the line before
        self.first_ts, self.first_sample = -1, 0  # its first sample's time, and the chunk's count before it
        self.pending = b""
        self.lines = 0
        self.samples = 0
        self.series = 0
        self.family = b""
        self.prefix: bytes | None = None  # the series of the line before
        self.family_last = b""  # the family's last series
        self.last_ts = -1
        self.ended = False

    def _refuse(self, why: str) -> BundleError:
        return BundleError(f"{self.name} line {self.lines}: {why}")

    def feed(self, block: bytes) -> None:
        lines = (self.pending + block).split(b"\n")
        self.pending = lines.pop()
        if len(self.pending) > limits.LINE_BYTES:
            self.lines += 1
            raise self._refuse(f"longer than {limits.LINE_BYTES} bytes")
        # The common case (a sample of the series of the line before) in locals: this loop runs per sample.
        # A sample line is "series value seconds.millis"; the value and the time have no blank, so the
        # last two blanks split it whatever the label values hold.
        value_ok, timestamp, longest = _VALUE.fullmatch, _TIMESTAMP.fullmatch, limits.LINE_BYTES
        low, high = self.low, self.high
        prefix, last_ts, samples, number = self.prefix, self.last_ts, self.samples, self.lines
        try:
            for line in lines:
                number += 1
                parts = line.rsplit(b" ", 2)
                stamp = timestamp(parts[-1]) if len(parts) == 3 and value_ok(parts[1]) else None
                if stamp is None or self.ended or len(line) > longest:
                    self.prefix, self.last_ts, self.samples, self.lines = prefix, last_ts, samples, number
                    self._other(line)
                    prefix, last_ts = self.prefix, self.last_ts
                    continue
                ts = int(stamp[1]) * 1000 + int(stamp[2])
                if parts[0] != prefix:
                    self.lines = number
                    self._series_ends(last_ts, samples)
                    self._series(parts[0])
                    prefix, last_ts = parts[0], -1
                    self.first_ts, self.first_sample = ts, samples
                if ts <= last_ts or not low <= ts <= high:
                    self.lines = number
                    raise self._refuse("a series' samples are not in time order" if ts <= last_ts
                                       else "a sample outside the chunk's window")
                last_ts = ts
                samples += 1
        finally:
            self.prefix, self.last_ts, self.samples, self.lines = prefix, last_ts, samples, number

    def close(self) -> tuple[int, int]:
        """(series, samples) of the chunk, once it ended as a chunk ends."""
        if self.pending or not self.ended:
            raise BundleError(f"{self.name} does not end with # EOF (cut or altered)")
        self._series_ends(self.last_ts, self.samples)
        return self.series, self.samples

    def _series_ends(self, last_ts: int, samples: int) -> None:
        """The series whose first sample was at first_ts ended: its spacing counts for its job."""
        if self.first_ts >= 0:
            self.spacings.add(self.job, self.first_ts, last_ts, samples - self.first_sample)
        self.first_ts = -1

    def _other(self, line: bytes) -> None:
        """A line that is not a well-formed sample: a family's '# TYPE', the closing '# EOF', or refused."""
        if len(line) > limits.LINE_BYTES:
            raise self._refuse(f"longer than {limits.LINE_BYTES} bytes")
        if self.ended:
            raise self._refuse("text after # EOF")
        if line == b"# EOF":
            self.ended = True
            return
        match = _TYPE.fullmatch(line)
        if not match:
            raise self._refuse("neither 'series value seconds.millis', '# TYPE name unknown' nor '# EOF'")
        if match[1] <= self.family:
            raise self._refuse("a family out of order, or declared twice")
        self.family, self.family_last, self.prefix = match[1], b"", None

    def _series(self, prefix: bytes) -> None:
        match = _SERIES.fullmatch(prefix)
        if not match:
            raise self._refuse("not a series name with labels")
        if match[1] != self.family or not self.family:
            raise self._refuse("a sample outside its family (no '# TYPE' before it)")
        try:
            prefix.decode()
        except UnicodeDecodeError:
            raise self._refuse("not UTF-8") from None
        labels = _LABEL_RE.findall(match[2]) if match[2] else []
        names = {k for k, _ in labels}
        if len(labels) > limits.LABELS:
            raise self._refuse(f"more than {limits.LABELS} labels")
        if len(names) != len(labels) or any(k.startswith(b"__") for k in names):
            raise self._refuse("a label twice, or a reserved label name")
        # One spelling per series (what the writers write): spelt twice, it would pass as two series and
        # import would merge them, dropping samples and the counts printed.
        if [k for k, _ in labels] != sorted(names) or any(not v for _, v in labels):
            raise self._refuse("labels not in name order, or a label with an empty value")
        if prefix <= self.family_last:
            raise self._refuse("a series out of order, or whose samples are not together")
        self.family_last = prefix
        self.series += 1
        self.seen.add(int.from_bytes(hashlib.blake2b(prefix, digest_size=8).digest(), "big"))
        if len(self.seen) > limits.SERIES:
            raise self._refuse(f"more than {limits.SERIES} series in the bundle")
        self.job = next((_unescape(v) for k, v in labels if k == b"job"), "")
        if match[1] == b"innodb_up" and len(self.instances) < INSTANCES:
            for k, v in labels:
                if k == b"instance":
                    self.instances.add(_unescape(v))
