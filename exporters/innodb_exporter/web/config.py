"""``--web.config.file``: TLS, basic auth and response headers, in the Prometheus exporter-toolkit format.

    tls_server_config:
      cert_file: server.crt            # paths are relative to this file
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # optional, with client_ca_file
      client_ca_file: ca.crt
      min_version: TLS12               # TLS12 (default) or TLS13; max_version likewise
    http_server_config:
      http2: false                     # we serve HTTP/1.1 only; true is refused
      headers:                         # exporter-toolkit's allowed set, added to every response
        Strict-Transport-Security: max-age=31536000
        X-Content-Type-Options: nosniff
    basic_auth_users:
      prometheus: $2y$10$...   # bcrypt hash, e.g. from `htpasswd -nBC 10 "" | tr -d ':\\n'`

``load_web_config`` reports every problem at once, each naming the file. What exporter-toolkit accepts
and this exporter cannot honour (inline certificates, cipher lists, ``http2: true``, ...) is refused
with a message saying so, never accepted and ignored.

``BasicAuth`` checks credentials so that timing tells nothing about which users exist (an unknown user
costs one bcrypt run against a dummy hash of the same cost), bounds how many bcrypt runs happen at
once, remembers recent successes (bcrypt is slow by design, and Prometheus sends the same credentials
every scrape), and limits the failed attempts of each client address.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import bcrypt
import yaml

# exporter-toolkit's client_auth_type values. Python's ssl module verifies every certificate a client
# sends, so the two that ask for a certificate without verifying it cannot be offered.
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
UNVERIFIED_CLIENT_AUTH = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")
# TLS 1.0 and 1.1 are deprecated (RFC 8996); exporter-toolkit still accepts them, we do not.
TLS_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
_TLS_KEYS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version"}
_TLS_UNSUPPORTED = {  # exporter-toolkit keys we cannot honour, and why
    "cert": "inline certificates are not supported; use cert_file",
    "key": "inline keys are not supported; use key_file",
    "client_ca": "inline client CAs are not supported; use client_ca_file",
    "cipher_suites": "cipher suites are OpenSSL's defaults for TLS 1.2 and fixed for TLS 1.3",
    "curve_preferences": "curves are OpenSSL's defaults",
    "prefer_server_cipher_suites": "the server's cipher order is always preferred",
    "client_allowed_sans": "client SAN matching is not supported; use a client CA that signs only allowed clients",
}
_TOP_KEYS = {"tls_server_config", "basic_auth_users", "http_server_config"}
_TOP_UNSUPPORTED = {
    "rate_limit": "a global request rate limit is not supported; failed basic-auth attempts are limited per "
                  "client address",
}
# The response headers exporter-toolkit lets a web config set (web/handler.go, extraHTTPHeaders), with
# the values allowed where the header has an enumeration; None: any value.
EXTRA_HEADERS: dict[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}
# $2a$/$2b$/$2y$, a two-digit cost, 22 characters of salt and 31 of hash.
_BCRYPT = re.compile(r"\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}")


@dataclass(frozen=True)
class WebConfig:
    cert_file: str | None = None
    key_file: str | None = None
    client_auth_type: str = "NoClientCert"
    client_ca_file: str | None = None
    min_version: str = "TLS12"
    max_version: str = "TLS13"
    users: dict[str, bytes] = field(default_factory=dict, repr=False)  # user -> bcrypt hash
    headers: tuple[tuple[str, str], ...] = ()  # http_server_config.headers, added to every response

    @property
    def tls(self) -> bool:
        return bool(self.cert_file)

    def tls_files(self) -> tuple[str, ...]:
        return tuple(p for p in (self.cert_file, self.key_file, self.client_ca_file) if p)

    def ssl_context(self) -> ssl.SSLContext:
        """A server context from the files as they are now (the server rebuilds it when they change)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = TLS_VERSIONS[self.min_version]
        context.maximum_version = TLS_VERSIONS[self.max_version]
        context.options |= ssl.OP_NO_RENEGOTIATION  # a client could make the server redo handshakes for free
        context.set_alpn_protocols(["http/1.1"])  # a client offering h2 learns at once that we speak HTTP/1.1
        context.load_cert_chain(self.cert_file, self.key_file)
        context.verify_mode = CLIENT_AUTH[self.client_auth_type]
        if self.client_ca_file:
            context.load_verify_locations(self.client_ca_file)
        return context


