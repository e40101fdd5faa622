"""The exporter's HTTP server: a WSGI app served over HTTP/1.1, with TLS and basic auth from the web config,
built to be exposed to clients that are not Prometheus.

Design. Connections live on one asyncio event loop (epoll): an idle or half-open connection costs a few
kilobytes and no thread, so a thousand of them cannot starve anything. HTTP/1.1 is parsed by ``h11``
(maintained, no I/O of its own, with a bound on the size of a request head), its lenient choices made strict
by web/framing.py.
The WSGI app runs in a small pool of threads, because a scrape blocks on database I/O until its deadline;
the event loop only moves bytes. Basic auth is checked here, before the app runs, with bcrypt in a pool of
its own. Every wait has a deadline: the TLS handshake, the request head, the keep-alive gap, the body,
each write.

Why not a server library: measured (benchmarks/http_server_benchmark.py, figures in docs/http.md). cheroot
and gunicorn's gthread worker hold a thread per connection while its head is read, with a timeout per read:
100 slowloris clients stopped every scrape, and idle connections are not closed to make room; hypercorn
survives both floods but closes neither kind of connection (its read timeout waits for the keep-alive
timer) and bounds no connections; none asks for a client certificate
without verifying it, matches client_allowed_sans, or refuses the framing web/framing.py refuses.
``h11`` is the part worth not writing ourselves (it is what uvicorn and hypercorn parse HTTP/1.1 with);

Limits (``Limits``; the defaults are the exporter's):
- connections: at most ``max_connections`` (and never more than the open-files limit allows, which
  ``open()`` first raises to its hard limit, as Go does). A new connection over the bound closes the
  connection that has been idle longest, idle meaning it has not sent a complete request (still in its TLS
  handshake, its head or its body, or waiting between keep-alive requests); one being answered is never
  closed for that. When every connection is busy, the new one is closed.
- listen backlog ``backlog`` (4096; the kernel caps it at net.core.somaxconn), SO_REUSEADDR.
- deadlines: TLS handshake ``handshake_timeout``; the request head ``head_timeout`` from the connection's
  start, or from its first byte on a kept-alive connection, which may wait ``idle_timeout`` for that byte;
  the body ``body_timeout``; each write ``write_timeout``.
- sizes: request head ``max_head_bytes`` (431 beyond), body ``max_body_bytes`` (413 beyond), and all bodies
  buffered at once ``max_buffered_body_bytes`` (503 beyond), so that slow uploads cannot take the memory.
- the web config's ``rate_limit``: one token bucket for every request, before authentication (429 beyond);
  its ``client_allowed_sans``: checked right after the TLS handshake, a refused client closed unanswered.
- basic auth: a request without valid credentials never reaches the app (401). Credentials that succeeded
  recently pass without bcrypt; otherwise the client address spends a token of its ``AttemptLimiter``
  (429 and Retry-After when it has none, without running bcrypt), and bcrypt runs in ``auth_workers``
  threads with at most ``auth_queue`` checks waiting (429 beyond). ``REMOTE_USER`` is set on success.

The app gets a buffered ``wsgi.input`` and its answer is buffered whole before it is sent (scrape answers are
small), so its threads never wait on a client. Responses carry the web config's ``http_server_config``
headers. No access log; debug level logs one line per failed connection (TLS errors, timeouts, resets),
never a traceback.

Use: ``serve(app, host=..., port=..., web=...)`` blocks and returns after SIGTERM or SIGINT, which it
handles itself: it stops listening, closes idle connections, gives requests in flight ``grace`` seconds to
finish (their answers say ``Connection: close``), then closes the rest. Tests use ``Server``:
``port = server.start()`` serves from a thread, ``server.stop()`` shuts down the same way.
"""

from __future__ import annotations

import asyncio
import errno
import io
import logging
import math
import os
import queue
import resource
import signal
import socket
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import unquote

import h11

from . import tls
from .config import BasicAuth, RateLimiter, WebConfig, parse_basic
from .framing import BadFraming, ChunkedBody, check_head

log = logging.getLogger("innodb_exporter")

READ_SIZE = 64 * 1024
RESERVED_FDS = 128  # kept for database connections, files and the listener when capping connections
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}
REALM = 'Basic realm="innodb-exporter"'


