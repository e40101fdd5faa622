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

The reader trusts nothing in the file, the manifest included (its author may be an attacker, so the
checksums only tell a damaged bundle from an intact one): every bound of limits.py is checked on the
ZIP directory and the manifest before anything is decompressed, every member is streamed within its
bound, and ``verify`` counts what the chunks really hold.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import zipfile
from dataclasses import dataclass

from . import archive, limits, manifest as manifest_format
from .archive import MANIFEST, METADATA, BundleError
from .manifest import FORMAT, Chunk, Manifest
from .openmetrics import ChunkChecker, SeriesKey, Spacings, format_value, openmetrics_chunk, series_fits, series_key
from .terminal import Progress, printable

__all__ = ["FORMAT", "MANIFEST", "METADATA", "BundleError", "BundleReader", "BundleWriter", "Chunk", "Contents",
           "Manifest", "format_value", "is_bundle", "read_texts", "series_key"]

STATUS_TEXT = "engine-innodb-status.txt"
EOF = b"# EOF\n"


class BundleWriter:
    """Write a bundle chunk by chunk; ``close()`` seals it, ``abort()`` removes the partial file."""

    def __init__(self, path: str, manifest: Manifest):
        self.path = path
        self.partial = path + ".partial"
        self.manifest = manifest
        self._sealed = False  # close() wrote the whole bundle: abort() keeps it
        if os.path.isdir(path):
            raise BundleError(f"--out {path} is a directory: name the bundle's file")
        try:
            self._zip = zipfile.ZipFile(self.partial, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True)
        except OSError as exc:
            raise BundleError(f"cannot write {self.partial}: {exc.strerror}") from None
        self._series: set[SeriesKey] = set()
        self._metadata: dict[str, dict] = {}
        self.left_out: set[SeriesKey] = set()  # series import would refuse (names or labels too long)

    def add_chunk(self, series: dict[SeriesKey, list[tuple[int, str]]], start_ms: int, end_ms: int) -> int:
        """Write one chunk of samples; returns how many samples it held."""
        kept = {}
        for key, samples in series.items():
            if key in self._series or series_fits(key):
                kept[key] = samples
            else:
                self.left_out.add(key)
        samples = sum(len(v) for v in kept.values())
        if not samples:
            return 0
        name = f"samples/{len(self.manifest.chunks) + 1:06d}.om"
        data = openmetrics_chunk(kept)
        if len(data) > limits.CHUNK_BYTES:
            raise BundleError(f"a chunk of {len(data)} bytes is more than import takes ({limits.CHUNK_BYTES}): "
                              "use fewer samples per chunk")
        self._zip.writestr(name, data)
        self._series.update(kept)
        self.manifest.chunks.append(Chunk(name, start_ms, end_ms, len(kept), samples))
        self.manifest.files[name] = hashlib.sha256(data).hexdigest()
        self.manifest.samples += samples
        return samples

    def add_metadata(self, metadata: dict[str, dict]) -> None:
        self._metadata.update(metadata)

    def add_text(self, name: str, text: str) -> bool:
        """Keep a raw text; False (and nothing kept) when it is larger than import takes."""
        data = text.encode()
        if len(data) > limits.TEXT_BYTES:
            return False
        member = f"texts/{name}"
        if archive.member_bound(member) != limits.TEXT_BYTES:  # a text's name as import takes it
            raise BundleError(f"a text named {printable(name, 80)!r}, which a bundle cannot hold")
        self._zip.writestr(member, data)
        self.manifest.files[member] = hashlib.sha256(data).hexdigest()
        return True

    def close(self) -> Manifest:
        names = {key[0] for key in self._series}
        metadata = json.dumps({n: m for n, m in sorted(self._metadata.items()) if n in names}, indent=1).encode()
        self._zip.writestr(METADATA, metadata)
        self.manifest.files[METADATA] = hashlib.sha256(metadata).hexdigest()
        self.manifest.series = len(self._series)
        self.manifest.created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        self._zip.writestr(MANIFEST, json.dumps(self.manifest.to_json(), indent=1))
        self._zip.close()
        self._sealed = True
        try:
            os.replace(self.partial, self.path)
        except OSError as exc:  # hours of recording are in it: keep it, and say where
            raise BundleError(f"cannot move the bundle to {self.path} ({exc.strerror}): it is complete in "
                              f"{self.partial}; move it by hand") from None
        return self.manifest

    def abort(self) -> None:
        if self._sealed:
            return
        try:
            self._zip.close()
        finally:
            if os.path.exists(self.partial):
                os.remove(self.partial)


@dataclass
class Contents:
    """What ``verify`` counted in the chunks themselves; the manifest's counts agree with it."""

    series: int
    samples: int
    chunks: int
    texts: int
    instances: list[str]
    spacing_s: dict[str, int]  # job -> how far apart its series' samples are (median, seconds)


