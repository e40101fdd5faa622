"""Issue 28 item 5: --web.config.file as Prometheus exporter-toolkit reads it. Configurations written from the
toolkit's documentation (docs/web-configuration.md and the sample web-config.yml of prometheus/exporter-toolkit,
v0.20) and its valid and invalid test cases: each one it accepts starts the exporter with the same meaning,
held on real TLS connections; each one it refuses is refused with a message naming the line and the key."""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import ssl
import subprocess
import warnings

import bcrypt
import pytest

from innodb_exporter.web import config as web_config
from innodb_exporter.web.config import BasicAuth, dummy_hash, load_web_config
from innodb_exporter.web.server import Server
from support.exporter import ROOT, exporter_command
from support.servers import free_port, wait_for
from support.tls import CLIENT_SANS, make_pki

HANG_GUARD = 30.0  # only so that a broken server fails a test instead of hanging it; never a measure


@pytest.fixture
def pki(tmp_path):
    return make_pki(str(tmp_path))


def write(tmp_path, text: str) -> str:
    path = tmp_path / "web.yml"
    path.write_text(text)
    return str(path)


def loaded(tmp_path, text: str):
    web, problems = load_web_config(write(tmp_path, text))
    assert problems == [], problems
    return web


def hash_of(password: str, cost: int = 4) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(cost)).decode()


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok\n"]


@contextlib.contextmanager
def serving(web):
    server = Server(app, host="127.0.0.1", port=0, web=web)
    server.start()
    try:
        yield server.port
    finally:
        server.stop()


def client(pki, cert=None, key=None, ciphers=None, curve=None, tls12=False) -> ssl.SSLContext:
    context = pki.client_context(cert, key)
    if tls12:
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    if ciphers:
        context.set_ciphers(ciphers)
    if curve:
        context.set_ecdh_curve(curve)
    return context


def status(port, context, headers=b"") -> str | Exception:
    """The status line of GET / over TLS, or what stopped it (a refused handshake, a closed connection)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as sock, \
                context.wrap_socket(sock, server_hostname="localhost") as conn:
            conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers + b"\r\n")
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
            return answer.decode() if answer else ConnectionResetError("closed without an answer")
    except (ssl.SSLError, OSError) as exc:
        return exc


def ok(answer) -> bool:
    return isinstance(answer, str) and answer.startswith("HTTP/1.1 200")


TLS = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"


# --- what the toolkit accepts is accepted ------------------------------------------------------------------


def test_the_documented_sample_configuration(tmp_path, pki):
    """docs/web-config.yml of the toolkit, with our own hashes: TLS, two users, a rate limit."""
    web = loaded(tmp_path, f"""\
# TLS and basic authentication configuration example.
tls_server_config:
  cert_file: server.crt
  key_file: server.key
basic_auth_users:
  alice: {hash_of('alice123')}
  bob: {hash_of('bob123')}
rate_limit:
  interval: "1s"
  burst: 20
""")
    assert set(web.users) == {"alice", "bob"} and web.rate_limit == web_config.RateLimit(1.0, 20)
    auth = b"Authorization: Basic " + base64.b64encode(b"alice:alice123") + b"\r\n"
    with serving(web) as port:
        assert status(port, client(pki)).startswith("HTTP/1.1 401")
        assert ok(status(port, client(pki), auth))


@pytest.mark.parametrize("text", [
    "",  # web_config_empty.yml
    "# only a comment\n",
    "~\n",
    "tls_server_config:\n",  # a null section
    "basic_auth_users:\nhttp_server_config:\n  headers:\n",  # null maps
    "rate_limit:\n  interval: 0\n  burst: 0\n",  # web_config_rate_limiter_nonblocking.yaml
    "http_server_config:\n  http2: true\n",  # the default, said
    "http_server_config:\n  http2: yes\n",  # YAML 1.1 booleans, as go-yaml v2
    "http_server_config:\n  http2: n\n",
    "---\nhttp_server_config: {http2: false}\n---\nnot: [even, read\n",  # only the first document counts
    "http_server_config: &h\n  http2: false\n",
], ids=["empty", "comment", "null document", "null tls section", "null maps", "rate limiter off", "http2 true",
        "http2 yes", "http2 n", "two documents", "anchor"])
def test_files_without_tls_the_toolkit_accepts(tmp_path, text):
    web = loaded(tmp_path, text)
    assert not web.tls and web.users == {} and web.rate_limit is None


def test_every_documented_tls_option(tmp_path, pki):
    """Each documented key of tls_server_config at once, as the toolkit's good test files set them."""
    ciphers = "\n".join(f"    - {name}" for name in web_config.tls.CIPHER_SUITES)  # allCiphers: all 13
    web = loaded(tmp_path, f"""\
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  client_allowed_sans: [prometheus.example]
  min_version: TLS12
  max_version: TLS13
  cipher_suites:
{ciphers}
  prefer_server_cipher_suites: false
  curve_preferences: [CurveP256, CurveP384, CurveP521, X25519]
""")
    assert web.tls and web.client_allowed_sans == ("prometheus.example",) and len(web.cipher_suites) == 13
    with serving(web) as port:
        assert ok(status(port, client(pki, pki.client_cert, pki.client_key)))


