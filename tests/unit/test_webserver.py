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
import statistics
import subprocess
import sys
import threading
import time

import bcrypt
import pytest

from innodb_exporter import webserver
from innodb_exporter.webconfig import AttemptLimiter, BasicAuth, WebConfig
from innodb_exporter.webserver import Limits, Server
from support.servers import free_port, wait_for

webserver.raise_open_files_limit()  # this process holds both ends of a thousand connections


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


def seconds_until_closed(sock, limit=10.0) -> float:
    started = time.monotonic()
    sock.settimeout(limit)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - started


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


def test_the_request_head_must_arrive_within_its_deadline_even_one_byte_at_a_time():
    with running(limits=Limits(head_timeout=0.6)) as server:
        assert 0.5 < seconds_until_closed(raw(server.port)) < 2.0  # says nothing at all
        sock = raw(server.port)
        started = time.monotonic()
        with pytest.raises((BrokenPipeError, ConnectionResetError)):
            for byte in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"y" * 100:
                sock.send(bytes([byte]))
                time.sleep(0.05)
        assert time.monotonic() - started < 2.0  # slowloris: trickling bytes does not extend the deadline


def test_idle_keep_alive_connections_close_and_a_new_request_gets_the_head_deadline():
    with running(limits=Limits(idle_timeout=1.0, head_timeout=0.5)) as server:
        sock = raw(server.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        time.sleep(0.7)  # longer than the head deadline, shorter than the keep-alive one: still open
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        assert 0.8 < seconds_until_closed(sock) < 2.5


def test_a_body_that_comes_too_slowly_gets_408():
    with running(limits=Limits(body_timeout=0.5)) as server:
        sock = raw(server.port, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        started = time.monotonic()
        assert read_all(sock).startswith(b"HTTP/1.1 408")
        assert 0.4 < time.monotonic() - started < 2.0


def test_expect_100_continue():
    with running() as server:
        sock = raw(server.port, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n"
                                b"Connection: close\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 100")
        sock.sendall(b"hello")
        assert b'"body_length": 5' in read_all(sock)


# --- the connection bound ----------------------------------------------------------------------


class Gate:
    """An app that holds its requests until opened, to make connections busy."""

    def __init__(self):
        self.open, self.entered = threading.Event(), threading.Semaphore(0)

    def __call__(self, environ, start_response):
        self.entered.release()
        self.open.wait(10)
        return echo_app(environ, start_response)


def test_at_the_bound_the_longest_idle_connection_is_closed_and_busy_ones_are_not():
    gate = Gate()
    with running(gate, limits=Limits(max_connections=8)) as server:
        busy = raw(server.port, b"GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
        assert gate.entered.acquire(timeout=5)
        idle = [raw(server.port)]
        idle.append(raw(server.port, b"GET / HTTP/1.1\r\nHo"))  # a partial head is idle too
        for _ in range(5):
            idle.append(raw(server.port))
        time.sleep(0.3)
        assert server.connections == 8
        newcomer = raw(server.port, b"GET /new HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert gate.entered.acquire(timeout=5)  # the newcomer got in ...
        assert closed_by_peer(idle[0], within=2)  # ... in place of the longest idle connection
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
        assert closed_by_peer(raw(server.port), within=2)
        gate.open.set()
        assert all(s.recv(65536).startswith(b"HTTP/1.1 200") for s in busy)


def test_a_thousand_idle_connections_do_not_delay_requests():
    with running(limits=Limits(max_connections=1024)) as server:
        idle = [raw(server.port) for _ in range(1024)]
        latencies = []
        for _ in range(20):
            started = time.monotonic()
            assert get(server.port)[0] == 200
            latencies.append(time.monotonic() - started)
        assert server.connections <= 1024
        closed = sum(closed_by_peer(s) for s in idle)
        for s in idle:
            s.close()
    print(f"1024 idle: request max {max(latencies) * 1000:.1f} ms, {closed} idle connections closed for them")
    assert max(latencies) < 0.5
    assert closed >= 1  # the bound made room


# --- listening ---------------------------------------------------------------------------------


def test_a_busy_server_keeps_a_thousand_connections_waiting_in_its_backlog():
    with running() as server:
        # Hold the event loop, as a burst of work would, so that nothing is accepted meanwhile.
        server._loop.call_soon_threadsafe(time.sleep, 2.0)
        time.sleep(0.1)
        clients = []
        for _ in range(1000):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", server.port))
            clients.append(sock)
        time.sleep(0.5)
        # The kernel completed every handshake into the accept queue (with a backlog of 5, the rest would wait
        # for SYN retries: 1 s, 3 s, 7 s ...).
        poll = select.poll()  # not select(): the test process may hold descriptors past 1024
        for sock in clients:
            poll.register(sock, select.POLLOUT)
        writable = [fd for fd, events in poll.poll(0) if events & select.POLLOUT]
        assert len(writable) == 1000 and all(s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 for s in clients)
        for sock in clients:
            sock.setblocking(True)
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
    code = ("import resource; from innodb_exporter.webserver import raise_open_files_limit as r; "
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


def login_medians(port, credentials, rounds=9) -> list[float]:
    """Median time of a failed login for each (user, password), sampled in turns so that noise hits all alike."""
    samples = [[] for _ in credentials]
    for _ in range(rounds):
        for i, (user, password) in enumerate(credentials):
            started = time.monotonic()
            assert get(port, headers=basic(user, password))[0] == 401
            samples[i].append(time.monotonic() - started)
    return [statistics.median(s) for s in samples]


def test_unknown_and_known_users_cost_the_same():
    cost = 9  # ~30 ms per check: well above the noise of a loopback request
    users = {"prometheus": hashed(b"right", cost)}
    auth = BasicAuth(users, limiter=AttemptLimiter(burst=1000))
    with running(web=WebConfig(users=users), auth=auth) as server:
        known, unknown, empty = login_medians(server.port, [("prometheus", "wrong"), ("nobody", "wrong"), ("", "")])
    print(f"wrong password, known user {known * 1000:.1f} ms, unknown user {unknown * 1000:.1f} ms, "
          f"empty {empty * 1000:.1f} ms")
    # Before: 0.5 ms for an unknown user against 58 ms for a known one.
    assert 0.5 < known / unknown < 2 and 0.5 < known / empty < 2
    assert unknown > 0.01  # the unknown user really ran bcrypt


def test_failed_logins_are_limited_per_address_without_running_bcrypt():
    users = {"prometheus": hashed(b"right", 9)}
    auth = BasicAuth(users, limiter=AttemptLimiter(burst=3, refill=60))
    with running(web=WebConfig(users=users, headers=HEADERS), auth=auth) as server:
        assert get(server.port, headers=basic("prometheus", "right"))[0] == 200  # remembered from now on
        assert [get(server.port, headers=basic("prometheus", f"guess{i}"))[0] for i in range(3)] == [401] * 3
        started = time.monotonic()
        status, headers, _ = get(server.port, headers=basic("prometheus", "guess3"))
        refused_in = time.monotonic() - started
        assert status == 429 and 50 <= int(headers["Retry-After"]) <= 60
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert refused_in < 0.02  # no bcrypt (cost 9 takes ~30 ms)
        assert get(server.port, headers=basic("nobody", "x"))[0] == 429  # unknown users count the same
        assert get(server.port, headers=basic("prometheus", "right"))[0] == 200  # a known success still passes
        assert get(server.port, headers=basic("prometheus", "guess4"), source="127.0.0.2")[0] == 401  # per address


def test_bcrypt_runs_off_the_event_loop_with_bounded_concurrency(monkeypatch):
    running_now, most = [0], [0]
    lock = threading.Lock()
    real = bcrypt.checkpw

    def slow_checkpw(password, hashed_password):
        with lock:
            running_now[0] += 1
            most[0] = max(most[0], running_now[0])
        try:
            time.sleep(0.2)
            return real(password, hashed_password)
        finally:
            with lock:
                running_now[0] -= 1

    users = {"prometheus": hashed(b"right")}
    auth = BasicAuth(users, concurrency=2, limiter=AttemptLimiter(burst=1000))
    with running(web=WebConfig(users=users), auth=auth, limits=Limits(auth_workers=2)) as server:
        assert get(server.port, headers=basic("prometheus", "right"))[0] == 200  # cached before bcrypt slows
        monkeypatch.setattr(bcrypt, "checkpw", slow_checkpw)
        guesses = [threading.Thread(target=get, args=(server.port,), kwargs={"headers": basic("prometheus", f"g{i}")})
                   for i in range(10)]
        for t in guesses:
            t.start()
        time.sleep(0.1)
        started = time.monotonic()
        assert get(server.port, headers=basic("prometheus", "right"))[0] == 200
        cached_in = time.monotonic() - started
        for t in guesses:
            t.join()
    assert most[0] == 2
    assert cached_in < 0.1  # ten queued bcrypt checks (1 s of work) did not hold up the event loop


def test_too_many_logins_waiting_for_bcrypt_get_429(monkeypatch):
    users = {"prometheus": hashed(b"right")}
    auth = BasicAuth(users, concurrency=1, limiter=AttemptLimiter(burst=1000))
    real = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda p, h: time.sleep(0.3) or real(p, h))
    with running(web=WebConfig(users=users), auth=auth, limits=Limits(auth_workers=1, auth_queue=2)) as server:
        results = []
        guesses = [threading.Thread(target=lambda i=i: results.append(get(server.port, headers=basic("x", f"{i}"))[0]))
                   for i in range(6)]
        for t in guesses:
            t.start()
        for t in guesses:
            t.join()
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
    server = Server(gate, host="127.0.0.1", port=0, limits=Limits(grace=5))
    port = server.start()
    idle = raw(port)
    busy = raw(port, b"GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
    assert gate.entered.acquire(timeout=5)
    stopper = threading.Thread(target=server.stop)
    started = time.monotonic()
    stopper.start()
    assert closed_by_peer(idle, within=2)
    threading.Timer(0.5, gate.open.set).start()
    answer = read_all(busy)
    assert answer.startswith(b"HTTP/1.1 200") and b"Connection: close" in answer
    stopper.join(10)
    assert not stopper.is_alive() and time.monotonic() - started < 3
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)


def test_stop_closes_a_request_that_outlives_the_grace_period():
    gate = Gate()
    server = Server(gate, host="127.0.0.1", port=0, limits=Limits(grace=0.5))
    port = server.start()
    busy = raw(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert gate.entered.acquire(timeout=5)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2.5
    assert read_all(busy) == b""
    gate.open.set()


SERVE = """
import sys
from innodb_exporter import logs, webserver

def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]

logs.setup("info")
webserver.serve(app, host="127.0.0.1", port=int(sys.argv[1]))
print("serve returned", flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_returns_on_sigterm_and_sigint_after_closing_connections(sig):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        wait_for(lambda: get(port)[0] == 200, 20, what="serve() listening")
        idle = raw(port)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out == "serve returned\n" and f'msg="shutting down on {sig.name}"' in err and "Traceback" not in err
    assert closed_by_peer(idle)
