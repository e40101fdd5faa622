"""The connection to one server: opened on demand, identified once, kept between scrapes, closed when
lost or idle."""

from __future__ import annotations

import time

import pymysql
from pymysql.constants import CLIENT

from ..sources.server import ServerInfo, identify
from .connection import ConnectionSettings, set_query_timeout


def probe_server(conn) -> ServerInfo:
    """Flavour, version and the features the sources depend on, read once per connection."""
    with conn.cursor() as cur:
        cur.execute("SELECT @@version, @@version_comment, @@performance_schema")
        version, comment, perf_schema = cur.fetchone()
        flavor, numbers = identify(str(version), str(comment or ""))
        # mysqld_exporter's approach: look at the columns rather than guess from the version.
        cur.execute(
            "SELECT UPPER(COLUMN_NAME) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'information_schema'"
            " AND TABLE_NAME = 'INNODB_METRICS' AND UPPER(COLUMN_NAME) IN ('STATUS', 'ENABLED')"
        )
        columns = {row[0] for row in cur.fetchall()}
        # Room for the reads sources.base.read_packed packs into one row (MySQL's default, 1 KB, holds
        # about twenty; this is MariaDB's). Where a proxy refuses it, those reads come row by row.
        try:
            cur.execute("SET SESSION group_concat_max_len = 1048576")
        except pymysql.err.MySQLError:
            if not conn.open:  # the connection went away: that the caller reports
                raise
    state = "STATUS" if "STATUS" in columns else "ENABLED" if "ENABLED" in columns else None
    return ServerInfo(flavor, numbers, bool(int(perf_schema or 0)), state)


class Session:
    def __init__(self, settings: ConnectionSettings):
        self.settings = settings
        self.conn = None
        self.server: ServerInfo | None = None
        self.batches = False  # whether a query may hold several statements (scrape.read_sources)
        self.last_used = time.monotonic()

    @property
    def is_open(self) -> bool:
        return self.conn is not None

    def open(self, deadline: float) -> ServerInfo:
        """Connect and identify the server; raises what PyMySQL raises (the caller describes it)."""
        self.close()
        remaining = deadline - time.monotonic()
        try:
            self.conn = self.settings.connect(read_timeout=remaining, connect_timeout=remaining)
            self.server = probe_server(self.conn)
            self.batches = bool(self.conn.server_capabilities & CLIENT.MULTI_STATEMENTS)
        except BaseException:
            self.close()
            raise
        return self.server

    def cursor(self, deadline: float):
        """A cursor whose queries must answer before ``deadline``."""
        set_query_timeout(self.conn, deadline - time.monotonic())
        self.last_used = time.monotonic()
        return self.conn.cursor()

    @property
    def alive(self) -> bool:
        return self.conn is not None and bool(getattr(self.conn, "open", False))

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # already broken: nothing more to release
                pass
