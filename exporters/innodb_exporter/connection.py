"""Connecting to a server with PyMySQL, and naming what went wrong in words an operator can act on."""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

import pymysql

from .server import ServerInfo, identify

# MySQL client and server error codes we explain (errmsg / mysqld_error.h).
ACCESS_DENIED = {1044, 1045, 1698}  # bad user or password
PRIVILEGE = {1142, 1227, 1370}  # table/specific privilege missing (1227 names PROCESS)
MISSING = {1109, 1146, 1054}  # unknown table or column: the server lacks the feature
CONNECTION = {2002, 2003, 2005, 2006, 2013, 2055}  # cannot connect / connection lost


@dataclass(frozen=True)
class ConnectionSettings:
    """Where and how to connect. The password never appears in repr() or in any message."""

    host: str = "localhost"
    port: int = 3306
    socket: str | None = None
    user: str = ""
    password: str = field(default="", repr=False)
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    ssl_verify: bool = True
    ssl_required: bool = False
    connect_timeout: float = 5.0

    @property
    def address(self) -> str:
        return f"unix://{self.socket}" if self.socket else f"{self.host}:{self.port}"

    def _ssl(self) -> dict | None:
        if not (self.ssl_ca or self.ssl_cert or self.ssl_required):
            return None
        context = ssl.create_default_context(cafile=self.ssl_ca)
        if self.ssl_cert:
            context.load_cert_chain(self.ssl_cert, self.ssl_key)
        if not self.ssl_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return {"ssl": context}

    def connect(self, read_timeout: float, connect_timeout: float | None = None) -> pymysql.connections.Connection:
        timeout = self.connect_timeout if connect_timeout is None else max(0.1, min(connect_timeout, self.connect_timeout))
        read_timeout = max(0.1, read_timeout)  # PyMySQL also bounds the handshake with it
        kwargs = dict(user=self.user, password=self.password, connect_timeout=timeout,
                      read_timeout=read_timeout, write_timeout=read_timeout, autocommit=True,
                      charset="utf8mb4", program_name="innodb-exporter")
        if self.socket:
            kwargs["unix_socket"] = self.socket
        else:
            kwargs.update(host=self.host, port=self.port)
        ssl_args = self._ssl()
        if ssl_args:
            kwargs.update(ssl_args)
        return pymysql.connect(**kwargs)


def set_query_timeout(conn, seconds: float) -> None:
    """Bound the next query by the time left in this scrape.

    PyMySQL applies its read timeout to every socket read and re-reads the attribute each time, so
    lowering it per query bounds a hung server without a thread per query.
    """
    conn._read_timeout = max(0.05, seconds)


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
    state = "STATUS" if "STATUS" in columns else "ENABLED" if "ENABLED" in columns else None
    return ServerInfo(flavor, numbers, bool(int(perf_schema or 0)), state)


def error_code(exc: BaseException) -> int | None:
    if isinstance(exc, pymysql.err.MySQLError) and exc.args and isinstance(exc.args[0], int):
        return exc.args[0]
    return None


def describe(exc: BaseException, settings: ConnectionSettings) -> tuple[str, str]:
    """(kind, message) for an error: kind is access_denied / privilege / missing / connection / other.

    The server's own text is kept (it names the user and the missing privilege, never the password).
    """
    code = error_code(exc)
    server_text = str(exc.args[1]) if isinstance(exc, pymysql.err.MySQLError) and len(exc.args) > 1 else str(exc)
    if settings.password:  # belt and braces: no library message may ever carry it out
        server_text = server_text.replace(settings.password, "<secret>")
    if code in ACCESS_DENIED:
        return "access_denied", (f"access denied connecting to {settings.address}: {server_text} "
                                 "(check --mysqld.username and the password in MYSQLD_EXPORTER_PASSWORD or the my.cnf)")
    if code in PRIVILEGE:
        return "privilege", f"missing privilege: {server_text} (the grants are in README.md)"
    if code in MISSING:
        return "missing", f"not available on this server: {server_text}"
    if code in CONNECTION or isinstance(exc, (OSError, pymysql.err.InterfaceError)):
        return "connection", f"cannot reach {settings.address}: {server_text}"
    return "other", f"{type(exc).__name__}: {server_text}"
