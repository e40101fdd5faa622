"""One log line when a problem starts or changes, one when it ends: never a line per scrape."""

from __future__ import annotations

import logging
from typing import Hashable

log = logging.getLogger("innodb_exporter")


class ProblemLog:
    def __init__(self, target: str):
        self.target = target  # the server the problems are about, logged as a field of every line
        self._open: dict[Hashable, str] = {}  # problem key -> message last logged

    def report(self, key: Hashable, message: str, level: int = logging.WARNING) -> None:
        """Log ``message`` unless the same problem was already logged for ``key``."""
        if self._open.get(key) != message:
            self._open[key] = message
            log.log(level, "%s", message, extra={"target": self.target})

    def resolve(self, key: Hashable, message: str | None = None) -> None:
        """The problem of ``key`` is over: log ``message`` once if it was open."""
        if self._open.pop(key, None) is not None and message:
            log.info("%s", message, extra={"target": self.target})

    def open_keys(self) -> list[Hashable]:
        return list(self._open)
