"""Validated configuration: flags, the environment and the my.cnf, checked all at once.

``load()`` is pure apart from reading the files it is pointed at; it returns the configuration and
every problem it found, so that a user fixes them all in one go instead of one per restart. No
message quotes a line of the my.cnf or a password: they may hold one.
"""

from __future__ import annotations

import configparser
import importlib.util
import os
import re
from dataclasses import dataclass, field

from . import sources
from .capture.settings import CaptureSettings
from .scraping import addresses
from .scraping.connection import SSL_MODES, ConnectionSettings
from .scraping.target import ScrapeOptions
from .scraping.targets import ProbeLimits
from .web.config import WebConfig, load_web_config

PASSWORD_ENV = "MYSQLD_EXPORTER_PASSWORD"
MAX_SCRAPE_TIMEOUT = 300.0  # seconds; also the most a scraper's timeout header gets
MAX_SECONDS = 7 * 86400.0  # the longest of the other durations
MAX_SNAPSHOTS = 100  # per capture
DEFAULT_MY_CNF = "~/.my.cnf"


@dataclass(frozen=True)
class Config:
    listen_host: str
    listen_port: int
    telemetry_path: str
    connection: ConnectionSettings | None  # the default target of /metrics; None when none is configured
    my_cnf: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)  # sections, for /probe
    my_cnf_path: str = ""
    options: ScrapeOptions = ScrapeOptions()
    timeout_offset: float = 0.25
    default_timeout: float = 10.0
    web: WebConfig = WebConfig()
    allowlist: addresses.Allowlist = field(default_factory=lambda: addresses.Allowlist([]))
    limits: ProbeLimits = ProbeLimits()
    capture: CaptureSettings = CaptureSettings()


