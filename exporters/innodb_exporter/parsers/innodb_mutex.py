"""Parser for the rows of ``SHOW ENGINE INNODB MUTEX`` (columns Type, Name, Status).

The formats differ by version; what they share is one row per latch (or creation site) and a Status
of ``key=value`` pairs:

    InnoDB  &buf_pool->mutex             os_waits=3                      (5.6)
    InnoDB  rwlock: dict0dict.cc:2687    waits=1                         (5.7, 8.0)
    InnoDB  sum rwlock: buf0buf.cc:1460  waits=12                        (5.7, 8.0: block locks summed)
    InnoDB  LOG_SYS                      spins=0,waits=4,calls=103       (8.0 with latch monitoring on)

Rows with the same name (one per buffer pool instance, say) are summed. A Status whose items are not all
``key=value`` with a number as SHOW ENGINE INNODB STATUS prints them (innodb_status: ASCII digits, at
most MAX_INT) makes its row a problem: ``waits=1e308``, ``waits=1,234`` are not read in part.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .innodb_status import MAX_DIGITS, MAX_INT

# waits=1        os_waits=3        spins=0,waits=4,calls=103    (items separated by ",")
_PAIR_RE = re.compile(rf"([a-z_]+)=([0-9]{{1,{MAX_DIGITS}}})")


@dataclass
class MutexStats:
    name: str
    counts: dict[str, int] = field(default_factory=dict)  # waits / os_waits / spins / calls ...

    @property
    def waits(self) -> int | None:
        """Waits as the server counts them: ``waits`` since 5.7, ``os_waits`` before."""
        if "waits" in self.counts:
            return self.counts["waits"]
        return self.counts.get("os_waits")


@dataclass
class MutexReading:
    latches: list[MutexStats] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # rows that did not parse


def _pairs(status: str) -> list[tuple[str, int]] | None:
    """The ``key=value`` items of a Status; None unless every item is one."""
    matches = [_PAIR_RE.fullmatch(item.strip()) for item in status.split(",")]
    if None in matches or any(int(m.group(2)) > MAX_INT for m in matches):
        return None
    return [(m.group(1), int(m.group(2))) for m in matches]


def parse(rows) -> MutexReading:
    """Aggregate the rows by name."""
    by_name: dict[str, MutexStats] = {}
    problems: list[str] = []
    for row in rows:
        if len(row) < 3:
            problems.append(f"row with {len(row)} columns instead of 3")
            continue
        name = str(row[1]).strip()
        pairs = _pairs(str(row[2]))
        if not name or not pairs:
            problems.append("row without a name, or whose Status is not key=number items")
            continue
        stats = by_name.setdefault(name, MutexStats(name))
        for key, value in pairs:
            stats.counts[key] = stats.counts.get(key, 0) + value
    return MutexReading(list(by_name.values()), problems)
