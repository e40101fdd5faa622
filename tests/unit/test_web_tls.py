"""--web.config.file: loading and validation, and TLS on real sockets (certificates, client certificates,
versions, handshake deadline, rotation, and what a wrong client leaves in the log)."""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import shutil
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
import warnings

import bcrypt
import pytest

from innodb_exporter.web.config import WebConfig, load_web_config
from innodb_exporter.web.server import Limits, Server
from support.exporter import ROOT, exporter_command
from support.servers import free_port, wait_for
from support.tls import make_pki


# How long a test waits for something before it gives up: only so that a broken server fails the test instead
# of hanging it, never a measure.
HANG_GUARD = 30.0


@pytest.fixture
def pki(tmp_path):
    return make_pki(str(tmp_path))


def web_config(tmp_path, text: str) -> str:
    path = tmp_path / "web.yml"
    path.write_text(text)
    return str(path)


@pytest.mark.slow
def test_https_with_basic_auth(tmp_path, pki):
    """End to end: the exporter's command line serves HTTPS and asks for basic auth."""
    hashed = bcrypt.hashpw(b"scrape-pw", bcrypt.gensalt(4)).decode()
    path = web_config(tmp_path, f"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                                f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    proc = subprocess.Popen([*exporter_command(), f"--web.listen-address=127.0.0.1:{port}",
                             f"--web.config.file={path}", "--config.my-cnf=/dev/null"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    context = pki.client_context()

    def get(auth=None):
        request = urllib.request.Request(f"https://localhost:{port}/")
        if auth:
            request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
        try:
            with urllib.request.urlopen(request, context=context, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    try:
        wait_for(lambda: get() == 401, 20, what="the exporter over HTTPS")
        assert get("prometheus:wrong") == 401
        assert get("prometheus:scrape-pw") == 200
    finally:
        proc.terminate()
        proc.wait(10)


# --- loading (tests/unit/test_web_toolkit_config.py holds it to exporter-toolkit's format) ------------------


def test_certificates_are_loaded_at_start_not_at_the_first_scrape(tmp_path, pki):
    path = web_config(tmp_path, "tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n")
    _, problems = load_web_config(path)
    assert len(problems) == 1 and f"cert_file {pki.cert}, key_file {pki.client_key}" in problems[0], problems
    (tmp_path / "junk.crt").write_text("not a certificate")
    path = web_config(tmp_path, "tls_server_config:\n  cert_file: junk.crt\n  key_file: server.key\n")
    assert "cannot use cert_file" in load_web_config(path)[1][0]


def test_a_good_config(tmp_path, pki):
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
    path = web_config(tmp_path, f"""\
tls_server_config:
  cert_file: server.crt
  key_file: {pki.key}
  client_auth_type: VerifyClientCertIfGiven
  client_ca_file: ca.crt
  min_version: TLS13
http_server_config:
  http2: false
  headers:
    X-Content-Type-Options: nosniff
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  prometheus: '{hashed}'
""")
    web, problems = load_web_config(path)
    assert problems == []
    assert (web.cert_file, web.key_file, web.client_ca_file) == (pki.cert, pki.key, pki.ca)
    assert (web.client_auth_type, web.min_version, web.tls) == ("VerifyClientCertIfGiven", "TLS13", True)
    assert web.headers == (("X-Content-Type-Options", "nosniff"), ("Strict-Transport-Security", "max-age=31536000"))
    assert web.users == {"prometheus": hashed.encode()}


# --- serving -----------------------------------------------------------------------------------


def ok_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok\n"]


@contextlib.contextmanager
def tls_server(pki, limits=Limits(), **tls):
    web = WebConfig(cert_file=pki.cert, key_file=pki.key, **tls)
    server = Server(ok_app, host="127.0.0.1", port=0, web=web, limits=limits)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def https_get(port, context, host="localhost"):
    """The status line of GET / over TLS, or the exception that stopped it."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock, \
                context.wrap_socket(sock, server_hostname=host) as tls:
            tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = tls.recv(65536)
            return answer.split(b"\r\n")[0].decode() if answer else ConnectionResetError("closed")
    except (ssl.SSLError, OSError) as exc:
        return exc


def test_https_from_the_web_config_speaks_http11_to_an_h2_client(pki):
    with tls_server(pki) as server:
        context = pki.client_context()
        context.set_alpn_protocols(["h2", "http/1.1"])
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock, \
                context.wrap_socket(sock, server_hostname="localhost") as tls:
            assert tls.selected_alpn_protocol() == "http/1.1"
            tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert tls.recv(65536).startswith(b"HTTP/1.1 200")


def test_min_version(pki):
    tls12 = pki.client_context()
    tls12.maximum_version = ssl.TLSVersion.TLSv1_2
    with tls_server(pki) as server:
        assert https_get(server.port, tls12) == "HTTP/1.1 200 OK"
    with tls_server(pki, min_version="TLS13") as server:
        assert isinstance(https_get(server.port, tls12), ssl.SSLError)
        assert https_get(server.port, pki.client_context()) == "HTTP/1.1 200 OK"


@pytest.fixture
def log_records():
    """Every record of our logger and asyncio's, at every level, whatever other tests did to logging."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append
    loggers = [logging.getLogger("innodb_exporter"), logging.getLogger("asyncio")]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    yield records
    for lg, (level, propagate) in zip(loggers, saved):
        lg.removeHandler(handler)
        lg.setLevel(level)
        lg.propagate = propagate


def tls10_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # exactly what the test is about
        context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    return context


def test_plain_http_and_tls10_against_the_tls_port_leave_one_debug_line_and_no_traceback(pki, log_records, capfd):
    with tls_server(pki) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert sock.recv(100) == b""
        assert isinstance(https_get(server.port, tls10_context()), OSError)
        assert https_get(server.port, pki.client_context()) == "HTTP/1.1 200 OK"  # and the server is fine
    lines = [r for r in log_records if "closed: TLS" in r.getMessage()]
    assert [r.getMessage().split(": TLS: ")[1] for r in lines] == ["HTTP_REQUEST", "UNSUPPORTED_PROTOCOL"]
    assert all(r.levelno == logging.DEBUG and not r.exc_info for r in lines)
    assert [r.getMessage() for r in log_records if r.levelno > logging.INFO or r.exc_info] == []
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.slow
def test_the_handshake_has_a_deadline(pki, log_records):
    # The request head's deadline is longer than the test waits: a close can only come from the handshake's.
    with tls_server(pki, limits=Limits(handshake_timeout=0.5, head_timeout=HANG_GUARD * 10)) as server:
        for start in (b"", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"):  # nothing, half a ClientHello
            with socket.create_connection(("127.0.0.1", server.port), timeout=HANG_GUARD) as sock:
                sock.sendall(start)
                assert sock.recv(100) == b""  # closed by the server (the timeout only guards against a hang)
    # ... for its handshake deadline, which asyncio names when it aborts the connection.
    closes = [r.getMessage() for r in log_records if "closed:" in r.getMessage()]
    assert len(closes) == 2 and all("handshake is taking longer than 0.5 seconds" in m for m in closes), closes


@pytest.mark.parametrize("auth_type", ["RequireAndVerifyClientCert", "VerifyClientCertIfGiven"])
def test_client_certificates(pki, auth_type):
    with tls_server(pki, client_auth_type=auth_type, client_ca_file=pki.ca) as server:
        assert https_get(server.port, pki.client_context(pki.client_cert, pki.client_key)) == "HTTP/1.1 200 OK"
        assert isinstance(https_get(server.port, pki.client_context(pki.rogue_cert, pki.rogue_key)), OSError)
        without = https_get(server.port, pki.client_context())
        if auth_type == "RequireAndVerifyClientCert":
            assert isinstance(without, OSError)
        else:
            assert without == "HTTP/1.1 200 OK"


@pytest.mark.slow
def test_a_rotated_certificate_is_served_without_a_restart(tmp_path, pki):
    def served_certificate(port) -> bytes:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock, context.wrap_socket(sock) as tls:
            return tls.getpeercert(binary_form=True)

    with tls_server(pki) as server:
        first = served_certificate(server.port)
        os.makedirs(tmp_path / "newer")
        newer = make_pki(str(tmp_path / "newer"))
        shutil.copy(newer.key, pki.key)
        shutil.copy(newer.cert, pki.cert)
        wait_for(lambda: served_certificate(server.port) != first, 5, what="the new certificate")
        with open(newer.cert) as f:
            assert served_certificate(server.port) == ssl.PEM_cert_to_DER_cert(f.read())