@pytest.mark.parametrize("auth_type, none, ours, rogue", [
    # exporter-toolkit's tls_config_noAuth.*.good.yml: which clients each policy lets in (no certificate, one
    # from the configured CA, one from another CA). The unverified ones are what Python's ssl cannot do alone.
    ("NoClientCert", True, True, True),
    ("RequestClientCert", True, True, True),
    ("RequireAnyClientCert", False, True, True),
    ("RequireClientCert", False, True, True),  # the toolkit's older name for RequireAnyClientCert
    ("VerifyClientCertIfGiven", True, True, False),
    ("RequireAndVerifyClientCert", False, True, False),
])
def test_client_auth_types_with_a_client_ca(tmp_path, pki, auth_type, none, ours, rogue):
    ca = "" if auth_type == "NoClientCert" else "  client_ca_file: ca.crt\n"
    web = loaded(tmp_path, f"{TLS}  client_auth_type: {auth_type}\n{ca}")
    with serving(web) as port:
        assert ok(status(port, client(pki))) is none
        assert ok(status(port, client(pki, pki.client_cert, pki.client_key))) is ours
        assert ok(status(port, client(pki, pki.rogue_cert, pki.rogue_key))) is rogue


@pytest.mark.parametrize("auth_type", ["VerifyClientCertIfGiven", "RequireAndVerifyClientCert"])
def test_verifying_without_a_client_ca_uses_the_system_roots(tmp_path, pki, monkeypatch, auth_type):
    """Issue 28: both were refused without client_ca_file. Go verifies against the system's roots then; so
    do we, and SSL_CERT_FILE moves them for both (here: to the test CA, as an operator's own CA would be)."""
    web = loaded(tmp_path, f"{TLS}  client_auth_type: {auth_type}\n")
    ours = client(pki, pki.client_cert, pki.client_key)
    with serving(web) as port:  # the system's roots do not hold the test CA
        assert not ok(status(port, ours))
        assert ok(status(port, client(pki))) is (auth_type == "VerifyClientCertIfGiven")
    monkeypatch.setenv("SSL_CERT_FILE", pki.ca)
    with serving(web) as port:
        assert ok(status(port, ours))
        assert not ok(status(port, client(pki, pki.rogue_cert, pki.rogue_key)))


@pytest.mark.parametrize("allowed", CLIENT_SANS)
def test_client_allowed_sans_matches_each_kind_of_san(tmp_path, pki, allowed):
    """DNS, e-mail, IP (v4 and v6 as Go prints them) and URI SANs, exact strings."""
    web = loaded(tmp_path, f"{TLS}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
                           f"  client_allowed_sans:\n    - {allowed}\n")
    with serving(web) as port:
        assert ok(status(port, client(pki, pki.client_cert, pki.client_key)))


def test_client_allowed_sans_refuses_every_other_client(tmp_path, pki):
    web = loaded(tmp_path, f"{TLS}  client_auth_type: RequireAnyClientCert\n"
                           f"  client_allowed_sans: [rogue.example]\n")
    with serving(web) as port:
        assert ok(status(port, client(pki, pki.rogue_cert, pki.rogue_key)))  # unverified, but its SAN is allowed
        assert not ok(status(port, client(pki, pki.client_cert, pki.client_key)))  # verifiable, its SANs are not
        assert not ok(status(port, client(pki)))
    for sans in ("[]", "[Prometheus.example]", "[prometheus]"):  # an empty list; case; the CN is not a SAN
        web = loaded(tmp_path, f"{TLS}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
                               f"  client_allowed_sans: {sans}\n")
        with serving(web) as port:
            assert not ok(status(port, client(pki, pki.client_cert, pki.client_key))), sans
    # An optional certificate not sent leaves no SAN to match: refused (the toolkit drops the connection).
    web = loaded(tmp_path, f"{TLS}  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.crt\n"
                           f"  client_allowed_sans: [prometheus.example]\n")
    with serving(web) as port:
        assert not ok(status(port, client(pki)))
        assert ok(status(port, client(pki, pki.client_cert, pki.client_key)))