class BundleReader:
    """Open a bundle: the ZIP directory and the manifest are checked here, the members by ``verify``."""

    def __init__(self, path: str):
        self.path = path
        self._zip, self._members = archive.open_archive(path)
        try:
            if MANIFEST not in self._members:
                raise BundleError(f"{path} has no manifest: it was not finished (interrupted export?)")
            self.manifest = manifest_format.parse(archive.read(self._zip, self._members[MANIFEST], path))
            self._check_listing()
        except BundleError as exc:
            self._zip.close()
            if str(exc).startswith(path):
                raise
            raise BundleError(f"{path}: {exc}") from None

    def __enter__(self) -> "BundleReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_listing(self) -> None:
        present = set(self._members) - {MANIFEST}
        listed = set(self.manifest.files)
        for names, what in ((listed - present, "lacks members its manifest lists"),
                            (present - listed, "holds members its manifest does not list")):
            if names:
                shown = ", ".join(printable(n, 60) for n in sorted(names)[:3])
                raise BundleError(f"{what}: {shown}{' …' if len(names) > 3 else ''}")
        if METADATA not in listed:
            raise BundleError("has no metadata.json")
        chunks = {c.name for c in self.manifest.chunks}
        stray = [n for n in listed if archive.CHUNK_NAME.fullmatch(n) and n not in chunks]
        if stray:
            raise BundleError(f"holds samples that are not a chunk of its manifest: {printable(stray[0], 60)}")

    def size(self, member: str) -> int:
        """The decompressed size the ZIP directory declares (checked against the bound of its kind)."""
        return self._members[member].file_size

    def _blocks(self, member: str):
        """The member's bytes, within its bound, checked against the manifest's SHA-256 at the end."""
        digest = hashlib.sha256()
        for block in archive.stream(self._zip, self._members[member], self.path):
            digest.update(block)
            yield block
        if digest.hexdigest() != self.manifest.files[member]:
            raise BundleError(f"{self.path}: checksum mismatch in {printable(member, 60)} "
                              "(the bundle was altered or damaged)")

    def verify(self, progress: Progress | None = None) -> Contents:
        """Read every member once: checksums, each chunk's every line (limits.py), and the counts."""
        seen: set[int] = set()
        instances: set[str] = set()
        spacings = Spacings()
        samples, previous_end = 0, -1
        for number, chunk in enumerate(self.manifest.chunks, start=1):
            checker = ChunkChecker(f"{self.path}: {chunk.name}", chunk.start_ms, chunk.end_ms, previous_end, seen,
                                   instances, spacings)
            for block in self._blocks(chunk.name):
                checker.feed(block)
            series, counted = checker.close()
            if (series, counted) != (chunk.series, chunk.samples):
                raise BundleError(f"{self.path}: the manifest says {chunk.name} holds {chunk.samples} samples of "
                                  f"{chunk.series} series, it holds {counted} of {series}")
            samples += counted
            previous_end = chunk.end_ms
            if progress:
                progress.update(number, samples)
        if len(seen) != self.manifest.series:
            raise BundleError(f"{self.path}: the manifest counts {self.manifest.series} series, the chunks hold {len(seen)}")
        self.metadata()
        texts = [n for n in self.manifest.files if n.startswith("texts/")]
        for name in texts:
            for _ in self._blocks(name):
                pass
        return Contents(len(seen), samples, len(self.manifest.chunks), len(texts), sorted(instances),
                        spacings.by_job())

    def chunk(self, name: str) -> bytes:
        """A chunk's text whole, within its bound and checked against its checksum."""
        return b"".join(self._blocks(name))

    def copy_chunk(self, name: str, out) -> None:
        """Append a chunk that verify() checked to the file ``out``, without its closing ``# EOF`` line. Its
        checksum is compared again, so the bytes written are the bytes that were checked."""
        tail = b""
        for block in self._blocks(name):
            out.write(block)
            tail = (tail + block)[-len(EOF):]
        if tail != EOF:
            raise BundleError(f"{self.path}: {name} does not end with # EOF")
        out.seek(-len(EOF), os.SEEK_END)
        out.truncate()

    def metadata(self) -> dict[str, dict[str, str]]:
        data = manifest_format.load_json(b"".join(self._blocks(METADATA)), "metadata.json")
        if not isinstance(data, dict) or not all(
                isinstance(entry, dict) and all(k in ("type", "help", "unit") and isinstance(v, str)
                                                for k, v in entry.items())
                for entry in data.values()):
            raise BundleError(f"{self.path}: metadata.json is not a map of metric names to type, help and unit")
        return data

    def texts(self, suffix: str = "", budget: int = 64 * limits.MiB) -> list[tuple[str, str]]:
        """(member, text) of the newest raw texts whose name ends with ``suffix``, up to ``budget`` bytes,
        oldest first (their names start with the time). Each is checked against its checksum."""
        names = sorted(n for n in self.manifest.files if n.startswith("texts/") and n.endswith(suffix))
        chosen, total = [], 0
        for name in reversed(names):
            total += self.size(name)
            if total > budget:
                break
            chosen.append(name)
        return [(n, b"".join(self._blocks(n)).decode("utf-8", "replace")) for n in reversed(chosen)]

    def close(self) -> None:
        self._zip.close()


def is_bundle(path: str) -> bool:
    """Whether ``path`` is a ZIP file, so it is read as a bundle (and refused if it is not a sound one).

    A bundle starts with a member's local header; is_zipfile alone looks for the end record, whose 22
    bytes a status text can hold in its query text."""
    try:
        if not os.path.isfile(path):
            return False
        with open(path, "rb") as f:
            if f.read(4) != b"PK\x03\x04":
                return False
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def read_texts(path: str, suffix: str = STATUS_TEXT, budget: int = 64 * limits.MiB) -> list[str]:
    """The raw texts a recorded bundle keeps (``record --texts``), newest last: the newest whose name ends
    with ``suffix`` up to ``budget`` bytes. Reads the manifest and those texts, each within its bounds and
    checked against its checksum; raises BundleError otherwise."""
    with BundleReader(path) as reader:
        return [text for _, text in reader.texts(suffix, budget)]
