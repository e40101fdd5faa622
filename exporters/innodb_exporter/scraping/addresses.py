"""Server addresses in one canonical spelling, and the allow-list that decides where ``/probe`` may connect.

Every spelling of one address must be one target: ``127.1``, ``127.0.0.01`` and ``0x7f.0.0.1`` are how
the C library reads ``127.0.0.1`` too, and ``/tmp//./mysqld.sock`` is ``/tmp/mysqld.sock``. Otherwise
each spelling keeps a connection of its own, and a caller exhausts the server's connections.

The allow-list matches canonical addresses lexically: a host name allows that name (any case, with or
without the trailing dot), never the addresses it resolves to; an IP address or a CIDR range allows IP
addresses. No DNS lookup decides what is allowed.

It also says whose credentials may go where: a my.cnf section that names a server of its own (a
``[client.NAME]`` with ``host=`` or ``socket=``) lends its credentials to that server only, and that
server is no server for the others' (``[client]``'s, which a probe without ``auth_module`` uses).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import socket
import threading
from dataclasses import dataclass

log = logging.getLogger("innodb_exporter")

DEFAULT_PORT = 3306
_HOSTNAME_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?")


def shown(text: str) -> str:
    """A value quoted for a message, without what a DSN-style value holds before an '@' (a password)."""
    return repr("…@" + text.rsplit("@", 1)[1]) if "@" in text else repr(text)


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
        raise AddressError(f"{shown(host)} is not a host name or an IP address")
    return host


def _split(value: str) -> tuple[str, str]:
    """(host, port text; empty when none) of ``host``, ``host:port``, ``[v6]`` or ``[v6]:port``."""
    if value.startswith("["):
        host, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise AddressError(f"address {shown(value)} is not [IPv6]:PORT")
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
            raise AddressError(f"socket {shown(value)} must be an absolute path")
        return Address(None, None, "/" + os.path.normpath(path).lstrip("/"))
    host, port = _split(value)
    if not host:
        raise AddressError(f"address {shown(value)} has no host")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise AddressError(f"address {shown(value)}: port {shown(port)} is not a number between 1 and 65535")
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
            except ValueError:  # its message would quote the value whole
                raise AddressError(f"{shown(text)} is not a CIDR range (ADDRESS/PREFIX-LENGTH)") from None
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
    """Where ``/probe`` may connect, and with which my.cnf section's credentials.

    ``rules`` (and the targets of ``target_files``, Prometheus file_sd files) are the servers for the
    credentials of ``[client]`` and of every section that names no server of its own. ``sections`` maps
    each section that names one to it: that section's credentials go there and nowhere else (with
    ``explicit`` rules, --probe.allow or --probe.targets-file, only when they list it), and no other
    section's go there, unless it is ``client``'s own server (the server of /metrics) too.
    """

    def __init__(self, rules: list[Rule], target_files: tuple[str, ...] = (),
                 sections: dict[str, Address] | None = None, explicit: bool = True, client: Address | None = None):
        self.rules = rules
        self.target_files = target_files
        self.sections = dict(sections or {})
        self.explicit = explicit
        self.client = client
        self._file_rules: dict[str, list[Rule]] = {}  # path -> the rules of its last good reading
        self._stamps: dict[str, float | None] = {}
        self._mu = threading.Lock()  # concurrent probes: one reads a changed file, the others wait for it

    def allows(self, address: Address, section: str | None = None) -> bool:
        """Whether ``/probe`` may connect to ``address`` with the credentials of ``section`` (None: [client])."""
        own = self.sections.get(section) if section else None
        if own is not None:
            return own == address and (not self.explicit or self._listed(address))
        if address != self.client and self.named_by(address):
            return False  # a server that another section keeps for its own credentials
        return self._listed(address)

    def named_by(self, address: Address) -> list[str]:
        """The sections that name ``address`` as their own server."""
        return sorted(name for name, own in self.sections.items() if own == address)

    def _listed(self, address: Address) -> bool:
        with self._mu:
            self._reload()
            rules = [self.rules, *self._file_rules.values()]
        return any(rule.allows(address) for group in rules for rule in group)

    def _reload(self) -> None:
        """Re-read the target files that changed (Prometheus writes them atomically). As Prometheus does, a
        file that cannot be read keeps the targets of its last good reading, and one that is gone has none."""
        for path in self.target_files:
            stamp = _mtime(path)
            if path in self._stamps and stamp == self._stamps[path]:
                continue
            self._stamps[path] = stamp
            try:
                targets = read_target_file(path) if stamp is not None else []
            except TargetFileError as exc:
                log.error("cannot read --probe.targets-file %s (%s): keeping the %d targets of its last good reading",
                          path, exc, len(self._file_rules.get(path, [])))
                continue
            rules = []
            for target in targets:
                try:
                    rules.append(Rule(address=parse(target)))
                except AddressError:
                    continue  # Prometheus would not scrape it either
            self._file_rules[path] = rules


class TargetFileError(Exception):
    """A targets file that could not be read or is not a file_sd list (the message quotes none of it)."""


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
    except OSError as exc:
        raise TargetFileError(exc.strerror or type(exc).__name__) from None
    except UnicodeDecodeError:
        raise TargetFileError("not UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise TargetFileError(f"not YAML or JSON{f' (line {mark.line + 1})' if mark else ''}") from None
    if not isinstance(groups, list):
        raise TargetFileError("not a list of target groups")
    targets = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("targets"), list):
            targets += [str(t) for t in group["targets"]]
    return targets
