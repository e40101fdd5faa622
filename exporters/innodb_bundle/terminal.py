"""What replay writes to a terminal: progress, and text from a bundle made safe to print."""

from __future__ import annotations

import sys
import time
import unicodedata


def printable(text: object, limit: int = 200) -> str:
    """``text`` on one line without control or format characters (escape sequences, bidi overrides),
    cut to ``limit`` characters: anything a bundle's author wrote goes through here before it is shown."""
    out = []
    for ch in str(text):
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            out.append("?" if ch not in "\n\t" else " ")
        else:
            out.append(ch)
        if len(out) > limit:
            return "".join(out[:limit]) + "…"
    return "".join(out)


class Progress:
    """A progress bar on a terminal; a line per tenth elsewhere (logs). Nothing for work done within
    QUIET_SECONDS: a quick step, or one refused at once, says nothing but its result."""

    QUIET_SECONDS = 2.0

    def __init__(self, total: int, what: str, stream=sys.stderr):
        self.total, self.what, self.stream = max(total, 1), what, stream
        self.started = time.monotonic()
        self.tty = stream.isatty()
        self._last_tenth = -1
        self._shown = False

    def update(self, done: int, samples: int) -> None:
        if not self._shown and time.monotonic() - self.started < self.QUIET_SECONDS:
            return
        self._shown = True
        share = min(1.0, done / self.total)
        rate = samples / max(time.monotonic() - self.started, 1e-9)
        if self.tty:
            bar = "#" * int(share * 30)
            self.stream.write(f"\r{self.what} [{bar:<30}] {share:4.0%}  {samples} samples  {rate:,.0f}/s")
            self.stream.flush()
        elif int(share * 10) > self._last_tenth:
            self._last_tenth = int(share * 10)
            self.stream.write(f"{self.what}: {share:.0%}, {samples} samples, {rate:,.0f} samples/s\n")

    def finish(self) -> None:
        if self.tty and self._shown:
            self.stream.write("\n")