def test_inline_certificate_key_and_client_ca(tmp_path, pki):
    def indented(path):
        with open(path) as f:
            return "".join(f"    {line}" for line in f)

    web = loaded(tmp_path, f"""\
tls_server_config:
  cert: |
{indented(pki.cert)}
  key: |
{indented(pki.key)}
  client_ca: |
{indented(pki.ca)}
  client_auth_type: RequireAndVerifyClientCert
""")
    with serving(web) as port:
        plain = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        plain.check_hostname, plain.verify_mode = False, ssl.CERT_NONE
        plain.load_cert_chain(pki.client_cert, pki.client_key)
        with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as sock, \
                plain.wrap_socket(sock) as conn:
            with open(pki.cert) as f:
                assert conn.getpeercert(binary_form=True) == ssl.PEM_cert_to_DER_cert(f.read())
        assert not ok(status(port, client(pki, pki.rogue_cert, pki.rogue_key)))
    # cert_file with an inline key (tls_config_noAuth.requireanyclientcertkeyinline.good.yml)
    loaded(tmp_path, f"tls_server_config:\n  cert_file: server.crt\n  key: |\n{indented(pki.key)}\n"
                     f"  client_auth_type: RequireAnyClientCert\n")


def test_cipher_suites_curves_and_versions(tmp_path, pki):
    # web_config_noAuth_noHTTP2.good.yml, with the ECDSA suite our test certificate needs.
    web = loaded(tmp_path, f"{TLS}  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n  max_version: TLS12\n"
                           f"http_server_config:\n  http2: false\n")
    with serving(web) as port:
        assert ok(status(port, client(pki, ciphers="ECDHE-ECDSA-AES256-GCM-SHA384")))
        assert not ok(status(port, client(pki, ciphers="ECDHE-ECDSA-AES128-GCM-SHA256")))
    # web_config_noAuth_someCurves.good.yml
    web = loaded(tmp_path, f"{TLS}  min_version: TLS13\n  curve_preferences: [CurveP521]\n")
    with serving(web) as port:
        assert ok(status(port, client(pki, curve="secp521r1")))
        assert not ok(status(port, client(pki, curve="prime256v1")))
        assert not ok(status(port, client(pki, tls12=True)))
    # TLS 1.0, which the toolkit still accepts when asked
    web = loaded(tmp_path, f"{TLS}  min_version: TLS10\n")
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.check_hostname, old.verify_mode = False, ssl.CERT_NONE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old.minimum_version = old.maximum_version = ssl.TLSVersion.TLSv1
    old.set_ciphers("DEFAULT:@SECLEVEL=0")
    with serving(web) as port:
        assert ok(status(port, old))
    with serving(loaded(tmp_path, TLS)) as port:
        assert not ok(status(port, old))


def test_headers_as_the_toolkit_sends_them(tmp_path, pki):
    """web_config_headers.good.yml: X-XSS-Protection: 1 (an integer in YAML) was refused (issue 28)."""
    web = loaded(tmp_path, """\
http_server_config:
  headers:
    Content-Security-Policy: "default-src 'self'"
    X-Frame-Options: deny
    X-Content-Type-Options: nosniff
    X-XSS-Protection: 1
    Strict-Transport-Security: ""
""")
    with serving(web) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            head = b""
            while chunk := sock.recv(65536):
                head += chunk
    lines = head.decode().split("\r\n")
    for line in ("Content-Security-Policy: default-src 'self'", "X-Frame-Options: deny", "X-XSS-Protection: 1",
                 "X-Content-Type-Options: nosniff", "Strict-Transport-Security: "):
        assert line in lines, lines


def test_a_line_break_in_a_header_value_is_sent_as_a_space(tmp_path):
    """The toolkit accepts it and Go's header writer turns it into a space: no header can be injected."""
    web = loaded(tmp_path, 'http_server_config:\n  headers:\n    Content-Security-Policy: "a\\r\\nSet-Cookie: b=c"\n')
    with serving(web) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            head = sock.recv(65536).split(b"\r\n\r\n")[0].split(b"\r\n")
    assert b"Content-Security-Policy: a  Set-Cookie: b=c" in head
    assert not any(line.startswith(b"Set-Cookie") for line in head)


