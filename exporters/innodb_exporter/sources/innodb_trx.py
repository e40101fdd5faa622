"""``information_schema.INNODB_TRX``: open transactions and the age of the oldest.

The TRANSACTIONS section of the status text says the same, but the server cuts that list when the
text grows past 1 MB, which is exactly when there are many transactions; this table is never cut.
"""

from __future__ import annotations

from dataclasses import dataclass

NAME = "innodb_trx"
FIELD = "trx"
PRIVILEGE = "PROCESS"

# The age is computed by the server, on its own clock, so the exporter's clock does not matter.
QUERY = (
    "SELECT COUNT(*), COALESCE(MAX(TIMESTAMPDIFF(SECOND, trx_started, NOW())), 0),"
    " COALESCE(SUM(trx_state = 'LOCK WAIT'), 0) FROM information_schema.INNODB_TRX"
)


@dataclass(frozen=True)
class TrxSummary:
    active: int
    oldest_seconds: int
    lock_waits: int


def unsupported(server) -> str | None:
    return None


def fetch(cursor, server, names=None):
    cursor.execute(QUERY)
    return from_rows(cursor.fetchall())


def from_rows(rows) -> TrxSummary:
    active, oldest, waits = rows[0]
    return TrxSummary(int(active), max(0, int(oldest)), int(waits))
