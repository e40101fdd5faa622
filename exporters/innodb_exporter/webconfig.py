"""``--web.config.file``: TLS and basic auth, in the Prometheus exporter-toolkit format.

    tls_server_config:
      cert_file: server.crt
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # optional, with client_ca_file
      client_ca_file: ca.crt
    basic_auth_users:
      prometheus: $2y$10$...   # bcrypt hash, e.g. from `htpasswd -nBC 10 "" | tr -d ':\\n'`
"""

from __future__ import annotations

import hashlib
import hmac
import os
import ssl
import threading
from dataclasses import dataclass, field

import bcrypt
import yaml

CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "RequestClientCert": ssl.CERT_OPTIONAL,
    "RequireAnyClientCert": ssl.CERT_REQUIRED,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
TLS_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
_TLS_KEYS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version"}


@dataclass(frozen=True)
class WebConfig:
    cert_file: str | None = None
    key_file: str | None = None
    client_auth_type: str = "NoClientCert"
    client_ca_file: str | None = None
    min_version: str = "TLS12"
    users: dict[str, bytes] = field(default_factory=dict, repr=False)  # user -> bcrypt hash

    @property
    def tls(self) -> bool:
        return bool(self.cert_file)

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = TLS_VERSIONS[self.min_version]
        context.load_cert_chain(self.cert_file, self.key_file)
        context.verify_mode = CLIENT_AUTH[self.client_auth_type]
        if self.client_ca_file:
            context.load_verify_locations(self.client_ca_file)
        return context


def load_web_config(path: str) -> tuple[WebConfig, list[str]]:
    problems: list[str] = []
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as exc:
        return WebConfig(), [f"cannot read --web.config.file {path}: {exc}"]
    if not isinstance(data, dict):
        return WebConfig(), [f"--web.config.file {path}: expected a mapping at the top level"]
    for key in sorted(set(data) - {"tls_server_config", "basic_auth_users", "http_server_config"}):
        problems.append(f"--web.config.file {path}: unknown key {key!r}")
    tls = data.get("tls_server_config") or {}
    if not isinstance(tls, dict):
        problems.append(f"--web.config.file {path}: tls_server_config must be a mapping")
        tls = {}
    for key in sorted(set(tls) - _TLS_KEYS):
        problems.append(f"--web.config.file {path}: unknown tls_server_config key {key!r}")
    base = os.path.dirname(os.path.abspath(path))

    def resolve(name):  # paths are relative to the web config file, as in exporter-toolkit
        value = tls.get(name)
        if not value:
            return None
        full = value if os.path.isabs(value) else os.path.join(base, value)
        if not os.path.exists(full):
            problems.append(f"--web.config.file {path}: {name} {full} does not exist")
        return full

    cert, key, ca = resolve("cert_file"), resolve("key_file"), resolve("client_ca_file")
    if bool(cert) != bool(key):
        problems.append(f"--web.config.file {path}: cert_file and key_file go together")
    auth_type = tls.get("client_auth_type", "NoClientCert")
    if auth_type not in CLIENT_AUTH:
        problems.append(f"--web.config.file {path}: client_auth_type {auth_type!r} is not one of {', '.join(CLIENT_AUTH)}")
    if auth_type == "RequireAndVerifyClientCert" and not ca:
        problems.append(f"--web.config.file {path}: client_auth_type {auth_type} needs client_ca_file")
    min_version = tls.get("min_version", "TLS12")
    if min_version not in TLS_VERSIONS:
        problems.append(f"--web.config.file {path}: min_version {min_version!r} is not one of {', '.join(TLS_VERSIONS)}")
    users_raw = data.get("basic_auth_users") or {}
    users: dict[str, bytes] = {}
    if not isinstance(users_raw, dict):
        problems.append(f"--web.config.file {path}: basic_auth_users must map user names to bcrypt hashes")
    else:
        for user, hashed in users_raw.items():
            if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
                problems.append(f"--web.config.file {path}: basic_auth_users[{user!r}] is not a bcrypt hash")
            else:
                users[str(user)] = hashed.encode()
    return WebConfig(cert, key, auth_type, ca, min_version, users), problems


class BasicAuth:
    """Checks credentials against bcrypt hashes; remembers successes, since bcrypt is slow by design."""

    def __init__(self, users: dict[str, bytes]):
        self._users = users
        self._ok: set[bytes] = set()
        self._mu = threading.Lock()

    @property
    def enabled(self) -> bool:
        return bool(self._users)

    def check(self, user: str, password: str) -> bool:
        hashed = self._users.get(user)
        if hashed is None:
            return False
        key = hashlib.sha256(hashed + b"\0" + password.encode()).digest()
        with self._mu:
            if any(hmac.compare_digest(key, k) for k in self._ok):
                return True
        if not bcrypt.checkpw(password.encode(), hashed):
            return False
        with self._mu:
            if len(self._ok) < 64:
                self._ok.add(key)
        return True