def test_rate_limit_is_one_bucket_for_every_request_before_auth(tmp_path):
    """A rate_limit block was refused (issue 28). The toolkit's limiter is one token bucket (starting full)
    in front of everything, authentication included: wrong credentials spend tokens too."""
    web = loaded(tmp_path, f"basic_auth_users:\n  alice: {hash_of('pw')}\nrate_limit:\n  interval: 1h\n  burst: 3\n")
    with serving(web) as port:
        answers = []
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as sock:
                sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                answers.append(sock.recv(65536).split(b"\r\n")[0])
    assert answers == [b"HTTP/1.1 401 Unauthorized"] * 3 + [b"HTTP/1.1 429 Too Many Requests"] * 2
    assert web_config.RateLimiter(web_config.RateLimit(1.0, 0)).allow() is False  # burst 0: nothing passes
    unlimited = web_config.RateLimiter(web_config.RateLimit(-1.0, 0))  # a negative interval: no limit
    assert all(unlimited.allow() for _ in range(100))


@pytest.mark.parametrize("text, seconds", [("1s", 1), ("100ms", 0.1), ("1m30s", 90), ("1.5h", 5400), ("2us", 2e-6),
                                           ("-1s", -1), ("0", 0), ("+5m", 300)])
def test_go_durations(text, seconds):
    assert web_config.go_duration(text) == pytest.approx(seconds)


def test_bcrypt_hashes_as_the_toolkit_checks_them(monkeypatch):
    """Any cost starts at once: the dummy hash an unknown user is checked against is made without hashing
    (before: 16 to 32 s at start for a cost of 18, issue 28), and has the users' highest cost."""
    def no_hashing(*args, **kwargs):
        raise AssertionError("bcrypt ran at start")
    monkeypatch.setattr(bcrypt, "hashpw", no_hashing)
    monkeypatch.setattr(bcrypt, "gensalt", no_hashing)
    auth = BasicAuth({"bob": b"$2y$18$" + dummy_hash(18)[7:], "alice": dummy_hash(10)})
    assert auth._dummy.startswith(b"$2b$18$") and len(auth._dummy) == 60
    monkeypatch.undo()
    # The toolkit takes any hash golang.org/x/crypto/bcrypt's Cost takes; one Python's bcrypt cannot use
    # is a user who never logs in, after the same work as any other.
    lenient = "$2$04$" + dummy_hash(4).decode()[7:] + "x"
    assert web_config.bcrypt_problem(lenient) is None
    assert BasicAuth({"carol": lenient.encode()}).check("carol", "anything") is False
    assert not bcrypt.checkpw(b"x", dummy_hash(4))