def parse_listen_address(value: str) -> tuple[str, int]:
    """``:9207`` (every address, IPv4 and IPv6: host ""), ``0.0.0.0:9207`` or ``[::1]:9207`` -> (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--web.listen-address {value!r} is not HOST:PORT (e.g. ':9207')")
    return host.strip("[]"), int(port)


class MyCnfError(Exception):
    pass


def read_my_cnf(path: str) -> dict[str, dict[str, str]]:
    """The sections of a my.cnf. ``!include`` lines and option flags without a value are allowed.

    configparser quotes the offending line in its errors, and a my.cnf line may be ``password=…``:
    errors name the line number only.
    """
    with open(path, encoding="utf-8") as f:
        lines = [line if not line.lstrip().startswith("!") else "\n" for line in f]
    parser = configparser.ConfigParser(allow_no_value=True, interpolation=None, strict=False)
    parser.optionxform = lambda option: option.strip().replace("_", "-").lower()
    try:
        parser.read_string("".join(lines), source=path)
    except configparser.MissingSectionHeaderError as exc:
        raise MyCnfError(f"line {exc.lineno}: an option before any [section] header") from None
    except configparser.ParsingError as exc:
        numbers = ", ".join(str(n) for n, _ in exc.errors)
        raise MyCnfError(f"line {numbers}: not an option, a [section] or a comment") from None
    except configparser.Error as exc:
        raise MyCnfError(type(exc).__name__) from None
    return {s: {k: _option_value(v or "") for k, v in parser.items(s)} for s in parser.sections()}


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "s": " ", "\\": "\\", "'": "'", '"': '"'}


def _option_value(raw: str) -> str:
    """A value as the mysql client reads it (mysys/my_default.cc; my_print_defaults shows the same): a ``#``
    outside quotes starts a comment, one pair of quotes around the value is removed, and a backslash
    escapes n, t, r, b, s (a space), a backslash or a quote (before anything else it stays)."""
    quote, escaped, end = "", False, len(raw)
    for i, char in enumerate(raw):
        if char in "'\"" and not escaped:
            quote = char if not quote else ("" if quote == char else quote)
        elif not quote and char == "#":
            end = i
            break
        escaped = bool(quote) and char == "\\" and not escaped
    value = raw[:end].strip()
    if len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]:
        value = value[1:-1]
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            out.append(_ESCAPES.get(value[i + 1], value[i:i + 2]))
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _file(section: dict[str, str], key: str, where: str, problems: list[str]) -> str | None:
    path = section.get(key) or None
    if path and not os.path.isfile(path):
        problems.append(f"{where}: {key} {path} does not exist or is not a file")
    return path


def connection_from(section: dict[str, str], address: str | None, user: str | None,
                    password: str | None, problems: list[str], where: str) -> ConnectionSettings:
    """Connection settings from a my.cnf section, overridden by flags and the environment."""
    host, port, socket = section.get("host") or "localhost", section.get("port") or "3306", section.get("socket")
    try:
        if address:
            parsed = addresses.parse(address)
        elif socket:
            parsed = addresses.parse("unix://" + socket)
        else:
            parsed = addresses.parse(host, default_port=int(port) if port.isdigit() else 3306)
            if not port.isdigit():
                problems.append(f"{where}: port {port!r} is not a number")
    except addresses.AddressError as exc:
        problems.append(f"{where}: {exc}" if not address else str(exc))
        parsed = addresses.Address("localhost", 3306)
    user = user if user is not None else section.get("user", "")
    if not user:
        problems.append(f"no user to connect as: set --mysqld.username or user= in {where}")
    ca, cert, key = (_file(section, k, where, problems) for k in ("ssl-ca", "ssl-cert", "ssl-key"))
    if bool(cert) != bool(key):
        problems.append(f"{where}: ssl-cert and ssl-key go together")
    mode = section.get("ssl-mode", "").upper() or ("VERIFY_CA" if ca else "PREFERRED")
    if section.get("ssl-verify-server-cert", "").lower() in ("1", "on", "true") and mode in ("PREFERRED", "REQUIRED"):
        mode = "VERIFY_IDENTITY"  # MariaDB's spelling of the same wish
    if mode not in SSL_MODES:
        problems.append(f"{where}: ssl-mode {mode!r} is not one of {', '.join(SSL_MODES)}")
    public_key = None
    if key_path := _file(section, "server-public-key-path", where, problems):
        try:
            with open(key_path, "rb") as f:
                public_key = f.read()
        except OSError as exc:
            problems.append(f"{where}: cannot read server-public-key-path {key_path}: {exc.strerror}")
        if importlib.util.find_spec("cryptography") is None:
            problems.append(f"{where}: server-public-key-path needs the cryptography package "
                            "(pip install 'innodb-exporter[rsa]')")
    return ConnectionSettings(
        host=parsed.host or "localhost", port=parsed.port or 3306, socket=parsed.socket, user=user,
        password=password if password is not None else section.get("password", ""),
        ssl_mode=mode, ssl_ca=ca, ssl_cert=cert, ssl_key=key, server_public_key=public_key,
    )


def _allowlist(args, connection: ConnectionSettings | None, my_cnf: dict, problems: list[str]) -> addresses.Allowlist:
    """``--probe.allow`` and ``--probe.targets-file``, else the server of /metrics; and the server each
    ``[client.NAME]`` section names of its own (host= or socket=), for that section's credentials only."""
    explicit = bool(args.probe_allow or args.probe_targets_files)
    texts = list(args.probe_allow) if explicit else [connection.address] if connection else []
    sections: dict[str, addresses.Address] = {}
    for name, section in my_cnf.items():
        if name.startswith("client.") and (section.get("host") or section.get("socket")):
            sub: list[str] = []  # its own problems are reported when /probe asks for it
            own = connection_from({**my_cnf.get("client", {}), **section}, None, "-", None, sub, name)
            sections[name] = addresses.parse(own.address)
    rules = []
    for text in texts:
        try:
            rules.append(addresses.Rule.parse(text))
        except addresses.AddressError as exc:
            problems.append(f"--probe.allow {addresses.shown(text)}: {exc}")
    for path in args.probe_targets_files:
        if not os.path.isfile(path):
            problems.append(f"--probe.targets-file {path} does not exist")
            continue
        try:
            addresses.read_target_file(path)
        except addresses.TargetFileError as exc:
            problems.append(f"--probe.targets-file {path}: {exc}")
    client = addresses.parse(connection.address) if connection else None
    return addresses.Allowlist(rules, tuple(args.probe_targets_files), sections, explicit, client)


