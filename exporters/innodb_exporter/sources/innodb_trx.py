"""``information_schema.INNODB_TRX``: open transactions and the age of the oldest.

The TRANSACTIONS section of the status text says the same, but the server cuts that list when the
text grows past 1 MB, which is exactly when there are many transactions, and any user can forge its
lines through query text; this table is never cut and holds no text we read.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Source


@dataclass(frozen=True)
class TrxSummary:
    active: int
    oldest_seconds: int
    lock_waits: int


class InnodbTrx(Source):
    name = "innodb_trx"
    field = "trx"
    privilege = "PROCESS"
    summary = "``information_schema.INNODB_TRX``: open transactions and the age of the oldest."

    def query(self, server):
        # The age is computed by the server, on its own clock, so the exporter's clock does not matter.
        return ("SELECT COUNT(*), COALESCE(MAX(TIMESTAMPDIFF(SECOND, trx_started, NOW())), 0),"
                " COALESCE(SUM(trx_state = 'LOCK WAIT'), 0) FROM information_schema.INNODB_TRX")

    def from_rows(self, rows) -> TrxSummary:
        active, oldest, waits = rows[0]
        return TrxSummary(int(active), max(0, int(oldest)), int(waits))
