"""The ZIP container of a bundle, opened within bounds.

A hostile archive is refused from its directory, before a byte of any member is decompressed: too
large a directory, too many members, a name the format does not know (``../x`` included), a name
twice, encryption, an unknown compression, a declared size above its kind's bound, a ratio no real
bundle has, members that overlap. A member is then only ever read as a stream that stops at its bound.
"""

from __future__ import annotations

import os
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator

from . import limits
from .terminal import printable

MANIFEST = "manifest.json"
METADATA = "metadata.json"
CHUNK_NAME = re.compile(r"samples/[0-9]{6,9}\.om")
TEXT_NAME = re.compile(r"texts/[0-9A-Za-z][0-9A-Za-z._-]{0,199}")

_EOCD = struct.Struct("<4s4H2LH")  # end of central directory record
_EOCD64_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")
_STREAM_BLOCK = 1 << 20


class BundleError(ValueError):
    """A bundle that cannot be trusted: truncated, corrupt, hostile, or not a bundle."""


def member_bound(name: str) -> int | None:
    """The largest decompressed size a member of that name may have; None for a name the format lacks."""
    if name == MANIFEST:
        return limits.MANIFEST_BYTES
    if name == METADATA:
        return limits.METADATA_BYTES
    if CHUNK_NAME.fullmatch(name):
        return limits.CHUNK_BYTES
    if TEXT_NAME.fullmatch(name) and ".." not in name:
        return limits.TEXT_BYTES
    return None


def _directory(f) -> tuple[int, int]:
    """(members, bytes) of the central directory, from the end record: zipfile reads that many bytes."""
    f.seek(0, os.SEEK_END)
    size = f.tell()
    tail_size = min(size, _EOCD.size + 0xFFFF)
    f.seek(size - tail_size)
    tail = f.read(tail_size)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + _EOCD.size > len(tail):
        raise BundleError("not a ZIP file")
    members, directory_bytes = _EOCD.unpack_from(tail, at)[4:6]
    if members == 0xFFFF or directory_bytes == 0xFFFFFFFF:  # ZIP64: the real numbers are further back
        locator = at - _EOCD64_LOCATOR.size
        if locator >= 0 and tail[locator:locator + 4] == b"PK\x06\x07":
            offset = _EOCD64_LOCATOR.unpack_from(tail, locator)[2]
            f.seek(min(offset, size))
            record = f.read(_EOCD64.size)
            if len(record) == _EOCD64.size and record[:4] == b"PK\x06\x06":
                members, directory_bytes = _EOCD64.unpack(record)[7:9]
    return members, directory_bytes


def open_archive(path: str) -> tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo]]:
    """The archive and its members by name, every bound checked on the directory."""
    try:
        with open(path, "rb") as f:
            members, directory_bytes = _directory(f)
            size = f.seek(0, os.SEEK_END)
    except FileNotFoundError:
        raise BundleError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BundleError(f"{path} is a directory, not a bundle") from None
    except OSError as exc:
        raise BundleError(f"{path}: {exc.strerror}") from None
    except BundleError as exc:
        raise BundleError(f"{path} is not a complete bundle (truncated or not a bundle): {exc}") from None
    if directory_bytes > limits.DIRECTORY_BYTES or members > limits.MEMBERS:
        raise BundleError(f"{path}: its ZIP directory lists {members} members in {directory_bytes} bytes; a bundle "
                          f"has at most {limits.MEMBERS} members in {limits.DIRECTORY_BYTES} bytes")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise BundleError(f"{path} is not a complete bundle (truncated or not a bundle): {printable(exc)}") from None
    try:
        return archive, _checked_members(path, archive.infolist(), size)
    except BaseException:
        archive.close()
        raise


def _checked_members(path: str, infos: list[zipfile.ZipInfo], archive_size: int) -> dict[str, zipfile.ZipInfo]:
    if len(infos) > limits.MEMBERS:
        raise BundleError(f"{path} has {len(infos)} members; a bundle has at most {limits.MEMBERS}")
    by_name: dict[str, zipfile.ZipInfo] = {}
    compressed = decompressed = 0
    for info in infos:
        name = printable(info.filename, 80)
        if info.filename in by_name:
            raise BundleError(f"{path} holds the member {name!r} twice")
        bound = member_bound(info.filename)
        if bound is None:
            raise BundleError(f"{path} holds a member the bundle format does not know: {name!r}")
        if info.flag_bits & 0x1:
            raise BundleError(f"{path}: {name} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise BundleError(f"{path}: {name} uses a compression bundles do not use ({info.compress_type})")
        if info.file_size > bound:
            raise BundleError(f"{path}: {name} would decompress to {info.file_size} bytes; at most {bound} allowed")
        if info.file_size > limits.RATIO_FLOOR and info.file_size > limits.RATIO * max(info.compress_size, 1):
            raise BundleError(f"{path}: {name} claims to decompress {info.file_size // max(info.compress_size, 1)} "
                              f"times its size (at most {limits.RATIO}): a ZIP bomb")
        compressed += info.compress_size
        decompressed += info.file_size
        by_name[info.filename] = info
    if compressed > archive_size:
        raise BundleError(f"{path}: its members claim more bytes than the file has (overlapping members: a ZIP bomb)")
    if decompressed > limits.TOTAL_BYTES:
        raise BundleError(f"{path} would decompress to {decompressed} bytes; at most {limits.TOTAL_BYTES} allowed")
    if decompressed > limits.TOTAL_RATIO_FLOOR and decompressed > limits.RATIO * max(compressed, 1):
        raise BundleError(f"{path}: its members claim to decompress {decompressed // max(compressed, 1)} times "
                          f"their size together (at most {limits.RATIO}): a ZIP bomb")
    return by_name


def stream(archive: zipfile.ZipFile, info: zipfile.ZipInfo, what: str) -> Iterator[bytes]:
    """The member's bytes in blocks; stops with BundleError past the bound of its kind, whatever the
    directory said (zipfile also stops at the declared size and then checks the CRC)."""
    bound = member_bound(info.filename) or 0
    total = 0
    try:
        with archive.open(info) as f:
            while block := f.read(_STREAM_BLOCK):
                total += len(block)
                if total > bound:
                    raise BundleError(f"{what}: {printable(info.filename, 80)} is larger than {bound} bytes")
                yield block
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError) as exc:
        raise BundleError(f"{what}: {printable(info.filename, 80)} cannot be read: {printable(exc)}") from None


def read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, what: str) -> bytes:
    """A small member whole (manifest, metadata, a text), within its bound."""
    return b"".join(stream(archive, info, what))
