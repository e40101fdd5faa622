"""What the Debian roots (roots.py) and the Go tools (tools.py) share: a build into a per-machine cache that
many processes may ask for at once (pytest, .ci/run's background builds, a native stack) and that runs once."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from typing import Callable


def say(who: str, message: str) -> None:
    """Progress on stderr, stamped, so that a long build is seen to move."""
    print(f"[{who} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build_once(cache: str, name: str, built: Callable[[], object], build: Callable[[], None],
               waiting: Callable[[], None]) -> None:
    """``build()`` unless ``built()``, holding ``name``'s lock file in ``cache``: a second process waits
    (``waiting()`` says so) and then finds the first one's build done."""
    if built():
        return
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, f"{name}.lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waiting()
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not built():  # the other process may have finished it meanwhile
            build()
