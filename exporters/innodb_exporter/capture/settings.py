"""The settings of evidence captures (the ``--capture.*`` flags)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CaptureSettings:
    directory: str | None = None  # None: captures are off
    snapshots: int = 3
    interval: float = 10.0
    deadline: float = 60.0
    cooldown: float = 600.0
    max_bytes: int = 200 * 1024 * 1024
    query_text: bool = False
