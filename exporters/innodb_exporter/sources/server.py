"""Which server we are talking to: flavour and version, read once per connection."""

from __future__ import annotations

import re
from dataclasses import dataclass

# 10.11.19-MariaDB-0+deb12u1    8.0.36-28 (Percona)    5.7.44-log    8.4.3    9.1.0
_VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class ServerInfo:
    flavor: str  # "mysql", "mariadb" or "percona"
    version: tuple[int, int, int]
    performance_schema: bool = False
    # INNODB_METRICS says whether a counter is on in a column named STATUS ('enabled'/'disabled') on
    # MySQL and ENABLED (1/0) on MariaDB; probed rather than assumed from the version.
    metrics_state_column: str | None = None

    @property
    def version_text(self) -> str:
        return ".".join(str(p) for p in self.version)


def identify(version: str, version_comment: str = "") -> tuple[str, tuple[int, int, int]]:
    """Flavour and version from ``@@version`` and ``@@version_comment``.

    >>> identify("10.11.19-MariaDB-0+deb12u1", "Debian 12")
    ('mariadb', (10, 11, 19))
    >>> identify("8.0.36-28", "Percona Server (GPL), Release 28, Revision 47601f19")
    ('percona', (8, 0, 36))
    >>> identify("8.4.3", "MySQL Community Server - GPL")
    ('mysql', (8, 4, 3))
    """
    m = _VERSION_RE.search(version or "")
    if not m:
        raise ValueError(f"cannot read a server version from {version!r}")
    numbers = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    text = f"{version} {version_comment}".lower()
    if "mariadb" in text:
        return "mariadb", numbers
    if "percona" in text:
        return "percona", numbers
    return "mysql", numbers