def load_web_config(path: str) -> tuple[WebConfig, list[str]]:
    """The web config at ``path`` and every problem found in it (an empty list when it can be used)."""
    where = f"--web.config.file {path}"
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except (OSError, UnicodeDecodeError) as exc:
        return WebConfig(), [f"cannot read {where}: {getattr(exc, 'strerror', None) or exc}"]
    except yaml.YAMLError as exc:
        return WebConfig(), [f"{where} is not valid YAML: {exc}"]
    if not isinstance(data, dict):
        return WebConfig(), [f"{where}: expected a mapping at the top level"]
    problems: list[str] = []
    for key in sorted(set(data) - _TOP_KEYS, key=str):
        reason = _TOP_UNSUPPORTED.get(key)
        problems.append(f"{where}: {key}: {reason}" if reason else f"{where}: unknown key {key!r}")
    tls = _mapping(data, "tls_server_config", where, problems)
    http = _mapping(data, "http_server_config", where, problems)

    for key in sorted(set(tls) - _TLS_KEYS, key=str):
        reason = _TLS_UNSUPPORTED.get(key)
        problems.append(f"{where}: tls_server_config.{key}: {reason}" if reason
                        else f"{where}: unknown tls_server_config key {key!r}")
    base = os.path.dirname(os.path.abspath(path))

    def resolve(name: str) -> str | None:  # relative to the web config file, as in exporter-toolkit
        value = tls.get(name)
        if value in (None, ""):
            return None
        if not isinstance(value, str):
            problems.append(f"{where}: tls_server_config.{name} must be a file path")
            return None
        full = value if os.path.isabs(value) else os.path.join(base, value)
        if not os.path.isfile(full):
            problems.append(f"{where}: {name} {full} does not exist")
        elif not os.access(full, os.R_OK):
            problems.append(f"{where}: {name} {full} is not readable")
        return full

    for name in ("client_auth_type", "min_version", "max_version"):  # the names the checks below look up
        if tls.get(name) is not None and not isinstance(tls[name], str):
            problems.append(f"{where}: tls_server_config.{name} must be a name, not {type(tls[name]).__name__}")
            tls[name] = None
    cert, key, ca = resolve("cert_file"), resolve("key_file"), resolve("client_ca_file")
    if bool(cert) != bool(key):
        problems.append(f"{where}: cert_file and key_file go together")
    auth_type = tls.get("client_auth_type") or "NoClientCert"
    if auth_type in UNVERIFIED_CLIENT_AUTH:
        problems.append(f"{where}: client_auth_type {auth_type} asks for a client certificate without verifying "
                        f"it, which this exporter cannot do; use VerifyClientCertIfGiven or "
                        f"RequireAndVerifyClientCert with client_ca_file")
    elif auth_type not in CLIENT_AUTH:
        problems.append(f"{where}: client_auth_type {auth_type!r} is not one of {', '.join(CLIENT_AUTH)}")
    elif auth_type != "NoClientCert" and "client_ca_file" not in tls:
        problems.append(f"{where}: client_auth_type {auth_type} needs client_ca_file")
    elif auth_type == "NoClientCert" and ca:
        problems.append(f"{where}: client_ca_file is set but client_auth_type is NoClientCert; "
                        f"set client_auth_type to VerifyClientCertIfGiven or RequireAndVerifyClientCert")
    if (auth_type != "NoClientCert" or ca) and not cert:
        problems.append(f"{where}: client certificates need TLS: set cert_file and key_file")
    versions = {}
    for name, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        versions[name] = tls.get(name) or default
        if versions[name] not in TLS_VERSIONS:
            problems.append(f"{where}: {name} {versions[name]!r} is not one of {', '.join(TLS_VERSIONS)}")
    if all(v in TLS_VERSIONS for v in versions.values()) and \
            TLS_VERSIONS[versions["min_version"]] > TLS_VERSIONS[versions["max_version"]]:
        problems.append(f"{where}: min_version {versions['min_version']} is above max_version "
                        f"{versions['max_version']}")

    headers = _headers(http, where, problems)
    users = _users(data.get("basic_auth_users"), where, problems)
    web = WebConfig(cert, key, auth_type, ca, versions["min_version"], versions["max_version"], users, headers)
    if web.tls and not problems:
        try:  # the certificate and key must load now, not at the first scrape
            web.ssl_context()
        except (ssl.SSLError, OSError, ValueError) as exc:
            files = f"cert_file {cert}, key_file {key}" + (f", client_ca_file {ca}" if ca else "")
            problems.append(f"{where}: cannot use {files}: {getattr(exc, 'reason', None) or exc}")
    return web, problems


def _mapping(data: dict, key: str, where: str, problems: list[str]) -> dict:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(f"{where}: {key} must be a mapping")
        return {}
    return value


def _headers(http: dict, where: str, problems: list[str]) -> tuple[tuple[str, str], ...]:
    for key in sorted(set(http) - {"http2", "headers"}, key=str):
        problems.append(f"{where}: unknown http_server_config key {key!r}")
    if http.get("http2") not in (None, False):
        problems.append(f"{where}: http_server_config.http2 {http['http2']!r}: this exporter serves HTTP/1.1 only; "
                        f"set http2: false or remove it")
    raw = http.get("headers") or {}
    if not isinstance(raw, dict):
        problems.append(f"{where}: http_server_config.headers must map header names to values")
        return ()
    headers = []
    for name, value in raw.items():
        if name not in EXTRA_HEADERS:
            problems.append(f"{where}: HTTP header {name!r} can not be configured; allowed: {', '.join(EXTRA_HEADERS)}")
            continue
        allowed = EXTRA_HEADERS[name]
        if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            problems.append(f"{where}: HTTP header {name}: the value must be one line of text")
        elif allowed is not None and value not in allowed:
            problems.append(f"{where}: HTTP header {name}: {value!r} is not one of {', '.join(allowed)}")
        else:
            headers.append((name, value))
    return tuple(headers)


