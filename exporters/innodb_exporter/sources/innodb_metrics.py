"""``information_schema.INNODB_METRICS``: every enabled counter, and the counters the metrics read.

The disabled rows of the counters the metrics read come too, so that the exporter can say which are off;
the other disabled rows (most of them, on a stock server) are left on the server.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Packed, PerConnection, Source, name_list


@dataclass(slots=True)
class Counter:  # slotted, not frozen: hundreds are built on every scrape
    name: str
    subsystem: str
    count: int
    type: str  # value / status_counter / set_owner / set_member / counter
    comment: str
    enabled: bool


class InnodbMetrics(Source):
    name = "innodb_metrics"
    field = "counters"
    privilege = "PROCESS"
    summary = "``information_schema.INNODB_METRICS``: every enabled counter, and those the metrics read."

    def __init__(self, wanted: tuple[str, ...] = ()):
        super().__init__(wanted)
        # Each counter's subsystem, type and comment (name -> triple), which never change while the server
        # runs: read with the counts on a connection's first scrape, then left on the server (they are most
        # of the bytes).
        self._described = PerConnection()
        self._names = name_list(wanted)
        self._counts = Packed()

    def unsupported(self, server):
        if server.metrics_state_column is None:
            return "INNODB_METRICS has neither a STATUS nor an ENABLED column"
        return None

    def _where(self, server) -> tuple[str, str]:
        state = "STATUS = 'enabled'" if server.metrics_state_column == "STATUS" else "ENABLED = 1"
        return state, (f" WHERE {state} OR NAME IN ({self._names})" if self.wanted else "")

    def query(self, server):
        # MySQL: STATUS = 'enabled' / 'disabled'; MariaDB: ENABLED = 1 / 0 (probed at connect).
        state, where = self._where(server)
        return f"SELECT NAME, SUBSYSTEM, COUNT, TYPE, COMMENT, {state} FROM information_schema.INNODB_METRICS{where}"

    def read(self, server):
        if not self._described.stale(server):
            state, where = self._where(server)
            counts = yield from self._counts.rows(server, ("NAME", "COUNT", state),
                                                  f"FROM information_schema.INNODB_METRICS{where}")
            described = self._described.value
            if all(str(name) in described for name, _, _ in counts):
                rows = []
                for name, count, enabled in counts:
                    subsystem, type_, comment = described[str(name)]
                    rows.append((name, subsystem, count, type_, comment, enabled))
                return self.from_rows(rows)
        # A new connection, or a counter enabled since the description: describe them all again.
        rows = yield self.query(server)
        self._described.keep(server, {str(name): (subsystem, type_, comment)
                                      for name, subsystem, _, type_, comment, _ in rows})
        return self.from_rows(rows)

    def from_rows(self, rows) -> dict[str, Counter]:
        return {
            str(name): Counter(str(name), str(subsystem), int(count or 0), str(type_), str(comment or ""),
                               bool(int(enabled)))
            for name, subsystem, count, type_, comment, enabled in rows
        }
