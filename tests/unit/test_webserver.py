"""The HTTP server (webserver.py) on real sockets: WSGI environ, limits and deadlines, the connection bound,
basic auth with its rate limit, response headers, listening, and a clean stop."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import bcrypt
import pytest

from innodb_exporter.web import server as webserver
from innodb_exporter.web.config import AttemptLimiter, BasicAuth, WebConfig
from innodb_exporter.web.server import Limits, Server
from support.servers import free_port, wait_for

webserver.raise_open_files_limit()  # this process holds both ends of a thousand connections

# How long a test waits for something before it gives up: only so that a broken server fails the test instead
# of hanging it. No test measures a duration; each waits for an event (a close, an answer, a counter).
HANG_GUARD = 30.0


def echo_app(environ, start_response):
    """Answers the environ's text values and the body's length, as JSON."""
    body = environ["wsgi.input"].read()
    answer = {k: v for k, v in environ.items() if isinstance(v, str)}
    answer["body_length"] = len(body)
    data = json.dumps(answer).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("X-Frame-Options", "from-the-app")])
    return [data]


@contextlib.contextmanager
def running(app=echo_app, **kwargs):
    kwargs.setdefault("host", "127.0.0.1")
    server = Server(app, port=0, **kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def get(port, path="/", headers=None, method="GET", body=None, source="127.0.0.1", timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def raw(port, data=b"", host="127.0.0.1"):
    sock = socket.create_connection((host, port), timeout=10)
    if data:
        sock.sendall(data)
    return sock


def read_all(sock) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def closed_by_peer(sock, within=0.0) -> bool:
    """True when the server has closed ``sock`` (EOF or reset) within ``within`` seconds."""
    sock.settimeout(within or 0.05)
    try:
        return sock.recv(65536) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except (socket.timeout, BlockingIOError):
        return False


def closed_now(socks) -> int:
    """How many of ``socks`` the server has closed already (their EOF or reset has arrived), without waiting."""
    poll = select.poll()  # not select(): the test process may hold descriptors past 1024
    for sock in socks:
        poll.register(sock, select.POLLIN)
    return len(poll.poll(0))  # an idle socket the server keeps has nothing to read; a closed one has its EOF


# --- the WSGI side -----------------------------------------------------------------------------


def test_environ_carries_what_the_app_reads():
    with running() as server:
        status, _, body = get(server.port, "/me%74rics?target=db%3A3306&x=1",
                              {"Accept": "application/openmetrics-text", "Authorization": "Basic abc",
                               "X-Prometheus-Scrape-Timeout-Seconds": "9.5", "X_Prometheus_Scrape_Timeout_Seconds": "1"})
        environ = json.loads(body)
        assert status == 200
        assert environ["REQUEST_METHOD"] == "GET" and environ["PATH_INFO"] == "/metrics"
        assert environ["QUERY_STRING"] == "target=db%3A3306&x=1"
        assert environ["HTTP_ACCEPT"] == "application/openmetrics-text"
        assert environ["HTTP_AUTHORIZATION"] == "Basic abc"  # no users configured: the header is the app's
        # The header spelled with underscores is dropped: it must not pose as the one with dashes.
        assert environ["HTTP_X_PROMETHEUS_SCRAPE_TIMEOUT_SECONDS"] == "9.5"
        assert environ["REMOTE_ADDR"] == "127.0.0.1" and environ["CONTENT_LENGTH"] == "0"
        assert environ["wsgi.url_scheme"] == "http" and "REMOTE_USER" not in environ

        status, _, body = get(server.port, "/hook", method="POST", body=b"a" * 1000,
                              headers={"Content-Type": "application/json"})
        environ = json.loads(body)
        assert (environ["REQUEST_METHOD"], environ["CONTENT_LENGTH"], environ["CONTENT_TYPE"]) == \
            ("POST", "1000", "application/json")
        assert environ["body_length"] == 1000


def fixed_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"the same answer for GET and HEAD\n"]


def test_head_gets_the_headers_of_get_and_no_body():
    with running(fixed_app) as server:
        _, _, get_body = get(server.port, "/")
        sock = raw(server.port, b"HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = read_all(sock)
        head, _, rest = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and rest == b""
        assert f"Content-Length: {len(get_body)}".encode() in head


def test_keep_alive_and_pipelined_requests_share_one_connection():
    with running() as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        for path in ("/a", "/b", "/c"):
            conn.request("GET", path)
            assert json.loads(conn.getresponse().read())["PATH_INFO"] == path
        assert server.connections == 1
        conn.close()
        sock = raw(server.port, b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = read_all(sock)
        assert answer.count(b"HTTP/1.1 200 OK") == 2 and b'"/1"' in answer and b'"/2"' in answer


def test_the_app_failing_answers_500_and_the_server_goes_on(caplog):
    def broken(environ, start_response):
        raise ValueError("a bug")

    with running(broken) as server:
        assert get(server.port)[0] == 500
        assert get(server.port)[0] == 500
    assert any("the app failed" in r.getMessage() for r in caplog.records)


# --- sizes and deadlines -----------------------------------------------------------------------


def test_a_body_up_to_1MB_reaches_the_app_and_a_bigger_one_gets_413():
    with running() as server:
        status, _, body = get(server.port, "/hook", method="POST", body=b"x" * (1 << 20))
        assert status == 200 and json.loads(body)["body_length"] == 1 << 20
        assert get(server.port, "/hook", method="POST", body=b"x" * ((1 << 20) + 1))[0] == 413
        # Chunked, so no Content-Length to refuse up front: counted as it arrives.
        chunk = b"x" * 65536
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(17)) + b"0\r\n\r\n"
        sock = raw(server.port, b"POST /hook HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            sock.sendall(chunked)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the end
        assert read_all(sock).startswith(b"HTTP/1.1 413")


def test_a_request_head_over_16KB_gets_431_whether_sent_at_once_or_slowly():
    with running() as server:
        assert get(server.port, headers={"X-Big": "y" * 20000})[0] == 431
        sock = raw(server.port, b"GET / HTTP/1.1\r\nHost: x\r\n")
        for _ in range(20):
            sock.sendall(b"X-Part: " + b"y" * 1000 + b"\r\n")
        assert read_all(sock).startswith(b"HTTP/1.1 431")
        assert get(server.port, headers={"X-Fine": "y" * 8000})[0] == 200


def test_garbage_gets_400():
    with running() as server:
        assert read_all(raw(server.port, b"HELLO\r\n\r\n")).startswith(b"HTTP/1.1 400")


# --- framing (RFC 9112): every badly framed request is refused and its connection closed ------------------

SECOND = b"GET /second HTTP/1.1\r\nHost: x\r\n\r\n"  # pipelined behind each bad request: never answered
BAD_FRAMING = {
    # Issue 28: the 400 came, but the connection stayed and answered what followed (request smuggling).
    "Content-Length with Transfer-Encoding": (400, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                                   b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    # Issue 28: no answer at all, the server waiting for 2^80 bytes until the body deadline.
    "a chunk size of 20 hex digits": (400, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                           b"FFFFFFFFFFFFFFFFFFFF\r\n"),
    "a chunk size over the body bound": (413, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                              b"FFFFFFFFFFFFFFFF\r\n"),
    "bare LF line endings": (400, b"GET / HTTP/1.1\nHost: x\n\n"),
    "a bare LF in one header line": (400, b"GET / HTTP/1.1\r\nHost: x\nX-A: 1\r\n\r\n"),
    "obsolete line folding": (400, b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  2\r\n\r\n"),
    "a chunk-size line ending in a bare LF": (400, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                                   b"\r\n1\nx\r\n0\r\n\r\n"),
    "chunk data not followed by CRLF": (400, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                             b"1\r\nxy0\r\n\r\n"),
    "trailer fields": (400, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"1\r\nx\r\n0\r\nX-Trailer: 1\r\n\r\n"),
    "Transfer-Encoding in HTTP/1.0": (400, b"POST / HTTP/1.0\r\nConnection: keep-alive\r\n"
                                           b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    "a Content-Length list": (400, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 1\r\n\r\nx"),
    "two equal Content-Lengths": (400, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
                                       b"Content-Length: 1\r\n\r\nx"),
    "chunked not the last coding": (400, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
    "a coding before chunked": (501, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                                     b"0\r\n\r\n"),
}


@pytest.mark.parametrize("status, request_bytes", BAD_FRAMING.values(), ids=BAD_FRAMING.keys())
def test_a_badly_framed_request_is_refused_and_its_connection_closed(status, request_bytes):
    app, calls = counting(echo_app)
    # Deadlines longer than the test waits: the answer and the close can only come from the framing check.
    limits = Limits(head_timeout=HANG_GUARD * 10, body_timeout=HANG_GUARD * 10, idle_timeout=HANG_GUARD * 10)
    with running(app, limits=limits) as server:
        sock = raw(server.port, request_bytes + SECOND)
        sock.settimeout(HANG_GUARD)
        answer = read_all(sock)  # returns only once the server has closed the connection
        assert answer.startswith(b"HTTP/1.%d %d" % (1, status)), answer[:200]
        assert answer.count(b"HTTP/1.1 ") == 1 and b"Connection: close" in answer
        assert calls == []  # neither the bad request nor the one behind it reached the app
        assert get(server.port)[0] == 200  # and the server goes on


def test_good_framing_still_passes_even_byte_by_byte():
    with running(limits=Limits(body_timeout=HANG_GUARD)) as server:
        body = b"5;name=value\r\nhello\r\n3\r\n, w\r\n0\r\n\r\n"  # a chunk extension, ignored
        sock = raw(server.port, b"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        for byte in body:  # every chunk-size line arriving in pieces
            sock.sendall(bytes([byte]))
        sock.sendall(b"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok" + SECOND)
        sock.settimeout(HANG_GUARD)
        answers = b""
        while answers.count(b"HTTP/1.1 200 OK") < 3:
            chunk = sock.recv(65536)
            assert chunk, answers
            answers += chunk
        assert b'"body_length": 8' in answers and b'"body_length": 2' in answers and b'"/second"' in answers
        assert server.connections == 1  # kept alive through all three


@pytest.mark.slow
def test_the_request_head_must_arrive_within_its_deadline_even_one_byte_at_a_time():
    # The keep-alive deadline is far longer than the test waits: a close can only come from the head's.
    with running(limits=Limits(head_timeout=0.6, idle_timeout=HANG_GUARD * 10)) as server:
        assert closed_by_peer(raw(server.port), within=HANG_GUARD)  # says nothing at all
        # Slowloris: a byte of a head that never ends every 50 ms, each far within the deadline. Were the deadline
        # renewed by every byte, the server would take them until the test gives up; it closes the connection.
        sock = raw(server.port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        give_up = time.monotonic() + HANG_GUARD
        with pytest.raises((BrokenPipeError, ConnectionResetError)):
            while time.monotonic() < give_up:
                sock.send(b"y")
                time.sleep(0.05)


@pytest.mark.slow
def test_idle_keep_alive_connections_close_and_a_new_request_gets_the_head_deadline():
    # Each deadline is tried with the other one longer than the test waits, so that a close names its deadline.
    with running(fixed_app, limits=Limits(head_timeout=0.5, idle_timeout=HANG_GUARD * 10)) as server:
        kept = raw(server.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert kept.recv(65536).startswith(b"HTTP/1.1 200")
        # A connection opened after ``kept`` went idle, saying nothing: its head deadline ends after ``kept`` has
        # been idle longer than a head deadline. Once it is closed, ``kept`` is still open, and is answered.
        assert closed_by_peer(raw(server.port), within=HANG_GUARD)
        kept.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert kept.recv(65536).startswith(b"HTTP/1.1 200")
        # The next request has begun: its head has the head deadline again, not the keep-alive one.
        kept.sendall(b"GET / HTTP/1.1\r\nHo")
        assert closed_by_peer(kept, within=HANG_GUARD)
    with running(fixed_app, limits=Limits(idle_timeout=0.5, head_timeout=HANG_GUARD * 10)) as server:
        kept = raw(server.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert kept.recv(65536).startswith(b"HTTP/1.1 200")
        assert closed_by_peer(kept, within=HANG_GUARD)  # idle past the keep-alive deadline


@pytest.mark.slow
def test_a_body_that_comes_too_slowly_gets_408():
    with running(limits=Limits(body_timeout=0.5)) as server:
        sock = raw(server.port, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        sock.settimeout(HANG_GUARD)
        assert read_all(sock).startswith(b"HTTP/1.1 408")  # the body deadline's answer, and nothing else's


def test_expect_100_continue():
    with running() as server:
        sock = raw(server.port, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n"
                                b"Connection: close\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 100")
        sock.sendall(b"hello")
        assert b'"body_length": 5' in read_all(sock)


# --- the connection bound ----------------------------------------------------------------------


class Gate:
    """An app that holds its requests until opened, to make connections busy; ``left`` is set when a request
    has left it."""

    def __init__(self):
        self.open, self.entered, self.left = threading.Event(), threading.Semaphore(0), threading.Event()

    def __call__(self, environ, start_response):
        self.entered.release()
        try:
            self.open.wait(HANG_GUARD)
            return echo_app(environ, start_response)
        finally:
            self.left.set()


def test_at_the_bound_the_longest_idle_connection_is_closed_and_busy_ones_are_not():
    gate = Gate()
    with running(gate, limits=Limits(max_connections=8)) as server:
        busy = raw(server.port, b"GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
        assert gate.entered.acquire(timeout=5)
        idle = [raw(server.port)]
        idle.append(raw(server.port, b"GET / HTTP/1.1\r\nHo"))  # a partial head is idle too
        for _ in range(5):
            idle.append(raw(server.port))
        wait_for(lambda: server.connections == 8, HANG_GUARD, interval=0.01, what="8 connections")
        newcomer = raw(server.port, b"GET /new HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert gate.entered.acquire(timeout=HANG_GUARD)  # the newcomer got in ...
        assert closed_by_peer(idle[0], within=HANG_GUARD)  # ... in place of the longest idle connection
        assert not any(closed_by_peer(s) for s in idle[1:])
        gate.open.set()
        assert b'"/new"' in read_all(newcomer)
        assert b'"/busy"' in busy.recv(65536)


def test_when_every_connection_is_busy_a_newcomer_is_closed():
    gate = Gate()
    with running(gate, limits=Limits(max_connections=2)) as server:
        busy = [raw(server.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") for _ in range(2)]
        for _ in busy:
            assert gate.entered.acquire(timeout=5)
        assert closed_by_peer(raw(server.port), within=HANG_GUARD)
        gate.open.set()
        assert all(s.recv(65536).startswith(b"HTTP/1.1 200") for s in busy)


@pytest.mark.slow
def test_a_thousand_idle_connections_do_not_delay_requests():
    """At the bound, a request does not wait for room: the longest idle connection is closed for it at once.
    The idle connections' head deadline is longer than the client waits, so a server that made a request wait
    for one of them to end would fail it, and none is closed by a deadline here, only by the bound."""
    with running(limits=Limits(max_connections=1024, head_timeout=HANG_GUARD * 10)) as server:
        idle = [raw(server.port) for _ in range(1024)]
        wait_for(lambda: server.connections == 1024, HANG_GUARD, interval=0.01, what="1024 idle connections")
        latencies = []  # shown, not asserted: they move with the machine's load
        for _ in range(20):
            started = time.monotonic()
            assert get(server.port, timeout=HANG_GUARD)[0] == 200
            latencies.append(time.monotonic() - started)
        assert server.connections <= 1024
        # Each idle connection closed for a newcomer was closed before that newcomer was answered.
        closed = closed_now(idle)
        for s in idle:
            s.close()
    print(f"1024 idle: request max {max(latencies) * 1000:.1f} ms, {closed} idle connections closed for them")
    assert 1 <= closed <= 20  # the bound made room, at most one idle connection per request, and kept the rest


# --- listening ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_busy_server_keeps_a_thousand_connections_waiting_in_its_backlog():
    with running() as server:
        # Hold the event loop, as a burst of work would, so that nothing is accepted until the test lets go.
        held, release = threading.Event(), threading.Event()
        server._loop.call_soon_threadsafe(lambda: (held.set(), release.wait(HANG_GUARD)))
        assert held.wait(HANG_GUARD)
        clients = []
        try:
            for _ in range(1000):
                sock = socket.socket()
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", server.port))
                clients.append(sock)
            # The kernel completes every handshake into the accept queue while nothing accepts. With a backlog
            # of 5 the rest would not: their SYNs are dropped while the queue is full, and it stays full.
            poll = select.poll()  # not select(): the test process may hold descriptors past 1024
            for sock in clients:
                poll.register(sock, select.POLLOUT)
            writable: set[int] = set()
            give_up = time.monotonic() + HANG_GUARD
            while len(writable) < len(clients) and time.monotonic() < give_up:
                writable |= {fd for fd, events in poll.poll(100) if events & select.POLLOUT}
            assert len(writable) == 1000 and all(s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 for s in clients)
            assert server.connections == 0  # none accepted yet: all of them wait in the backlog
        finally:
            release.set()
        for sock in clients:
            sock.setblocking(True)
            sock.settimeout(HANG_GUARD)
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answered = sum(read_all(s).startswith(b"HTTP/1.1 200") for s in clients)
        for sock in clients:
            sock.close()
    assert answered == 1000


def test_reuseaddr_lets_the_server_restart_on_its_port_at_once():
    with running() as server:
        port = server.port
        assert server._servers[0].sockets[0].getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) == 1
        get(port)  # the server closes first after Connection: close, leaving TIME_WAIT on its side
        get(port, headers={"Connection": "close"})
    server = Server(echo_app, host="127.0.0.1", port=port)
    assert server.start() == port  # no "address already in use"
    server.stop()


def test_ipv6_and_every_address():
    if not socket.has_ipv6:
        pytest.fail("this machine has no IPv6 loopback; the test needs ::1")
    with running(host="::1") as server:
        assert json.loads(read_all(raw(server.port, b"GET / HTTP/1.0\r\n\r\n", host="::1")).split(b"\r\n\r\n")[1])[
            "REMOTE_ADDR"] == "::1"
    with running(host="") as server:  # ':9207' in --web.listen-address
        for host, client in (("127.0.0.1", "127.0.0.1"), ("::1", "::1")):
            answer = read_all(raw(server.port, b"GET / HTTP/1.0\r\n\r\n", host=host))
            assert json.loads(answer.split(b"\r\n\r\n")[1])["REMOTE_ADDR"] == client


def test_the_open_files_limit_is_raised_to_the_hard_limit():
    code = ("import resource; from innodb_exporter.web.server import raise_open_files_limit as r; "
            "print(r(), resource.getrlimit(resource.RLIMIT_NOFILE)[1])")
    out = subprocess.run(["bash", "-c", f"ulimit -Sn 256 && {sys.executable} -c '{code}'"], capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    soft, hard = out.stdout.split()
    assert soft == hard and int(hard) > 256, out.stderr


# --- basic auth --------------------------------------------------------------------------------


def hashed(password: bytes, cost=4) -> bytes:
    return bcrypt.hashpw(password, bcrypt.gensalt(cost))


def counting(app):
    calls = []

    def wrapper(environ, start_response):
        calls.append(environ)
        return app(environ, start_response)
    return wrapper, calls


HEADERS = (("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "deny"))


def test_basic_auth_runs_before_the_app_and_sets_remote_user():
    app, calls = counting(echo_app)
    web = WebConfig(users={"prometheus": hashed(b"s3cret")}, headers=HEADERS)
    with running(app, web=web) as server:
        status, headers, _ = get(server.port)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
        assert headers["X-Frame-Options"] == "deny"  # the configured headers are on refusals too
        assert get(server.port, headers=basic("prometheus", "wrong"))[0] == 401
        assert get(server.port, headers={"Authorization": "Basic !!!"})[0] == 401
        assert get(server.port, headers={"Authorization": "Bearer x"})[0] == 401
        assert calls == []
        status, headers, body = get(server.port, headers=basic("prometheus", "s3cret"))
        assert status == 200 and json.loads(body)["REMOTE_USER"] == "prometheus"
        assert len(calls) == 1


def test_a_refusal_keeps_the_connection_of_a_request_without_a_body():
    web = WebConfig(users={"prometheus": hashed(b"pw")})
    with running(web=web) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        conn.request("GET", "/")
        response = conn.getresponse()
        assert response.status == 401 and response.read()
        conn.request("GET", "/", headers=basic("prometheus", "pw"))
        assert conn.getresponse().status == 200
        assert server.connections == 1


def recording_bcrypt(monkeypatch) -> list[bytes]:
    """The hashes bcrypt.checkpw is run against from now on, in order (the work of a check is that of its
    hash's cost)."""
    checked: list[bytes] = []
    real = bcrypt.checkpw

    def checkpw(password, hashed_password):
        checked.append(hashed_password)
        return real(password, hashed_password)
    monkeypatch.setattr(bcrypt, "checkpw", checkpw)
    return checked


def test_unknown_and_known_users_cost_the_same(monkeypatch):
    """A wrong password costs one bcrypt check of the users' cost whether the user exists or not. Before: no
    bcrypt for an unknown user (0.5 ms against 58 ms), which told a guesser which users exist."""
    cost = b"06"  # not bcrypt's default (12) nor that of hashed() (04): a dummy hash of either would show
    users = {"prometheus": hashed(b"right", int(cost))}
    auth = BasicAuth(users, limiter=AttemptLimiter(burst=1000))
    checked = recording_bcrypt(monkeypatch)
    with running(web=WebConfig(users=users), auth=auth) as server:
        for user, password in [("prometheus", "wrong"), ("nobody", "wrong"), ("", "")]:
            ran = len(checked)
            assert get(server.port, headers=basic(user, password))[0] == 401
            assert len(checked) == ran + 1, f"{user!r}: {len(checked) - ran} bcrypt checks"
    assert [h[4:6] for h in checked] == [cost] * 3, checked  # the same work each time
    assert checked[0] == users["prometheus"] and checked[1] == checked[2] != checked[0]  # unknown: the dummy


def test_failed_logins_are_limited_per_address_without_running_bcrypt(monkeypatch):
    users = {"prometheus": hashed(b"right")}
    auth = BasicAuth(users, limiter=AttemptLimiter(burst=3, refill=60))
    checked = recording_bcrypt(monkeypatch)
    with running(web=WebConfig(users=users, headers=HEADERS), auth=auth) as server:
        assert get(server.port, headers=basic("prometheus", "right"))[0] == 200  # remembered from now on
        assert [get(server.port, headers=basic("prometheus", f"guess{i}"))[0] for i in range(3)] == [401] * 3
        assert len(checked) == 4  # the success and the three guesses ran bcrypt
        status, headers, _ = get(server.port, headers=basic("prometheus", "guess3"))
        assert status == 429 and 50 <= int(headers["Retry-After"]) <= 60
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert get(server.port, headers=basic("nobody", "x"))[0] == 429  # unknown users count the same
        assert len(checked) == 4  # refused without running bcrypt
        assert get(server.port, headers=basic("prometheus", "right"))[0] == 200  # a known success still passes
        assert get(server.port, headers=basic("prometheus", "guess4"), source="127.0.0.2")[0] == 401  # per address


def test_bcrypt_runs_off_the_event_loop_with_bounded_concurrency(monkeypatch):
    in_bcrypt, most, calls = [0], [0], [0]
    changed = threading.Condition()
    release = threading.Event()
    real = bcrypt.checkpw

    def held_checkpw(password, hashed_password):
        """bcrypt that goes on until the test releases it."""
        with changed:
            in_bcrypt[0] += 1
            calls[0] += 1
            most[0] = max(most[0], in_bcrypt[0])
            changed.notify_all()
        try:
            release.wait(HANG_GUARD)
            return real(password, hashed_password)
        finally:
            with changed:
                in_bcrypt[0] -= 1
                changed.notify_all()

    users = {"prometheus": hashed(b"right")}
    auth = BasicAuth(users, concurrency=2, limiter=AttemptLimiter(burst=1000))
    with running(web=WebConfig(users=users), auth=auth, limits=Limits(auth_workers=2)) as server:
        assert get(server.port, headers=basic("prometheus", "right"))[0] == 200  # remembered: no bcrypt from now on
        monkeypatch.setattr(bcrypt, "checkpw", held_checkpw)
        statuses: list[int] = []
        guesses = [threading.Thread(target=lambda i=i: statuses.append(
            get(server.port, headers=basic("prometheus", f"g{i}"), timeout=HANG_GUARD)[0])) for i in range(10)]
        for t in guesses:
            t.start()
        try:
            # Ten logins waiting for bcrypt, two of them in it and held there. Had the event loop run bcrypt
            # itself, it would be stuck in the first check: neither would come.
            wait_for(lambda: server._auth_waiting == 10, HANG_GUARD, interval=0.01, what="ten logins at bcrypt")
            with changed:
                assert changed.wait_for(lambda: in_bcrypt[0] >= 2, HANG_GUARD)
            # Meanwhile the loop answers a login that needs no bcrypt, with all ten checks still pending.
            assert get(server.port, headers=basic("prometheus", "right"), timeout=HANG_GUARD)[0] == 200
            assert server._auth_waiting == 10 and statuses == []
            assert in_bcrypt[0] == most[0] == 2  # two in bcrypt, eight waiting their turn
        finally:
            release.set()
            for t in guesses:
                t.join(HANG_GUARD)
    assert statuses == [401] * 10 and calls[0] == 10
    assert most[0] == 2  # never more than two at once


def test_too_many_logins_waiting_for_bcrypt_get_429(monkeypatch):
    users = {"prometheus": hashed(b"right")}
    auth = BasicAuth(users, concurrency=1, limiter=AttemptLimiter(burst=1000))
    release = threading.Event()
    real = bcrypt.checkpw

    def held_checkpw(password, hashed_password):
        """bcrypt that goes on until the test releases it."""
        release.wait(HANG_GUARD)
        return real(password, hashed_password)
    monkeypatch.setattr(bcrypt, "checkpw", held_checkpw)
    with running(web=WebConfig(users=users), auth=auth, limits=Limits(auth_workers=1, auth_queue=2)) as server:
        results: list[int] = []
        guesses = [threading.Thread(target=lambda i=i: results.append(
            get(server.port, headers=basic("x", f"{i}"), timeout=HANG_GUARD)[0])) for i in range(6)]
        for t in guesses:
            t.start()
        try:
            # While bcrypt holds the first check, two logins fill the queue and the four others are refused.
            wait_for(lambda: len(results) == 4, HANG_GUARD, interval=0.01, what="four logins refused")
            assert results == [429] * 4 and server._auth_waiting == 2
        finally:
            release.set()
            for t in guesses:
                t.join(HANG_GUARD)
    assert sorted(results) == [401, 401, 429, 429, 429, 429]


def test_configured_headers_are_on_every_answer_and_replace_the_apps():
    with running(web=WebConfig(headers=HEADERS)) as server:
        for status, headers in [get(server.port)[:2], get(server.port, headers={"X-Big": "y" * 20000})[:2],
                                get(server.port, method="POST", body=b"x" * (2 << 20))[:2]]:
            assert (headers["X-Frame-Options"], headers["X-Content-Type-Options"]) == ("deny", "nosniff"), status
    with running() as server:
        assert get(server.port)[1]["X-Frame-Options"] == "from-the-app"  # none configured: the app's stays


# --- stopping ----------------------------------------------------------------------------------


def test_stop_finishes_requests_in_flight_closes_idle_connections_and_stops_listening():
    gate = Gate()
    # A grace period longer than the test waits: stop can only return early by seeing the request finish.
    server = Server(gate, host="127.0.0.1", port=0, limits=Limits(grace=HANG_GUARD * 10))
    port = server.start()
    idle = raw(port)
    busy = raw(port, b"GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
    assert gate.entered.acquire(timeout=HANG_GUARD)
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    try:
        assert closed_by_peer(idle, within=HANG_GUARD)
        assert stopper.is_alive()  # stop waits for the request in flight ...
    finally:
        gate.open.set()
    busy.settimeout(HANG_GUARD)
    answer = read_all(busy)
    assert answer.startswith(b"HTTP/1.1 200") and b"Connection: close" in answer
    stopper.join(HANG_GUARD)
    assert not stopper.is_alive()  # ... and returns once it is answered, not at the end of the grace period
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)


@pytest.mark.slow
def test_stop_closes_a_request_that_outlives_the_grace_period():
    gate = Gate()
    server = Server(gate, host="127.0.0.1", port=0, limits=Limits(grace=0.5))
    port = server.start()
    busy = raw(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert gate.entered.acquire(timeout=HANG_GUARD)
    try:
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        stopper.join(HANG_GUARD)
        # stop returned while the request was still held in the app, which only the test lets go ...
        assert not stopper.is_alive() and not gate.left.is_set()
        busy.settimeout(HANG_GUARD)
        assert read_all(busy) == b""  # ... and closed its connection unanswered
    finally:
        gate.open.set()


SERVE = """
import sys
from innodb_exporter import logs
from innodb_exporter.web import server as webserver

def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]

logs.setup("info")
webserver.serve(app, host="127.0.0.1", port=int(sys.argv[1]))
print("serve returned", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_returns_on_sigterm_and_sigint_after_closing_connections(sig):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        wait_for(lambda: get(port)[0] == 200, 20, what="serve() listening")
        idle = raw(port)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out == "serve returned\n" and f'msg="shutting down on {sig.name}"' in err and "Traceback" not in err
    assert closed_by_peer(idle, within=HANG_GUARD)
