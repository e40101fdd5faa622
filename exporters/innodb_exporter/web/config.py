"""``--web.config.file``: Prometheus exporter-toolkit's web configuration, read as the toolkit (v0.20) reads it.

    tls_server_config:
      cert_file: server.crt            # paths are relative to this file; or cert:/key: inline PEM
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # against client_ca_file, or the system's roots
      client_ca_file: ca.crt
      client_allowed_sans: [prometheus.example]
    http_server_config:
      headers:                         # exporter-toolkit's allowed set, added to every response
        Strict-Transport-Security: max-age=31536000
    basic_auth_users:
      prometheus: $2y$10$...   # bcrypt hash, e.g. from `htpasswd -nBC 10 "" | tr -d ':\\n'`
    rate_limit:                        # one token bucket for every request
      interval: 1s
      burst: 20

The rule is the toolkit's: every file it accepts starts the exporter with the same meaning, every file it
refuses is refused, each problem naming its line and key (all of them at once, where the toolkit stops at the
first). The YAML is read the way Go's yaml.UnmarshalStrict reads it into the toolkit's types: unknown or
repeated keys are errors, a scalar given for a string is its text (``X-XSS-Protection: 1`` is "1"), only
the first document counts. docs/http.md has the table of every option and the few differences (HTTP/2 is
not spoken; only the certificate files are re-read while running).

``BasicAuth`` checks credentials so that timing tells nothing about which users exist (an unknown user
costs one bcrypt run against a dummy hash of the users' highest cost, made without hashing anything, so
that any cost starts at once), bounds how many bcrypt runs happen at once, remembers recent successes
(bcrypt is slow by design, and Prometheus sends the same credentials every scrape), and limits the failed
attempts of each client address. ``RateLimiter`` is the toolkit's ``rate_limit``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
import re
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import bcrypt
import yaml

from . import openssl, tls

log = logging.getLogger("innodb_exporter")

# The response headers exporter-toolkit lets a web config set (web/handler.go, extraHTTPHeaders), with
# the values allowed where the header has an enumeration; None: any value.
EXTRA_HEADERS: dict[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}
_CLIENT_AUTH_ALIASES = {"": "NoClientCert", "RequireClientCert": "RequireAnyClientCert"}  # the toolkit's too


@dataclass(frozen=True)
class RateLimit:
    interval: float  # seconds between two tokens; below 0: no limit (Go's rate.Inf)
    burst: int


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
    cert: str | None = None  # inline PEM, used when the file is not set
    key: str | None = field(default=None, repr=False)
    client_ca: str | None = None
    client_allowed_sans: tuple[str, ...] | None = None  # None: no check; (): every certificate refused
    cipher_suites: tuple[str, ...] = ()  # Go's names
    curve_preferences: tuple[str, ...] = ()  # Go's names
    rate_limit: RateLimit | None = None

    @property
    def tls(self) -> bool:
        return bool(self.cert_file or self.cert)

    def tls_files(self) -> tuple[str, ...]:
        return tuple(p for p in (self.cert_file, self.key_file, self.client_ca_file) if p)

    def ssl_context(self) -> ssl.SSLContext:
        """A server context from the files as they are now (the server rebuilds it when they change)."""
        return tls.server_context(self)


# --- reading the YAML as go-yaml's UnmarshalStrict reads it into the toolkit's types --------------------------

_NULL, _BOOL, _INT, _FLOAT = (f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float"))
_GO_BOOL = {"y": True, "Y": True, "n": False, "N": False}  # YAML 1.1 booleans PyYAML does not resolve
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class _Reader:
    """Turns YAML nodes into values of the toolkit's field types, collecting every problem with its line."""

    def __init__(self, where: str):
        self.where, self.problems = where, []
        self._flattener = yaml.SafeLoader("")  # for << merge keys

    def fail(self, node, path: str, text: str) -> None:
        self.problems.append(f"{self.where}: line {node.start_mark.line + 1}: {path}: {text}")

    def mapping(self, node, path: str, fields: dict) -> dict:
        """{key: node} of a mapping whose keys must be among ``fields`` (None: any key)."""
        if node is None or node.tag == _NULL:
            return {}
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, path or "the file", f"expected a mapping, not {_kind(node)}")
            return {}
        self._flattener.flatten_mapping(node)
        found: dict = {}
        for key_node, value in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            name = f"{path}.{key}" if path else str(key)
            if key is None:
                self.fail(key_node, path or "the file", "a key must be a scalar")
            elif fields is not None and key not in fields:
                self.fail(key_node, name, f"unknown key (known: {', '.join(fields)})")
            elif key in found:
                self.fail(key_node, name, "set twice")
            else:
                found[key] = value
        return found

    def string(self, node, path: str) -> str:
        if node is None or node.tag == _NULL:
            return ""
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, path, f"expected a string, not {_kind(node)}")
            return ""
        return node.value

    def strings(self, node, path: str) -> tuple[str, ...] | None:
        if node is None or node.tag == _NULL:
            return None
        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, path, f"expected a list, not {_kind(node)}")
            return None
        return tuple(self.string(item, f"{path}[{i}]") for i, item in enumerate(node.value))

    def boolean(self, node, path: str, default: bool) -> bool:
        if node is None:
            return default
        if node.tag == _NULL:
            return False
        if node.tag == _BOOL:
            return node.value.lower() in ("yes", "true", "on")
        if isinstance(node, yaml.ScalarNode) and node.style is None and node.value in _GO_BOOL:
            return _GO_BOOL[node.value]
        self.fail(node, path, f"expected true or false, not {node.value if isinstance(node, yaml.ScalarNode) else _kind(node)!r}")
        return default

    def integer(self, node, path: str) -> int:
        if node is None or node.tag == _NULL:
            return 0
        try:
            if node.tag == _INT:
                return int(self._flattener.construct_yaml_int(node))
            if node.tag == _FLOAT:
                return int(self._flattener.construct_yaml_float(node))  # Go truncates
        except (ValueError, OverflowError):
            pass
        self.fail(node, path, f"expected an integer, not {node.value if isinstance(node, yaml.ScalarNode) else _kind(node)!r}")
        return 0

    def duration(self, node, path: str) -> float:
        """Seconds, from a Go duration ("1s", "1m30s", "100ms") or a bare number of nanoseconds."""
        if node is None or node.tag == _NULL:
            return 0.0
        if node.tag in (_INT, _FLOAT):
            return self.integer(node, path) * 1e-9
        text = self.string(node, path)
        try:
            return go_duration(text)
        except ValueError:
            self.fail(node, path, f"{text!r} is not a duration (e.g. 1s, 100ms, 1m30s)")
            return 0.0