@dataclass(frozen=True)
class Limits:
    max_connections: int = 1024
    backlog: int = 4096
    handshake_timeout: float = 5.0
    head_timeout: float = 5.0
    idle_timeout: float = 120.0  # above Prometheus' default scrape interval (1m), so that its connection is reused
    body_timeout: float = 30.0
    write_timeout: float = 30.0
    max_head_bytes: int = 16 * 1024
    max_body_bytes: int = 1024 * 1024
    max_buffered_body_bytes: int = 64 * 1024 * 1024
    workers: int = 64  # app threads: requests waiting for a scrape at once (a hung server holds one per request)
    auth_workers: int = 2  # bcrypt threads (bcrypt releases the GIL: real parallelism, so no more than cores)
    auth_queue: int = 64
    grace: float = 5.0


def raise_open_files_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (Go's runtime does this at start); the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.debug("cannot raise the open files limit from %d to %d: %s", soft, target, exc)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def listen_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A listening socket with SO_REUSEADDR. ``host`` "" listens on every address, IPv6 and IPv4 alike."""
    if not host:
        if socket.has_dualstack_ipv6():
            return socket.create_server(("", port), family=socket.AF_INET6, backlog=backlog, dualstack_ipv6=True)
        return socket.create_server(("", port), family=socket.AF_INET, backlog=backlog)
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    return socket.create_server(address, family=family, backlog=backlog)


class _Pool:
    """Daemon threads that run blocking calls for the event loop, at most ``size`` at a time, started as work
    needs them (an idle exporter holds a few, not ``size``). Daemon threads, so that a call still stuck on a
    database after shutdown does not keep the process from exiting."""

    def __init__(self, size: int, name: str):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._size, self._name = size, name
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a job
        self._waiting = 0  # jobs no thread has taken yet
        self._mu = threading.Lock()

    def start(self) -> None:
        """Nothing to start: threads come with the first jobs."""

    def stop(self) -> None:
        with self._mu:
            for _ in self._threads:
                self._jobs.put(None)

    async def run(self, fn, *args):
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._mu:
            self._waiting += 1
            if self._waiting > self._idle and len(self._threads) < self._size:
                thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                self._idle += 1
                thread.start()
        self._jobs.put((loop, future, fn, args))
        return await future

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            with self._mu:
                self._idle -= 1
                self._waiting -= 1
            self._run(*job)
            with self._mu:
                self._idle += 1

    @staticmethod
    def _run(loop, future, fn, args) -> None:
        if future.cancelled():  # its connection went away while it waited
            return
        try:
            outcome = (fn(*args), None)
        except BaseException as exc:  # handed to the awaiting coroutine, which decides
            outcome = (None, exc)
        try:
            loop.call_soon_threadsafe(_settle, future, *outcome)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass


def _settle(future: asyncio.Future, result, exc) -> None:
    if not future.done():
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)


class _TLSContexts:
    """The server's SSL context, rebuilt when the certificate, key or CA files change, so that certificates
    can be rotated without a restart (exporter-toolkit re-reads them for every connection)."""

    CHECK_EVERY = 1.0

    def __init__(self, web: WebConfig):
        self.web = web
        self._stamp = self._stat()
        self._context = web.ssl_context()
        self._checked = time.monotonic()

    def _stat(self):
        try:
            return tuple((s.st_mtime_ns, s.st_size, s.st_ino) for s in map(os.stat, self.web.tls_files()))
        except OSError:
            return None

    def current(self) -> ssl.SSLContext:
        now = time.monotonic()
        if now - self._checked >= self.CHECK_EVERY:
            self._checked = now
            stamp = self._stat()
            if stamp is not None and stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._context = self.web.ssl_context()
                    log.info("reloaded the TLS certificate from %s", self.web.cert_file)
                except (ssl.SSLError, OSError, ValueError) as exc:
                    log.warning("cannot reload the TLS files %s: %s; still serving the previous certificate",
                                ", ".join(self.web.tls_files()), getattr(exc, "reason", None) or exc)
        return self._context


class _Conn:
    __slots__ = ("task", "writer", "client", "port")

    def __init__(self, task, writer):
        self.task, self.writer = task, writer
        peer = writer.get_extra_info("peername") or ("", 0)
        client = str(peer[0])
        self.client = client[7:] if client.startswith("::ffff:") else client  # IPv4 on a dual-stack socket
        self.port = peer[1] if len(peer) > 1 else 0