@pytest.mark.slow
def test_the_exporter_starts_at_once_with_a_user_of_cost_31(tmp_path):
    """Hashing at cost 31 takes days: the exporter listens within the hang guard only if nothing is hashed."""
    path = write(tmp_path, f"basic_auth_users:\n  prometheus: '$2y$31${dummy_hash(31).decode()[7:]}'\n")
    port = free_port()
    proc = subprocess.Popen([*exporter_command(), f"--web.listen-address=127.0.0.1:{port}", f"--web.config.file={path}",
                             "--config.my-cnf=/dev/null"], env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters")),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def answers_401() -> bool:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                return sock.recv(100).startswith(b"HTTP/1.1 401")
        wait_for(answers_401, 20, what="the exporter answering")
    finally:
        proc.terminate()
        proc.wait(10)


# --- what the toolkit refuses is refused, naming the key -----------------------------------------------------


REFUSED = {
    # the toolkit's *.bad.yml cases, and the errors of its YAML and types
    "certPath_empty": ("tls_server_config:\n  cert_file: \"\"\n  key_file: server.key\n",
                       "line 2: tls_server_config: missing one of cert or cert_file"),
    "keyPath_empty": ("tls_server_config:\n  cert_file: server.crt\n  key_file: \"\"\n",
                      "tls_server_config: missing one of key or key_file"),
    "certPath_keyPath_empty": ("tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n",
                               "missing one of cert or cert_file"),
    "cert_invalid": ("tls_server_config:\n  cert_file: nowhere.crt\n  key_file: server.key\n",
                     "line 2: tls_server_config.cert_file: "),
    "clientCAs_invalid": (TLS + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: nowhere.crt\n",
                          "line 5: tls_server_config.client_ca_file: "),
    "noAuth.bad": (TLS + "  client_ca_file: /dev/null\n",
                   "tls_server_config.client_ca_file: client CA's have been configured without a Client Auth Policy"),
    "invalid auth type": (TLS + "  client_auth_type: Sometimes\n", "line 4: tls_server_config.client_auth_type: invalid ClientAuth"),
    "user_list_invalid": ("basic_auth_users:\n  john: doe-plain-password\n",
                          "line 2: basic_auth_users.john: not a bcrypt hash"),
    "bcrypt cost 3": ("basic_auth_users:\n  john: $2y$03$" + "a" * 53 + "\n", "basic_auth_users.john: not a bcrypt hash"),
    "inventedCiphers": (TLS + "  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n", "tls_server_config.cipher_suites: unknown cipher"),
    "inventedCurves": (TLS + "  curve_preferences: [CurveP257]\n", "tls_server_config.curve_preferences: unknown curve"),
    "wrongTLSVersion": (TLS + "  min_version: TLS111\n", "tls_server_config.min_version: unknown TLS version"),
    "noHTTP2Cipher": (TLS + "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n",
                      "tls_server_config.cipher_suites: with http_server_config.http2 true"),
    "headers_content_type_options": ("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n",
                                     "http_server_config.headers.X-Content-Type-Options: invalid value 'sniff'"),
    "headers_frame_options": ("http_server_config:\n  headers:\n    X-Frame-Options: foo\n",
                              "http_server_config.headers.X-Frame-Options: invalid value 'foo'"),
    "blank X-Frame-Options": ("http_server_config:\n  headers:\n    X-Frame-Options: \"\"\n",
                              "http_server_config.headers.X-Frame-Options: invalid value ''"),
    "headers_extra_header": ("http_server_config:\n  headers:\n    Content-Type: text/html\n",
                             "http_server_config.headers.Content-Type: HTTP header 'Content-Type' can not be configured"),
    "junk": ("hello\n", "the file: expected a mapping"),
    "junk_key": ("tls_server_config:\n  cert_filse: server.crt\n", "line 2: tls_server_config.cert_filse: unknown key"),
    "unknown top key": ("tls_config: {}\n", "line 1: tls_config: unknown key"),
    "a key twice": ("basic_auth_users: {}\nbasic_auth_users: {}\n", "line 2: basic_auth_users: set twice"),
    "a user twice": (f"basic_auth_users:\n  a: {'$2y$10$' + 'a' * 53}\n  a: {'$2y$10$' + 'a' * 53}\n",
                     "line 3: basic_auth_users.a: set twice"),
    "tabs": ("tls_server_config:\n\tcert_file: x\n", "is not valid YAML"),
    "a quoted boolean": ("http_server_config:\n  http2: \"true\"\n", "http_server_config.http2: expected true or false"),
    "a quoted burst": ("rate_limit:\n  interval: 1s\n  burst: \"5\"\n", "rate_limit.burst: expected an integer"),
    "days": ("rate_limit:\n  interval: 1d\n  burst: 5\n", "rate_limit.interval: '1d' is not a duration"),
    "a list for a string": ("tls_server_config:\n  cert_file: [a]\n", "tls_server_config.cert_file: expected a string"),
    "a string for a list": ("tls_server_config:\n  cipher_suites: TLS_AES_128_GCM_SHA256\n",
                            "tls_server_config.cipher_suites: expected a list"),
}


@pytest.mark.parametrize("text, expected", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_toolkit_refuses_is_refused_naming_the_key(tmp_path, pki, text, expected):
    path = write(tmp_path, text)
    _, problems = load_web_config(path)
    assert problems and all(p.startswith(f"--web.config.file {path}") for p in problems), problems
    assert any(expected in p for p in problems), problems
    assert "doe-plain-password" not in "".join(problems)  # where a hash belongs may be a password: never echoed


def test_every_problem_at_once(tmp_path):
    path = write(tmp_path, "tls_server_config:\n  cert_file: nowhere.crt\n  min_version: TLS9\n"
                           "basic_auth_users:\n  john: doe\nunknown: 1\n")
    assert len(load_web_config(path)[1]) == 5  # the file, the key, the version, the hash, the key


def test_a_python_whose_ssl_contexts_cannot_be_reached_refuses_what_needs_them(tmp_path, pki, monkeypatch):
    """web/openssl.py checks where the SSL_CTX is before it touches one; elsewhere the web config says so."""
    from innodb_exporter.web import openssl

    def unreachable():
        raise openssl.Unsupported("the SSL_CTX is not where this module looks")
    monkeypatch.setattr(openssl, "_libssl_checked", unreachable)
    for text, key in ((f"{TLS}  client_auth_type: RequireAnyClientCert\n", "client_auth_type"),
                      (f"{TLS}  curve_preferences: [X25519]\n", "curve_preferences")):
        problems = load_web_config(write(tmp_path, text))[1]
        assert len(problems) == 1 and f"line 4: tls_server_config.{key}: this Python cannot do it" in problems[0], \
            problems
    assert load_web_config(write(tmp_path, f"{TLS}  client_auth_type: VerifyClientCertIfGiven\n"))[1] == []
