"""Connecting to a server with PyMySQL, safely, and naming what went wrong in words an operator can act on.

Where the password may go: PyMySQL answers whatever authentication a server asks for, so a server
(or anything posing as one) could ask for the password in clear text (``mysql_clear_password``,
``dialog``), or encrypted with an RSA key it sends itself (``sha256_password`` and the full
authentication of ``caching_sha2_password``). ``GuardedConnection`` refuses both unless the link is
encrypted (TLS) or local (a unix socket), or the RSA key is the one the operator pinned. It checks
what is about to be written, so it holds for every plugin and every route to the password.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

import pymysql
from pymysql.constants import CLIENT
from pymysql.err import OperationalError

# MySQL client and server error codes we explain (errmsg / mysqld_error.h).
ACCESS_DENIED = {1044, 1045, 1698}  # bad user or password
PRIVILEGE = {1142, 1227, 1370}  # table/specific privilege missing (1227 names PROCESS)
MISSING = {1109, 1146, 1054}  # unknown table or column: the server lacks the feature
TOO_MANY_CONNECTIONS = {1040: "the server's max_connections is reached",
                        1203: "the user's max_user_connections is reached",
                        1226: "a resource limit of the user (max_user_connections) is reached"}
CONNECTION = {2002, 2003, 2005, 2006, 2013, 2055}  # cannot connect / connection lost

SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")


class AuthRefused(OperationalError):
    """The server asked for the password in a way that would expose it; the exporter refused."""


_RSA_REFUSED = ("the server asked for the password encrypted with an RSA key it sent itself (sha256_password or "
                "caching_sha2_password full authentication without TLS); refused: use TLS (ssl-mode), or pin the "
                "server's key with server-public-key-path in the my.cnf")


def _preferred_context() -> ssl.SSLContext:
    """TLS whenever the server offers it, unverified (the mysql client's PREFERRED). One context for every
    connection: PyMySQL would build one per connection and load the system's CA certificates into it
    (0.8 MB and tens of milliseconds each), only to verify nothing."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


_PREFERRED = _preferred_context()


class GuardedConnection(pymysql.connections.Connection):
    """A PyMySQL connection that never writes the password where a server could read it in clear.

    The guards watch the authentication exchange only (the password travels nowhere else): every packet
    of every query afterwards goes through PyMySQL's own methods, at no cost.
    """

    pinned_public_key: bytes | None = None

    def _create_ssl_ctx(self, sslp):
        return _PREFERRED if sslp == {} else super()._create_ssl_ctx(sslp)

    def _request_authentication(self):
        self.write_packet, self._read_packet = self._guarded_write, self._guarded_read
        try:
            return super()._request_authentication()
        finally:
            del self.write_packet, self._read_packet  # back to the class's methods

    def _guarded_write(self, payload):
        if not self._secure and self.password:
            if payload in (self.password + b"\0", self.password):
                raise AuthRefused(
                    "the server asked for the password in clear text over a connection without TLS "
                    "(mysql_clear_password or dialog); refused: use TLS (ssl-mode) or a unix socket")
            if self.server_public_key is not None and self.server_public_key != self.pinned_public_key:
                raise AuthRefused(_RSA_REFUSED)
        pymysql.connections.Connection.write_packet(self, payload)

    def _guarded_read(self, packet_type=pymysql.connections.MysqlPacket):
        packet = pymysql.connections.Connection._read_packet(self, packet_type)
        # A server that sends its own RSA key (sha256_password, caching_sha2_password full authentication)
        # wants the password encrypted to it: refused here, before any library needs or uses the key.
        if (not self._secure and self.password and self.pinned_public_key is None
                and packet.is_extra_auth_data() and packet._data[1:11] == b"-----BEGIN"):
            raise AuthRefused(_RSA_REFUSED)
        return packet


@dataclass(frozen=True)
class ConnectionSettings:
    """Where and how to connect. The password never appears in repr() or in any message."""

    host: str = "localhost"
    port: int = 3306
    socket: str | None = None
    user: str = ""
    password: str = field(default="", repr=False)
    ssl_mode: str = "PREFERRED"  # as the mysql client's --ssl-mode
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    server_public_key: bytes | None = field(default=None, repr=False)  # pinned RSA key (server-public-key-path)
    connect_timeout: float = 5.0

    @property
    def address(self) -> str:
        return f"unix://{self.socket}" if self.socket else _join(self.host, self.port)

    def _ssl_arguments(self) -> dict:
        """PyMySQL's TLS arguments for the mode: PREFERRED is its own default (TLS whenever the server offers it)."""
        if self.socket or self.ssl_mode == "DISABLED":
            return {"ssl_disabled": True}
        if self.ssl_mode == "PREFERRED" and not self.ssl_cert:
            return {}
        context = ssl.create_default_context(cafile=self.ssl_ca)
        if self.ssl_cert:
            context.load_cert_chain(self.ssl_cert, self.ssl_key)
        context.check_hostname = self.ssl_mode == "VERIFY_IDENTITY"
        if self.ssl_mode not in ("VERIFY_CA", "VERIFY_IDENTITY"):
            context.verify_mode = ssl.CERT_NONE
        return {"ssl": context}

    def connect(self, read_timeout: float, connect_timeout: float | None = None) -> GuardedConnection:
        timeout = self.connect_timeout if connect_timeout is None else max(0.1, min(connect_timeout, self.connect_timeout))
        read_timeout = max(0.1, read_timeout)  # PyMySQL also bounds the handshake with it
        kwargs = dict(user=self.user, password=self.password.encode("utf-8"), connect_timeout=timeout,
                      read_timeout=read_timeout, write_timeout=read_timeout, autocommit=True,
                      charset="utf8mb4", program_name="innodb-exporter", server_public_key=self.server_public_key,
                      # A scrape sends its statements in one query (scrape.read_sources). They hold no
                      # operator or client input, and quote only plain names (sources.base.plain).
                      client_flag=CLIENT.MULTI_STATEMENTS, defer_connect=True, **self._ssl_arguments())
        if self.socket:
            kwargs["unix_socket"] = self.socket
        else:
            kwargs.update(host=self.host, port=self.port)
        conn = GuardedConnection(**kwargs)
        conn.pinned_public_key = self.server_public_key
        conn.connect()
        return conn


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def set_query_timeout(conn, seconds: float) -> None:
    """Bound the next query by the time left in this scrape.

    PyMySQL applies its read timeout to every socket read and re-reads the attribute each time, so
    lowering it per query bounds a hung server without a thread per query.
    """
    conn._read_timeout = max(0.05, seconds)


def error_code(exc: BaseException) -> int | None:
    if isinstance(exc, pymysql.err.MySQLError) and exc.args and isinstance(exc.args[0], int):
        return exc.args[0]
    return None


def describe(exc: BaseException, settings: ConnectionSettings) -> tuple[str, str]:
    """(kind, message) for an error; kind is one of access_denied, auth_refused, too_many_connections,
    privilege, missing, connection, other.

    The server's own text is kept (it names the user and the missing privilege, never the password).
    """
    code = error_code(exc)
    if isinstance(exc, pymysql.err.MySQLError) and len(exc.args) > 1:
        server_text = str(exc.args[1])
    else:
        server_text = str(exc.args[0]) if exc.args else type(exc).__name__
    if settings.password:  # belt and braces: no library message may ever carry it out
        server_text = server_text.replace(settings.password, "<secret>")
    if isinstance(exc, AuthRefused):
        return "auth_refused", f"not logging in to {settings.address}: {server_text}"
    if code in ACCESS_DENIED:
        return "access_denied", (f"access denied connecting to {settings.address}: {server_text} "
                                 "(check --mysqld.username and the password in MYSQLD_EXPORTER_PASSWORD or the my.cnf)")
    if code in TOO_MANY_CONNECTIONS:
        return "too_many_connections", (f"{settings.address} refused a connection: {TOO_MANY_CONNECTIONS[code]} "
                                        f"({server_text})")
    if code in PRIVILEGE:
        return "privilege", f"missing privilege: {server_text} (the grants are in README.md)"
    if code in MISSING:
        return "missing", f"not available on this server: {server_text}"
    if code in CONNECTION or isinstance(exc, (OSError, pymysql.err.InterfaceError)):
        return "connection", f"cannot reach {settings.address}: {server_text}"
    return "other", f"{type(exc).__name__}: {server_text}"