class _Reject(Exception):
    """An answer the server gives itself (4xx/5xx) instead of running the app."""

    def __init__(self, status: int, message: str, headers=(), close: bool = True):
        super().__init__(message)
        self.status, self.headers, self.close = status, list(headers), close


class Server:
    def __init__(self, app, *, host: str, port: int, web: WebConfig = WebConfig(), limits: Limits = Limits(),
                 auth: BasicAuth | None = None):
        """``host`` "" listens on every address (IPv6 and IPv4); ``port`` 0 picks a free one (see ``port``)."""
        self.app, self.host, self.port, self.web, self.limits = app, host, port, web, limits
        self.auth = auth if auth is not None else BasicAuth(web.users, concurrency=limits.auth_workers)
        self.rate_limit = RateLimiter(web.rate_limit) if web.rate_limit is not None else None
        self.max_connections = limits.max_connections
        self.scheme = "https" if web.tls else "http"
        self._tls = _TLSContexts(web) if web.tls else None
        self._conns: dict[_Conn, None] = {}
        self._idle: OrderedDict[_Conn, None] = OrderedDict()  # longest idle first
        self._app_pool = _Pool(limits.workers, "wsgi")
        self._auth_pool = _Pool(limits.auth_workers, "bcrypt")
        self._auth_waiting = 0
        self._buffered = 0  # body bytes held in memory by all requests
        self._lingering: set[asyncio.BaseTransport] = set()  # closed gracefully, not yet gone
        self._servers: list[asyncio.AbstractServer] = []
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None

    # --- running ----------------------------------------------------------------------------

    async def open(self) -> int:
        """Listen and serve in the running loop; the port listened on."""
        loop = self._loop = asyncio.get_running_loop()
        loop.set_exception_handler(_loop_exception)
        soft = raise_open_files_limit()
        self.max_connections = max(1, min(self.limits.max_connections, soft - RESERVED_FDS))
        if self.max_connections < self.limits.max_connections:
            log.info("serving at most %d connections: the open files limit is %d", self.max_connections, soft)
        sock = listen_socket(self.host, self.port, self.limits.backlog)
        try:
            server = await asyncio.start_server(self._connection, sock=sock, backlog=self.limits.backlog,
                                                limit=READ_SIZE)
        except BaseException:
            sock.close()
            raise
        self._servers.append(server)
        self.port = sock.getsockname()[1]
        self._app_pool.start()
        self._auth_pool.start()
        shown = f"[{self.host}]" if ":" in self.host else (self.host or "[::]")
        log.info("listening on %s://%s:%d", self.scheme, shown, self.port)
        return self.port

    async def close(self) -> None:
        """Stop listening, close idle connections, let requests in flight finish within ``grace``, close the rest."""
        if self._closing:
            return
        self._closing = True
        for server in self._servers:
            server.close()
        for conn in list(self._idle):
            self._evict(conn)
        tasks = [conn.task for conn in self._conns]
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=self.limits.grace)
            for conn in [c for c in self._conns if c.task in late]:
                log.info("closing a connection from %s whose request did not finish within %.0fs of shutdown",
                         conn.client, self.limits.grace)
                self._evict(conn)
            await asyncio.wait(tasks, timeout=1.0)
        for transport in list(self._lingering):
            transport.abort()
        for server in self._servers:
            try:
                async with asyncio.timeout(2.0):
                    await server.wait_closed()
            except TimeoutError:
                log.debug("a connection was still closing at shutdown")
        self._app_pool.stop()
        self._auth_pool.stop()

    async def run(self, stop: asyncio.Event, ready=None) -> None:
        """Serve until ``stop`` is set, then close. ``ready`` is called with the port once listening."""
        self._stop = stop
        try:
            port = await self.open()
            if ready:
                ready(port)
            await stop.wait()
        finally:
            await self.close()

    def start(self) -> int:
        """Serve from a thread of its own; the port listened on. For tests and embedding."""
        started: dict = {}
        ready = threading.Event()

        def main():
            async def body():
                try:
                    await self.run(asyncio.Event(), ready=lambda port: (started.update(port=port), ready.set()))
                except BaseException as exc:
                    started["error"] = exc
                    ready.set()
            asyncio.run(body())

        self._thread = threading.Thread(target=main, name="webserver", daemon=True)
        self._thread.start()
        ready.wait()
        if "error" in started:
            raise started["error"]
        return started["port"]

    def stop(self) -> None:
        """Shut down as on SIGTERM (see ``close``) and wait until done. Safe to call twice."""
        if self._thread is None:
            return
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:  # the loop has already finished
                pass
        self._thread.join()
        self._thread = None

    @property
    def connections(self) -> int:
        return len(self._conns)

    # --- connections ------------------------------------------------------------------------

    def _admit(self, conn: _Conn) -> bool:
        if self._closing:
            return False
        while len(self._conns) >= self.max_connections:
            if not self._idle:  # every connection is being answered: the newcomer waits for none of them
                log.debug("refused a connection from %s: %d connections, all busy", conn.client, len(self._conns))
                return False
            oldest = next(iter(self._idle))
            log.debug("closed the longest idle connection, from %s, for one from %s", oldest.client, conn.client)
            self._evict(oldest)
        self._conns[conn] = None
        self._idle[conn] = None
        return True

    def _evict(self, conn: _Conn) -> None:
        self._conns.pop(conn, None)
        self._idle.pop(conn, None)
        conn.writer.transport.abort()
        conn.task.cancel()

    def _set_idle(self, conn: _Conn, idle: bool) -> None:
        if conn not in self._conns:
            return
        if idle:
            self._idle[conn] = None
            self._idle.move_to_end(conn)
        else:
            self._idle.pop(conn, None)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Conn(asyncio.current_task(), writer)
        if not self._admit(conn):
            writer.transport.abort()
            return
        graceful = False
        try:
            if self._tls is not None:
                await writer.start_tls(self._tls.current(), ssl_handshake_timeout=self.limits.handshake_timeout)
                refusal = tls.client_refusal(self.web, writer.get_extra_info("ssl_object"))
                if refusal is not None:  # exporter-toolkit fails this client's handshake; we close before a request
                    log.debug("connection from %s:%s closed: %s", conn.client, conn.port, refusal)
                    return
            await self._requests(conn, reader, writer)
            graceful = True
        except asyncio.CancelledError:  # evicted, or shut down after the grace period
            pass
        except (OSError, EOFError, TimeoutError, h11.ProtocolError) as exc:  # ssl.SSLError is an OSError
            log.debug("connection from %s:%s closed: %s", conn.client, conn.port, _describe(exc))
        finally:
            self._conns.pop(conn, None)
            self._idle.pop(conn, None)
            self._close(writer, graceful)

    def _close(self, writer: asyncio.StreamWriter, graceful: bool) -> None:
        """Close now, or gracefully (a last write, a TLS close_notify) with an abort if that stalls."""
        transport = writer.transport
        if not graceful:
            transport.abort()
            return
        writer.close()
        self._lingering.add(transport)

        def give_up():
            self._lingering.discard(transport)
            transport.abort()
        asyncio.get_running_loop().call_later(2.0, give_up)

    async def _requests(self, conn: _Conn, reader, writer) -> None:
        limits = self.limits
        h = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_head_bytes)
        first = True
        while True:
            if not first:  # idle again, from now (the first request's idle time counts from the accept)
                self._set_idle(conn, True)
            try:
                request = await self._read_head(h, reader, first)
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint if exc.error_status_hint >= 400 else 400
                log.debug("bad request from %s: %s", conn.client, exc)
                # Our own findings say what was wrong; h11's would echo the client's bytes.
                text = f"{_REASONS[status]}: {exc}\n" if isinstance(exc, BadFraming) else _message(status)
                await self._send(h, writer, None, _Reject(status, text))
                return await self._linger(conn, reader, writer)
            if not isinstance(request, h11.Request):  # closed, or no request in time
                return
            first = False
            # h11 bounds only a head still incomplete; one that arrived whole in a single read is measured here.
            if _head_size(request) > limits.max_head_bytes:
                await self._send(h, writer, request, _Reject(431, _message(431)))
                return await self._linger(conn, reader, writer)
            try:
                keep_going = await self._exchange(conn, h, reader, writer, request)
            except _Reject as reject:
                await self._send(h, writer, request, reject)
                # Answered before reading a request that has no body: take its end, and the connection stays.
                keep_going = not reject.close and (h.their_state is h11.DONE or (
                    h.their_state is h11.SEND_BODY and isinstance(h.next_event(), h11.EndOfMessage)))
                if not keep_going and h.their_state is not h11.DONE:
                    return await self._linger(conn, reader, writer)
            if not keep_going or self._closing or h.our_state is not h11.DONE or h.their_state is not h11.DONE:
                return
            h.start_next_cycle()

    async def _linger(self, conn: _Conn, reader, writer) -> None:
        """After answering a request that was not read to its end: stop sending, and drop what the client still
        sends for a moment, so that it reads the answer rather than a reset (Go's server does the same)."""
        self._set_idle(conn, True)
        if writer.can_write_eof():
            writer.write_eof()
        try:
            async with asyncio.timeout(1.0):
                while await reader.read(READ_SIZE):
                    pass
        except (TimeoutError, OSError):
            pass

    async def _read_head(self, h: h11.Connection, reader, first: bool):
        """The next h11.Request, or None when the client closed or sent nothing in time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.limits.head_timeout if first else self.limits.idle_timeout)
        started = first
        data = b"\n"  # what a pipelined head already in h11's buffer is checked for
        while True:
            if b"\n" in data:  # only a line end can complete a head: checked once, not byte by byte
                check_head(h.trailing_data[0])
            event = h.next_event()
            if event is not h11.NEED_DATA:
                return event
            try:
                async with asyncio.timeout_at(deadline):
                    data = await reader.read(READ_SIZE)
            except TimeoutError:
                return None
            if not started:  # the kept-alive connection's next request has begun: its head must come quickly
                started = True
                deadline = loop.time() + self.limits.head_timeout
            h.receive_data(data)

    async def _exchange(self, conn: _Conn, h: h11.Connection, reader, writer, request: h11.Request) -> bool:
        headers = _headers(request)
        has_body = "transfer-encoding" in headers or headers.get("content-length", "0") != "0"
        if self.rate_limit is not None and not self.rate_limit.allow():  # the web config's rate_limit, before auth
            raise _Reject(429, "Too Many Requests\n", close=has_body)
        length = headers.get("content-length")
        if length is not None and int(length) > self.limits.max_body_bytes:
            raise _Reject(413, f"Request body over {self.limits.max_body_bytes} bytes\n")
        user = await self._authenticate(conn, headers, has_body) if self.auth.enabled else None
        if h.they_are_waiting_for_100_continue:
            await self._write(writer, h.send(h11.InformationalResponse(status_code=100, headers=[])))
        body = await self._read_body(h, reader, chunked="transfer-encoding" in headers)
        try:
            self._set_idle(conn, False)  # a complete request: answered, never evicted
            environ = self._environ(conn, request, headers, body, user)
            try:
                status, app_headers, payload = await self._app_pool.run(self._call_app, environ)
            except Exception as exc:
                log.error("the app failed on %s %s", request.method.decode(), environ["PATH_INFO"], exc_info=exc)
                raise _Reject(500, _message(500)) from None
        finally:
            self._buffered -= len(body)
        await self._send(h, writer, request, None, status, app_headers, payload)
        return True

    async def _authenticate(self, conn: _Conn, headers: dict, has_body: bool) -> str:
        denied = _Reject(401, "Unauthorized\n", [("WWW-Authenticate", REALM)], close=has_body)
        credentials = parse_basic(headers.get("authorization", ""))
        if credentials is None:
            raise denied
        user, password = credentials
        if self.auth.cached(user, password):
            return user
        wait = self.auth.limiter.take(conn.client)
        if wait:
            log.debug("too many failed logins from %s: 429 for %.0fs", conn.client, wait)
            raise _Reject(429, "Too many failed logins\n", [("Retry-After", str(math.ceil(wait)))], close=has_body)
        if self._auth_waiting >= self.limits.auth_queue:
            self.auth.limiter.give_back(conn.client)  # our overload, not the client's failure
            raise _Reject(429, "Too many logins at once\n", [("Retry-After", "1")], close=has_body)
        self._auth_waiting += 1
        try:
            ok = await self._auth_pool.run(self.auth.check, user, password)
        finally:
            self._auth_waiting -= 1
        if not ok:
            raise denied
        self.auth.limiter.give_back(conn.client)
        return user

    async def _read_body(self, h: h11.Connection, reader, chunked: bool) -> bytes:
        """The whole body; its bytes count in ``_buffered`` until the caller gives them back."""
        limits, parts, held = self.limits, [], 0
        chunks = ChunkedBody(limits.max_body_bytes) if chunked else None
        try:
            async with asyncio.timeout(limits.body_timeout):
                while True:
                    if chunks is not None and not chunks.check(h.trailing_data[0]):
                        data = await reader.read(READ_SIZE)  # the rest of a chunk-size line, before h11 reads it
                        if not data:
                            raise EOFError("closed before the end of the request")
                        h.receive_data(data)
                        continue
                    event = h.next_event()
                    if chunks is not None:
                        chunks.seen(event)
                    if event is h11.NEED_DATA:
                        h.receive_data(await reader.read(READ_SIZE))
                    elif isinstance(event, h11.Data):
                        if held + len(event.data) > limits.max_body_bytes:
                            raise _Reject(413, f"Request body over {limits.max_body_bytes} bytes\n")
                        if self._buffered + len(event.data) > limits.max_buffered_body_bytes:
                            raise _Reject(503, "Too many request bodies at once\n", [("Retry-After", "1")])
                        self._buffered += len(event.data)
                        held += len(event.data)
                        parts.append(event.data)
                    elif isinstance(event, h11.EndOfMessage):
                        return b"".join(parts)
                    else:  # ConnectionClosed: h11 raises for a body cut short, so this is a clean close
                        raise EOFError("closed before the end of the request")
        except BaseException as exc:
            self._buffered -= held
            if isinstance(exc, TimeoutError):
                raise _Reject(408, "Request body too slow\n") from None
            if isinstance(exc, BadFraming):
                status = exc.error_status_hint
                raise _Reject(status, f"{_REASONS[status]}: {exc}\n") from None
            if isinstance(exc, h11.RemoteProtocolError):
                raise _Reject(400, "Bad request body\n") from None
            raise

    def _environ(self, conn: _Conn, request: h11.Request, headers: dict, body: bytes, user: str | None) -> dict:
        target = request.target.decode("latin-1")
        if "://" in target.split("?", 1)[0]:  # absolute form: keep the path and the query
            target = "/" + target.split("://", 1)[1].partition("/")[2]
        path, _, query = target.partition("?")
        sockname = conn.writer.get_extra_info("sockname") or ("", self.port)
        environ = {
            "REQUEST_METHOD": request.method.decode("ascii"),
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote(path, "latin-1"),
            "QUERY_STRING": query,
            "SERVER_NAME": str(sockname[0]),
            "SERVER_PORT": str(sockname[1]),
            "SERVER_PROTOCOL": "HTTP/" + request.http_version.decode("ascii"),
            "REMOTE_ADDR": conn.client,
            "REMOTE_PORT": str(conn.port),
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": self.scheme,
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": _LogStream(),
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        for name, value in headers.items():
            if "_" in name:  # X_Foo would pose as X-Foo in the environ
                continue
            if name == "content-type":
                environ["CONTENT_TYPE"] = value
            elif name != "content-length":
                environ["HTTP_" + name.upper().replace("-", "_")] = value
        if user is not None:
            environ["REMOTE_USER"] = user
        return environ

    def _call_app(self, environ: dict) -> tuple[str, list, bytes]:
        """Run the app in a pool thread and collect its whole answer."""
        started: dict = {}
        chunks: list[bytes] = []

        def start_response(status, headers, exc_info=None):
            if started and not exc_info:
                raise AssertionError("start_response called twice without exc_info")
            started.update(status=status, headers=list(headers))
            return chunks.append

        result = self.app(environ, start_response)
        try:
            chunks.extend(bytes(chunk) for chunk in result)
        finally:
            if hasattr(result, "close"):
                result.close()
        if not started:
            raise RuntimeError("the app returned without calling start_response")
        return started["status"], started["headers"], b"".join(chunks)

    # --- answers ----------------------------------------------------------------------------

    async def _send(self, h: h11.Connection, writer, request: h11.Request | None, reject: _Reject | None,
                    status: str = "", app_headers=(), body: bytes = b"") -> None:
        if reject is not None:
            code, reason = reject.status, _REASONS.get(reject.status, "Error")
            app_headers = [("Content-Type", "text/plain; charset=utf-8"), *reject.headers]
            body = str(reject).encode()
            close = reject.close
        else:
            code, reason = int(status[:3]), status[4:]
            close = False
        if h.our_state not in (h11.IDLE, h11.SEND_RESPONSE):  # h11 has already given up on this connection
            return
        head_only = (request is not None and request.method == b"HEAD") or code in (204, 304)
        headers = [(n, v) for n, v in app_headers if n.lower() not in HOP_BY_HOP and n.lower() != "content-length"]
        configured = {name.lower() for name, _ in self.web.headers}
        headers = [(n, v) for n, v in headers if n.lower() not in configured] + list(self.web.headers)
        app_length = next((v for n, v in app_headers if n.lower() == "content-length"), None)
        headers.append(("Content-Length", app_length if head_only and app_length else str(len(body))))
        if close or self._closing:
            headers.append(("Connection", "close"))
        try:
            response = h11.Response(status_code=code, reason=reason.encode("latin-1"),
                                    headers=[(n.encode("latin-1"), v.encode("latin-1")) for n, v in headers])
        except (h11.LocalProtocolError, UnicodeEncodeError, ValueError) as exc:
            if reject is not None:
                raise
            log.error("the app answered with a response that cannot be sent (%s): 500 instead", exc)
            return await self._send(h, writer, request, _Reject(500, _message(500)))
        data = h.send(response)
        if body and not head_only:
            data += h.send(h11.Data(data=body))
        data += h.send(h11.EndOfMessage())
        await self._write(writer, data)

    async def _write(self, writer, data: bytes) -> None:
        if writer.transport.is_closing():
            raise ConnectionResetError("the client went away before the answer")
        writer.write(data)
        async with asyncio.timeout(self.limits.write_timeout):
            await writer.drain()


class _LogStream:
    """wsgi.errors: what the app writes there goes to the log, one line per write."""

    def write(self, text: str) -> None:
        if text.strip():
            log.warning("%s", text.rstrip())

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass


_REASONS = {400: "Bad Request", 401: "Unauthorized", 408: "Request Timeout", 413: "Content Too Large",
            429: "Too Many Requests", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
            501: "Not Implemented", 503: "Service Unavailable"}


def _message(status: int) -> str:
    return _REASONS.get(status, "Error") + "\n"


def _head_size(request: h11.Request) -> int:
    """The request head's size as sent: request line, and each header line with its colon and CRLF."""
    return len(request.method) + len(request.target) + 12 + sum(len(n) + len(v) + 4 for n, v in request.headers)