_SIZE_RE = re.compile(r"(\d+)\s*([KMG]i?B?)?", re.I)


def parse_size(text: str) -> int:
    """``200MiB``, ``200M``, ``1G`` or a number of bytes."""
    m = _SIZE_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a size such as 200MiB")
    unit = (m.group(2) or "B")[0].upper()
    return int(m.group(1)) * {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]


def _capture(args, problems: list[str]) -> CaptureSettings:
    try:
        max_bytes = parse_size(args.capture_max_size)
    except ValueError as exc:
        problems.append(f"--capture.max-size: {exc}")
        max_bytes = 0
    if not 1 <= args.capture_snapshots <= MAX_SNAPSHOTS:
        problems.append(f"--capture.snapshots must be 1 to {MAX_SNAPSHOTS}, not {args.capture_snapshots}")
    for flag, value in (("--capture.interval", args.capture_interval), ("--capture.deadline", args.capture_deadline),
                        ("--capture.cooldown", args.capture_cooldown)):
        if not 0 < value <= MAX_SECONDS:
            problems.append(f"{flag} must be more than 0 and at most {MAX_SECONDS:g} seconds, not {value}")
    directory = os.path.abspath(os.path.expanduser(args.capture_dir)) if args.capture_dir else None
    if directory:
        try:  # made here, so that a directory the exporter cannot make is a flag's problem
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError as exc:
            problems.append(f"--capture.dir {directory}: {exc.strerror or 'cannot be made'}")
        else:
            if not os.access(directory, os.R_OK | os.W_OK | os.X_OK):
                problems.append(f"--capture.dir {directory}: the exporter's user cannot read and write it")
    return CaptureSettings(directory, args.capture_snapshots, args.capture_interval, args.capture_deadline,
                           args.capture_cooldown, max_bytes, args.capture_query_text)


def load(args, environ=os.environ) -> tuple[Config | None, list[str]]:
    """Build the configuration from parsed flags. Returns (config or None, problems)."""
    problems: list[str] = []
    try:
        listen_host, listen_port = parse_listen_address(args.web_listen_address)
    except ValueError as exc:
        problems.append(str(exc))
        listen_host, listen_port = "", 0
    if not args.web_telemetry_path.startswith("/"):
        problems.append(f"--web.telemetry-path {args.web_telemetry_path!r} must start with '/'")

    my_cnf: dict[str, dict[str, str]] = {}
    cnf_path = os.path.expanduser(args.config_my_cnf)
    explicit_cnf = args.config_my_cnf != DEFAULT_MY_CNF
    if os.path.exists(cnf_path):
        try:
            my_cnf = read_my_cnf(cnf_path)
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"cannot read --config.my-cnf {cnf_path}: {getattr(exc, 'strerror', None) or 'not UTF-8'}")
        except MyCnfError as exc:
            problems.append(f"--config.my-cnf {cnf_path}: {exc}")
    elif explicit_cnf:
        problems.append(f"--config.my-cnf {cnf_path} does not exist")

    password = environ.get(PASSWORD_ENV)
    connection = None
    if my_cnf.get("client") or args.mysqld_address or args.mysqld_username:
        connection = connection_from(my_cnf.get("client", {}), args.mysqld_address, args.mysqld_username,
                                     password, problems, f"[client] of {cnf_path}")

    unknown = sorted(set(args.disabled_sources) - set(sources.NAMES))
    if unknown:
        problems.append(f"unknown sources {', '.join(unknown)}; known: {', '.join(sources.NAMES)}")
    if not 0 <= args.timeout_offset < 10:
        problems.append(f"--timeout-offset {args.timeout_offset} must be between 0 and 10 seconds")
    if not 0 < args.scrape_timeout <= MAX_SCRAPE_TIMEOUT:
        problems.append(f"--scrape.timeout {args.scrape_timeout} must be more than 0 and at most "
                        f"{MAX_SCRAPE_TIMEOUT:g} seconds")
    for flag, value in (("--probe.max-connections", args.max_connections),
                        ("--probe.max-connections-per-server", args.max_connections_per_server)):
        if value < 1:
            problems.append(f"{flag} must be 1 or more, not {value}")
    if not 0 < args.idle_timeout <= MAX_SECONDS:
        problems.append(f"--probe.idle-timeout {args.idle_timeout} must be more than 0 and at most "
                        f"{MAX_SECONDS:g} seconds")
    allowlist = _allowlist(args, connection, my_cnf, problems)
    capture = _capture(args, problems)

    web = WebConfig()
    if args.web_config_file:
        web, web_problems = load_web_config(args.web_config_file)
        problems.extend(web_problems)

    if problems:
        return None, problems
    options = ScrapeOptions(sources=tuple(n for n in sources.NAMES if n not in args.disabled_sources),
                            enable_counters=args.enable_counters)
    limits = ProbeLimits(args.max_connections, args.max_connections_per_server, args.idle_timeout)
    return Config(listen_host, listen_port, args.web_telemetry_path, connection, my_cnf, cnf_path, options,
                  args.timeout_offset, args.scrape_timeout, web, allowlist, limits, capture), []