def _kind(node) -> str:
    return {yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list"}.get(type(node), "a scalar")


def go_duration(text: str) -> float:
    """Go's time.ParseDuration, in seconds."""
    sign, rest = (-1.0, text[1:]) if text[:1] == "-" else (1.0, text[1:] if text[:1] == "+" else text)
    if rest == "0":
        return 0.0
    total, at = 0.0, 0
    while at < len(rest) or at == 0:
        match = _DURATION_PART.match(rest, at)
        if not match or match.group(1) in ("", "."):
            raise ValueError(text)
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        at = match.end()
    return sign * total


_TOP = ("tls_server_config", "http_server_config", "basic_auth_users", "rate_limit")
_TLS = ("cert", "key", "client_ca", "cert_file", "key_file", "client_auth_type", "client_ca_file",
        "client_allowed_sans", "min_version", "max_version", "cipher_suites", "prefer_server_cipher_suites",
        "curve_preferences")


def load_web_config(path: str) -> tuple[WebConfig, list[str]]:
    """The web config at ``path`` and every problem found in it (an empty list when it can be used)."""
    where = f"--web.config.file {path}"
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        root = next(yaml.compose_all(text, Loader=yaml.SafeLoader), None)  # later documents are ignored
    except (OSError, UnicodeDecodeError) as exc:
        return WebConfig(), [f"cannot read {where}: {getattr(exc, 'strerror', None) or exc}"]
    except yaml.YAMLError as exc:
        return WebConfig(), [f"{where} is not valid YAML: {exc}"]
    r = _Reader(where)
    top = r.mapping(root, "", dict.fromkeys(_TOP))
    base = os.path.dirname(os.path.abspath(path))
    tls_fields = r.mapping(top.get("tls_server_config"), "tls_server_config", dict.fromkeys(_TLS))
    web = _tls(r, tls_fields, base)
    http = r.mapping(top.get("http_server_config"), "http_server_config", dict.fromkeys(("http2", "headers")))
    http2 = r.boolean(http.get("http2"), "http_server_config.http2", default=True)
    headers = _headers(r, http.get("headers"))
    users = _users(r, top.get("basic_auth_users"))
    rate_limit = _rate_limit(r, top.get("rate_limit"))
    if web.tls and web.cipher_suites and http2 and tls.TLS_VERSIONS[web.min_version] < ssl.TLSVersion.TLSv1_3 \
            and not set(web.cipher_suites) & set(tls.HTTP2_REQUIRED_CIPHERS):
        r.fail(tls_fields["cipher_suites"], "tls_server_config.cipher_suites",
               f"with http_server_config.http2 true (the default), HTTP/2 needs one of "
               f"{' or '.join(tls.HTTP2_REQUIRED_CIPHERS)} (Go's net/http refuses to start without)")
    web = WebConfig(**{**web.__dict__, "users": users, "headers": headers, "rate_limit": rate_limit})
    if web.tls and not r.problems:
        try:  # the certificate and key must load now, not at the first scrape
            web.ssl_context()
        except openssl.Unsupported as exc:
            r.problems.append(f"{where}: tls_server_config.client_auth_type {web.client_auth_type} or "
                              f"curve_preferences: this Python cannot do it ({exc})")
        except (ssl.SSLError, OSError, ValueError) as exc:
            sources = [f"{name} {value}" for name, value in (("cert_file", web.cert_file), ("key_file", web.key_file))
                       if value] + [f"inline {name}" for name in ("cert", "key") if getattr(web, name) and
                                    not getattr(web, f"{name}_file")]
            r.problems.append(f"{where}: tls_server_config: cannot use {', '.join(sources)}: "
                              f"{getattr(exc, 'reason', None) or exc}")
    return web, r.problems


def _tls(r: _Reader, fields: dict, base: str) -> WebConfig:
    p = "tls_server_config"
    text = {name: r.string(fields.get(name), f"{p}.{name}") for name in
            ("cert", "key", "client_ca", "cert_file", "key_file", "client_ca_file", "client_auth_type",
             "min_version", "max_version")}
    files = {}
    for name in ("cert_file", "key_file", "client_ca_file"):
        value = text[name]
        if value:  # relative to the web config file, as in the toolkit
            files[name] = full = value if os.path.isabs(value) else os.path.join(base, value)
            if not os.path.exists(full):
                r.fail(fields[name], f"{p}.{name}", f"{full} does not exist")
            elif os.path.isdir(full):
                r.fail(fields[name], f"{p}.{name}", f"{full} is a directory")
            elif not os.access(full, os.R_OK):
                r.fail(fields[name], f"{p}.{name}", f"{full} is not readable")
    enabled = any(text[n] for n in ("cert", "key", "client_ca", "cert_file", "key_file", "client_ca_file",
                                    "client_auth_type"))
    auth = _CLIENT_AUTH_ALIASES.get(text["client_auth_type"], text["client_auth_type"])
    versions = {}
    for name, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        versions[name] = text[name] or default
        if versions[name] not in tls.TLS_VERSIONS:
            r.fail(fields[name], f"{p}.{name}", f"unknown TLS version {versions[name]!r} "
                                                f"(one of {', '.join(tls.TLS_VERSIONS)})")
            versions[name] = default
    lists = {}
    for name, known in (("cipher_suites", tls.CIPHER_SUITES), ("curve_preferences", tls.CURVES)):
        lists[name] = r.strings(fields.get(name), f"{p}.{name}") or ()
        for value in lists[name]:
            if value not in known:
                r.fail(fields[name], f"{p}.{name}", f"unknown {name[:-1].replace('_', ' ')} {value!r} "
                                                    f"(one of {', '.join(known)})")
    r.boolean(fields.get("prefer_server_cipher_suites"), f"{p}.prefer_server_cipher_suites", True)  # ignored, as in v0.20
    sans = r.strings(fields.get("client_allowed_sans"), f"{p}.client_allowed_sans")
    if enabled:
        for name in ("cert", "key"):
            if not text[name] and not text[f"{name}_file"]:
                r.fail(fields.get(f"{name}_file") or fields.get(name) or next(iter(fields.values())), p,
                       f"missing one of {name} or {name}_file")
        if auth not in tls.CLIENT_AUTH_TYPES:
            r.fail(fields["client_auth_type"], f"{p}.client_auth_type",
                   f"invalid ClientAuth {auth!r} (one of {', '.join(tls.CLIENT_AUTH_TYPES)}, RequireClientCert)")
        elif auth == "NoClientCert" and (text["client_ca"] or text["client_ca_file"]):
            name = "client_ca_file" if text["client_ca_file"] else "client_ca"
            r.fail(fields[name], f"{p}.{name}",
                   "client CA's have been configured without a Client Auth Policy: set client_auth_type")
        if auth in tls.UNVERIFIED or lists["curve_preferences"]:
            try:
                openssl.check()
            except openssl.Unsupported as exc:
                name = "client_auth_type" if auth in tls.UNVERIFIED else "curve_preferences"
                r.fail(fields[name], f"{p}.{name}", f"this Python cannot do it: {exc}")
        if text["client_ca_file"] and os.access(files["client_ca_file"], os.R_OK) \
                and not os.path.isdir(files["client_ca_file"]) and not tls.has_certificates(cafile=files["client_ca_file"]):
            log.warning("%s: tls_server_config.client_ca_file %s holds no certificate: every client certificate "
                        "will be refused", r.where, files["client_ca_file"])
        elif not text["client_ca_file"] and text["client_ca"] and not tls.has_certificates(cadata=text["client_ca"]):
            log.warning("%s: tls_server_config.client_ca holds no certificate: every client certificate will be "
                        "refused", r.where)
        if sans is not None and auth == "NoClientCert":
            log.warning("%s: tls_server_config.client_allowed_sans has no effect with client_auth_type "
                        "NoClientCert (no certificate is asked for)", r.where)
        if tls.TLS_VERSIONS[versions["min_version"]] < ssl.TLSVersion.TLSv1_2:
            log.warning("%s: tls_server_config.min_version %s allows TLS versions deprecated by RFC 8996",
                        r.where, versions["min_version"])
        if tls.TLS_VERSIONS[versions["min_version"]] > tls.TLS_VERSIONS[versions["max_version"]]:
            log.warning("%s: tls_server_config.min_version %s is above max_version %s: every TLS handshake will "
                        "fail", r.where, versions["min_version"], versions["max_version"])
    if not enabled:
        return WebConfig()
    return WebConfig(cert_file=files.get("cert_file"), key_file=files.get("key_file"), client_auth_type=auth,
                     client_ca_file=files.get("client_ca_file"), min_version=versions["min_version"],
                     max_version=versions["max_version"], cert=text["cert"] or None, key=text["key"] or None,
                     client_ca=text["client_ca"] or None, client_allowed_sans=sans,
                     cipher_suites=lists["cipher_suites"], curve_preferences=lists["curve_preferences"])


def _headers(r: _Reader, node) -> tuple[tuple[str, str], ...]:
    headers = []
    for name, value_node in r.mapping(node, "http_server_config.headers", None).items():
        path = f"http_server_config.headers.{name}"
        value = r.string(value_node, path)
        if name not in EXTRA_HEADERS:
            r.fail(value_node, path, f"HTTP header {name!r} can not be configured (allowed: {', '.join(EXTRA_HEADERS)})")
        elif EXTRA_HEADERS[name] is not None and value not in EXTRA_HEADERS[name]:
            r.fail(value_node, path, f"invalid value {value!r}, expected one of {', '.join(EXTRA_HEADERS[name])}")
        else:  # Go's header writer turns a line break into a space: so do we, never sending one
            headers.append((name, re.sub(r"[\r\n\0]", " ", value)))
    return tuple(headers)


def _users(r: _Reader, node) -> dict[str, bytes]:
    users: dict[str, bytes] = {}
    for user, value_node in r.mapping(node, "basic_auth_users", None).items():
        hashed = r.string(value_node, f"basic_auth_users.{user}")
        problem = bcrypt_problem(hashed)
        if problem:  # the value itself is never printed: it may be a plain-text password by mistake
            r.fail(value_node, f"basic_auth_users.{user}", f"not a bcrypt hash ($2y$10$... from htpasswd -B): {problem}")
        else:
            users[user] = hashed.encode()
    return users


def _rate_limit(r: _Reader, node) -> RateLimit | None:
    fields = r.mapping(node, "rate_limit", dict.fromkeys(("interval", "burst")))
    interval = r.duration(fields.get("interval"), "rate_limit.interval")
    burst = r.integer(fields.get("burst"), "rate_limit.burst")
    return RateLimit(interval, burst) if interval != 0 else None  # 0: no limiter, as in the toolkit


def bcrypt_cost(hashed: str) -> int:
    """The cost of a hash exporter-toolkit accepts (bcrypt_problem is None): golang.org/x/crypto/bcrypt's Cost."""
    start = 3 if hashed[2] == "$" else 4
    return int(hashed[start:start + 2])


def bcrypt_problem(hashed: str) -> str | None:
    """Why golang.org/x/crypto/bcrypt's Cost refuses ``hashed`` (what the toolkit checks at start), or None.
    It is lenient: a hash it accepts may still never match (a $2x$ prefix, a bad salt); such a user can
    never log in, as with the toolkit."""
    if len(hashed) < 59:
        return "too short"
    if hashed[0] != "$" or hashed[1] > "2":
        return "it does not start with $2"
    start = 3 if hashed[2] == "$" else 4
    if not re.fullmatch(r"[+-]?[0-9]+", hashed[start:start + 2]):
        return "no cost after the version"
    if not 4 <= int(hashed[start:start + 2]) <= 31:
        return f"cost {int(hashed[start:start + 2])} is outside 4..31"
    return None


class RateLimiter:
    """exporter-toolkit's rate_limit: one token bucket for every request (golang.org/x/time/rate's Limiter),
    starting full with ``burst`` tokens and refilled one every ``interval`` seconds. A burst of 0 or less
    refuses every request; an interval below 0 refuses none."""

    def __init__(self, limit: RateLimit):
        self.interval, self.burst = limit.interval, limit.burst
        self._tokens, self._at = float(max(limit.burst, 0)), time.monotonic()
        self._mu = threading.Lock()

    def allow(self) -> bool:
        if self.interval < 0:
            return True
        now = time.monotonic()
        with self._mu:
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) / self.interval)
            self._at = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False


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
        # known user with a wrong password costs.
        self._dummy = dummy_hash(max((bcrypt_cost(h.decode()) for h in self._users.values()), default=4))

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
            try:
                ok = bcrypt.checkpw(password[:72], hashed if hashed is not None else self._dummy)
            except ValueError:  # a hash the toolkit accepts and bcrypt cannot use ($2$...) never matches
                bcrypt.checkpw(password[:72], self._dummy)  # after the same work
                ok = False
        if not ok or hashed is None or too_long:
            return False
        key = self._key(user, password)
        with self._mu:
            self._cache[key] = None
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return True


_BCRYPT_BASE64 = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                                  b"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def dummy_hash(cost: int) -> bytes:
    """A well-formed bcrypt hash of ``cost``, with a random salt and digest: checking a password against it
    costs what checking against a real hash of that cost does, and making it costs nothing (hashing a
    password at cost 18 would take seconds at start, at cost 31 days). No password matches it but by chance
    (2^-184)."""
    # bcrypt's base64 is the standard one with another alphabet and no padding: 16 bytes of salt make 22
    # characters, 23 of digest 31, their unused low bits zero as the standard encoder leaves them.
    salt, digest = (base64.b64encode(os.urandom(n)).translate(_BCRYPT_BASE64).rstrip(b"=") for n in (16, 23))
    return b"$2b$%02d$%s%s" % (cost, salt, digest)


def _bytes(password: str | bytes) -> bytes:
    return password if isinstance(password, bytes) else password.encode("utf-8", "surrogateescape")