def _users(raw, where: str, problems: list[str]) -> dict[str, bytes]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"{where}: basic_auth_users must map user names to bcrypt hashes")
        return {}
    users: dict[str, bytes] = {}
    for user, hashed in raw.items():
        match = _BCRYPT.fullmatch(hashed) if isinstance(hashed, str) else None
        if not match:  # the value itself is never printed: it may be a plain-text password by mistake
            problems.append(f"{where}: basic_auth_users[{str(user)!r}] is not a bcrypt hash ($2y$10$... from htpasswd -B)")
        elif not 4 <= int(match.group(1)) <= 31:
            problems.append(f"{where}: basic_auth_users[{str(user)!r}]: bcrypt cost {match.group(1)} is not between 4 and 31")
        elif ":" in str(user):
            problems.append(f"{where}: basic_auth_users[{str(user)!r}]: a user name cannot contain ':'")
        else:
            users[str(user)] = hashed.encode()
    return users


def parse_basic(header: str) -> tuple[str, bytes] | None:
    """``Basic dXNlcjpwdw==`` -> (user, password); None when it is not basic auth."""
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None
    return user.decode("utf-8", "surrogateescape"), password


class AttemptLimiter:
    """A token bucket per client address: ``burst`` attempts at once, refilled one per ``refill`` seconds.

    Only attempts that need bcrypt take a token, and a success gives it back: a scraper with the right
    password is never limited, a guesser gets ``burst`` tries and then one per ``refill`` seconds.
    The addresses kept are bounded; the least recently seen is forgotten first.
    """

    def __init__(self, burst: int = 10, refill: float = 6.0, max_clients: int = 4096):
        self.burst, self.refill, self.max_clients = burst, refill, max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tokens, at)
        self._mu = threading.Lock()

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.pop(client, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - at) / self.refill)
        self._buckets[client] = (tokens, now)
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)
        return tokens

    def take(self, client: str) -> float:
        """0.0 and one token taken when ``client`` may try now; else the seconds until it may."""
        now = time.monotonic()
        with self._mu:
            tokens = self._tokens(client, now)
            if tokens < 1.0:
                return (1.0 - tokens) * self.refill
            self._buckets[client] = (tokens - 1.0, now)
            return 0.0

    def give_back(self, client: str) -> None:
        now = time.monotonic()
        with self._mu:
            self._buckets[client] = (min(float(self.burst), self._tokens(client, now) + 1.0), now)


class BasicAuth:
    """Checks credentials against bcrypt hashes. ``check`` is thread-safe and runs bcrypt at most
    ``concurrency`` at a time; the HTTP server calls it off its event loop (web/server.py)."""

    def __init__(self, users: dict[str, bytes], *, concurrency: int = 2, cache_size: int = 64,
                 limiter: AttemptLimiter | None = None):
        self._users = dict(users)
        self._cache: OrderedDict[bytes, None] = OrderedDict()  # digests of recent successes
        self._cache_size = cache_size
        self._mu = threading.Lock()
        self._bcrypt_slots = threading.BoundedSemaphore(concurrency)
        self.limiter = limiter or AttemptLimiter()
        # An unknown user is checked against this hash, of the highest cost in use, so that it costs what a
        # known user with a wrong password costs. Its password is random and thrown away.
        cost = max((int(h[4:6]) for h in self._users.values()), default=4)
        self._dummy = bcrypt.hashpw(os.urandom(16).hex().encode(), bcrypt.gensalt(cost)) if self._users else b""

    @property
    def enabled(self) -> bool:
        return bool(self._users)

    def _key(self, user: str, password: bytes) -> bytes | None:
        hashed = self._users.get(user)
        if hashed is None:
            return None
        return hashlib.sha256(user.encode("utf-8", "surrogateescape") + b"\0" + hashed + b"\0" + password).digest()

    def cached(self, user: str, password: str | bytes) -> bool:
        """True when these credentials succeeded recently: no bcrypt needed."""
        key = self._key(user, _bytes(password))
        if key is None:
            return False
        with self._mu:
            if key in self._cache:
                self._cache.move_to_end(key)
                return True
        return False

    def check(self, user: str, password: str | bytes) -> bool:
        """True when ``password`` is the user's. Slow (bcrypt) unless the pair succeeded recently."""
        password = _bytes(password)
        if self.cached(user, password):
            return True
        hashed = self._users.get(user)
        # bcrypt reads at most 72 bytes and the library refuses more; a longer password fails after the same work.
        too_long = len(password) > 72
        with self._bcrypt_slots:
            ok = bcrypt.checkpw(password[:72], hashed if hashed is not None else self._dummy)
        if not ok or hashed is None or too_long:
            return False
        key = self._key(user, password)
        with self._mu:
            self._cache[key] = None
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return True


def _bytes(password: str | bytes) -> bytes:
    return password if isinstance(password, bytes) else password.encode("utf-8", "surrogateescape")