AUTH_MODULE_RE = re.compile(r"client(\.[A-Za-z0-9_-]+)?")


class ProbeError(Exception):
    """A /probe request that cannot be served as asked (HTTP 400)."""

    status = "400 Bad Request"


class NotAllowed(ProbeError):
    """A /probe target the configuration does not name (HTTP 403)."""

    status = "403 Forbidden"


def probe_connection(config: Config, target: str, auth_module: str | None) -> ConnectionSettings:
    """Connection settings for ``/probe?target=...&auth_module=...``; raises ProbeError.

    Its credentials come from the my.cnf section ``auth_module`` names; without one, from ``[client]``, as
    in mysqld_exporter (probe.go: the auth_module defaults to "client"). ``[client]``, named or not, gives
    them as it does for /metrics: the flag's user and the environment's password win over its own; a
    ``[client.NAME]`` section gives its own, and takes what it lacks from ``[client]``. The target must be
    a server the allow-list gives that section's credentials to: a section that names a server of its own
    goes there only, and its server gets no other section's (a probe of it needs its auth_module).
    """
    if auth_module is not None and not AUTH_MODULE_RE.fullmatch(auth_module):
        raise ProbeError("auth_module must name a my.cnf section: client or client.NAME")
    try:
        address = addresses.parse(target)
    except addresses.AddressError as exc:
        raise ProbeError(f"target: {exc}") from None
    section_name = auth_module or "client"
    section = config.my_cnf.get(section_name)
    if section is None:
        if section_name != "client":
            raise ProbeError(f"auth_module {auth_module!r}: no such section in the my.cnf")
        section = {}
    if not config.allowlist.allows(address, None if section_name == "client" else section_name):
        own = config.allowlist.sections.get(section_name)
        owners = [name for name in config.allowlist.named_by(address) if name != section_name]
        if own is not None and own != address:
            raise NotAllowed(f"target {address} is not allowed with auth_module={section_name}: that section's "
                             "credentials go only to the server it names")
        if owners:
            raise NotAllowed(f"target {address} is the server of [{owners[0]}]: probe it with auth_module={owners[0]} "
                             f"({'a probe without auth_module uses [client]' if section_name == 'client' else f'[{section_name}]'}"
                             "'s credentials do not go there)")
        raise NotAllowed(f"target {address} is not allowed: the exporter connects only to the servers its "
                         "configuration names (--probe.allow, --probe.targets-file)")
    problems: list[str] = []
    own = section_name != "client"  # a [client.NAME]: its own credentials, else [client]'s
    if own:  # as in mysqld_exporter; never the flag's or the environment's
        section = {**config.my_cnf.get("client", {}), **section}
        if not section.get("user"):
            raise ProbeError(f"auth_module {auth_module!r}: no user= in [{section_name}] or [client]")
    # /metrics' credentials (the flag's user, else [client]'s; the environment's password, else [client]'s):
    # never [client]'s user with the environment's password.
    base = None if own else config.connection
    settings = connection_from(section, str(address), base and base.user, base and base.password, problems,
                               f"[{section_name}]")
    if problems:
        raise ProbeError("; ".join(problems))
    return settings
