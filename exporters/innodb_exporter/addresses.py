"""Server addresses in one canonical spelling, and the allow-list that decides where ``/probe`` may connect.

Every spelling of one address must be one target: ``127.1``, ``127.0.0.01`` and ``0x7f.0.0.1`` are how
the C library reads ``127.0.0.1`` too, and ``/tmp//./mysqld.sock`` is ``/tmp/mysqld.sock``. Otherwise
each spelling keeps a connection of its own, and a caller exhausts the server's connections.

The allow-list matches canonical addresses lexically: a host name allows that name (any case, with or
without the trailing dot), never the addresses it resolves to; an IP address or a CIDR range allows IP
addresses. No DNS lookup decides what is allowed.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from dataclasses import dataclass

DEFAULT_PORT = 3306
_HOSTNAME_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?")


class AddressError(ValueError):
    pass


@dataclass(frozen=True)
class Address:
    """A TCP address (host canonical, port) or a unix socket path (host None)."""

    host: str | None
    port: int | None
    socket: str | None = None

    def __str__(self) -> str:
        if self.socket:
            return f"unix://{self.socket}"
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def ip(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        try:
            return ipaddress.ip_address(self.host) if self.host else None
        except ValueError:
            return None


def canonical_host(host: str) -> str:
    host = host.strip().lower().removesuffix(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return str(ipaddress.ip_address(host.split("%")[0]))
    except ValueError:
        pass
    if re.fullmatch(r"[0-9a-fx.]+", host) and not re.fullmatch(r"[a-f.]+", host):
        try:  # the legacy forms inet_aton and getaddrinfo accept: 127.1, 0x7f.1, 127.0.0.01 (octal)
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            pass
    if not _HOSTNAME_RE.fullmatch(host):
        raise AddressError(f"{host!r} is not a host name or an IP address")
    return host


def _split(value: str) -> tuple[str, str]:
    """(host, port text; empty when none) of ``host``, ``host:port``, ``[v6]`` or ``[v6]:port``."""
    if value.startswith("["):
        host, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise AddressError(f"address {value!r} is not [IPv6]:PORT")
        return host, rest[1:]
    if value.count(":") > 1:  # a bare IPv6 address
        return value, ""
    host, _, port = value.partition(":")
    return host, port


def parse(value: str, default_port: int = DEFAULT_PORT) -> Address:
    """``host``, ``host:port``, ``[v6]:port``, ``unix:///path`` or ``/path`` -> a canonical Address."""
    value = value.strip()
    if value.startswith("unix://") or value.startswith("/"):
        path = value.removeprefix("unix://")
        if not path.startswith("/") or "\0" in path:
            raise AddressError(f"socket {value!r} must be an absolute path")
        return Address(None, None, "/" + os.path.normpath(path).lstrip("/"))
    host, port = _split(value)
    if not host:
        raise AddressError(f"address {value!r} has no host")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise AddressError(f"address {value!r}: port {port!r} is not a number between 1 and 65535")
    return Address(canonical_host(host), int(port) if port else default_port)


@dataclass(frozen=True)
class Rule:
    """One allow-list entry: ``*``, a socket path, a host (any port) or host:port, a CIDR range."""

    any: bool = False
    address: Address | None = None
    any_port: bool = False
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None

    @classmethod
    def parse(cls, text: str) -> "Rule":
        text = text.strip()
        if text == "*":
            return cls(any=True)
        if "/" in text and not text.startswith(("/", "unix://")):
            try:
                return cls(network=ipaddress.ip_network(text, strict=False))
            except ValueError as exc:
                raise AddressError(f"{text!r} is not a CIDR range: {exc}") from None
        address = parse(text)
        return cls(address=address, any_port=address.socket is None and not _split(text)[1])

    def allows(self, address: Address) -> bool:
        if self.any:
            return True
        if self.network is not None:
            ip = address.ip
            return ip is not None and ip.version == self.network.version and ip in self.network
        if self.address.socket or address.socket:
            return self.address.socket == address.socket
        return self.address.host == address.host and (self.any_port or self.address.port == address.port)


class Allowlist:
    """Where ``/probe`` may connect: rules from flags, plus targets read from Prometheus file_sd files."""

    def __init__(self, rules: list[Rule], target_files: tuple[str, ...] = ()):
        self.rules = rules
        self.target_files = target_files
        self._file_rules: list[Rule] = []
        self._stamps: dict[str, float | None] = {}

    def allows(self, address: Address) -> bool:
        self._reload()
        return any(rule.allows(address) for rule in self.rules + self._file_rules)

    def _reload(self) -> None:
        """Re-read the target files when they change (Prometheus writes them atomically)."""
        stamps = {path: _mtime(path) for path in self.target_files}
        if stamps == self._stamps:
            return
        rules = []
        for path in self.target_files:
            for target in read_target_file(path):
                try:
                    rules.append(Rule(address=parse(target)))
                except AddressError:
                    continue  # Prometheus would not scrape it either
        self._file_rules, self._stamps = rules, stamps


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def read_target_file(path: str) -> list[str]:
    """The targets of a Prometheus file_sd file (YAML or JSON: a list of {targets: [...], labels: {...}})."""
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            groups = yaml.safe_load(f) or []
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return []
    targets = []
    for group in groups if isinstance(groups, list) else []:
        if isinstance(group, dict) and isinstance(group.get("targets"), list):
            targets += [str(t) for t in group["targets"]]
    return targets
