"""Captures on disk: ``<directory>/<id>/capture.json`` (what, when, why, files, errors) and one file per
source and snapshot (``1-engine-innodb-status.txt``, ``1-innodb-trx.tsv``, …), within a byte budget.

A capture being written lives in ``<id>.partial`` and is renamed when done, so listings show only
complete ones; the oldest complete captures go first when a new file would not fit.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading

log = logging.getLogger("innodb_exporter")

MANIFEST = "capture.json"
ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[A-Za-z0-9_.-]{1,120}$")  # a capture's id (its directory)
FILE_RE = re.compile(r"^[0-9]{1,3}-[a-z-]{1,40}\.(txt|tsv)$")  # a snapshot's file


class CaptureStore:
    """Captures on disk within a byte budget; the oldest complete ones go first."""

    def __init__(self, directory: str, max_bytes: int):
        self.directory = directory
        self.max_bytes = max_bytes
        self._mu = threading.Lock()
        os.makedirs(directory, mode=0o700, exist_ok=True)
        for name in os.listdir(directory):  # a capture cut short by a restart is not evidence
            if name.endswith(".partial"):
                shutil.rmtree(os.path.join(directory, name), ignore_errors=True)

    def _size(self, path: str) -> int:
        return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)

    def used(self) -> int:
        return self._size(self.directory)

    def start(self, capture_id: str) -> str:
        path = os.path.join(self.directory, capture_id + ".partial")
        os.makedirs(path, mode=0o700)
        return path

    def write(self, partial: str, name: str, data: bytes) -> bool:
        """Write one file, evicting the oldest captures to make room; False when it cannot fit at all."""
        with self._mu:
            while self.used() + len(data) > self.max_bytes:
                if not self._evict_oldest():
                    return False
            with open(os.path.join(partial, name), "wb") as f:
                f.write(data)
            return True

    def finish(self, partial: str) -> str:
        final = partial[: -len(".partial")]
        os.rename(partial, final)
        return os.path.basename(final)

    def discard(self, partial: str) -> None:
        shutil.rmtree(partial, ignore_errors=True)

    def _evict_oldest(self) -> bool:
        complete = sorted(n for n in os.listdir(self.directory) if ID_RE.match(n))
        if not complete:
            return False
        shutil.rmtree(os.path.join(self.directory, complete[0]), ignore_errors=True)
        log.info("capture store over its budget: dropped the oldest capture %s", complete[0])
        return True

    def list(self) -> list[dict]:
        out = []
        for name in sorted(os.listdir(self.directory), reverse=True):
            if not ID_RE.match(name):
                continue
            try:
                with open(os.path.join(self.directory, name, MANIFEST), encoding="utf-8") as f:
                    out.append(json.load(f))
            except (OSError, ValueError):
                continue
        return out

    def file(self, capture_id: str, name: str) -> bytes | None:
        """A file of a complete capture, by names checked against the store's own (no path from outside)."""
        if not ID_RE.match(capture_id) or not (FILE_RE.match(name) or name == MANIFEST):
            return None
        path = os.path.join(self.directory, capture_id, name)
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError:
            return None