def _headers(request: h11.Request) -> dict[str, str]:
    """Lower-case header names -> values; repeated headers joined with commas, as WSGI wants."""
    headers: dict[str, str] = {}
    for name, value in request.headers:
        key, text = name.decode("latin-1"), value.decode("latin-1")
        headers[key] = f"{headers[key]},{text}" if key in headers else text
    return headers


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return f"TLS: {exc.reason or exc}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _loop_exception(loop, context) -> None:
    """asyncio's reports about connections: one line, no traceback; a bug in a callback keeps its traceback."""
    exc = context.get("exception")
    message = context.get("message", "")
    if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
        log.warning("out of file descriptors (%s); accepting again in a second", exc)
    elif exc is None or isinstance(exc, (OSError, EOFError, asyncio.CancelledError)):
        log.debug("%s%s", message, f": {_describe(exc)}" if exc else "")
    else:
        log.error("%s", message, exc_info=exc)


def serve(app, *, host: str, port: int, web: WebConfig = WebConfig(), limits: Limits = Limits()) -> None:
    """Serve ``app`` until SIGTERM or SIGINT, then shut down gracefully and return (the caller exits 0).

    Handles both signals itself, so it must run in the main thread. Raises OSError when it cannot listen.
    """
    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, _on_signal, stop, sig)
        try:
            await Server(app, host=host, port=port, web=web, limits=limits).run(stop)
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    asyncio.run(main())


def _on_signal(stop: asyncio.Event, sig: signal.Signals) -> None:
    if not stop.is_set():
        log.info("shutting down on %s", sig.name)
        stop.set()
