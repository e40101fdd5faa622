"""Log lines rate-limited per cause: whoever can post to the webhook cannot fill the log.

A cause is a fixed name (never anything a request carries), so the limiter holds a few entries whatever
arrives. The first event of a cause is logged at once; those within ``interval`` after it are counted,
and the next line logged for that cause says how many were left out.
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("innodb_exporter")


class LogLimiter:
    def __init__(self, interval: float = 60.0, clock=time.monotonic):
        self.interval = interval
        self._clock = clock
        self._mu = threading.Lock()
        self._last: dict[str, float] = {}  # cause -> when it was last logged
        self._left_out: dict[str, int] = {}  # cause -> events not logged since

    def log(self, cause: str, level: int, message: str, *args) -> bool:
        """Log ``message % args`` unless ``cause`` was logged less than ``interval`` ago; True when logged."""
        now = self._clock()
        with self._mu:
            last = self._last.get(cause)
            if last is not None and now - last < self.interval:
                self._left_out[cause] = self._left_out.get(cause, 0) + 1
                return False
            self._last[cause] = now
            left_out = self._left_out.pop(cause, 0)
        if left_out:
            message += f" (and {left_out} more like it in the last {now - last:.0f}s, not logged)"
        log.log(level, message, *args)
        return True
