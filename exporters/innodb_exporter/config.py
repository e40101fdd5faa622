"""Validated configuration: flags, the environment and the my.cnf, checked all at once.

``load()`` is pure apart from reading the files it is pointed at; it returns the configuration and
every problem it found, so that a user fixes them all in one go instead of one per restart.
"""

from __future__ import annotations

import configparser
import os
from dataclasses import dataclass, field

from . import sources
from .connection import ConnectionSettings
from .target import ScrapeOptions
from .webconfig import WebConfig, load_web_config

PASSWORD_ENV = "MYSQLD_EXPORTER_PASSWORD"
DEFAULT_MY_CNF = "~/.my.cnf"


@dataclass(frozen=True)
class Config:
    listen_host: str
    listen_port: int
    telemetry_path: str
    connection: ConnectionSettings | None  # the default target of /metrics; None when none is configured
    my_cnf: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)  # sections, for /probe
    options: ScrapeOptions = ScrapeOptions()
    timeout_offset: float = 0.25
    default_timeout: float = 10.0
    web: WebConfig = WebConfig()


def parse_listen_address(value: str) -> tuple[str, int]:
    """``:9207``, ``0.0.0.0:9207`` or ``[::1]:9207`` -> (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--web.listen-address {value!r} is not HOST:PORT (e.g. ':9207')")
    return host.strip("[]") or "0.0.0.0", int(port)


def parse_address(value: str) -> tuple[str | None, int | None, str | None]:
    """A server address -> (host, port, socket). Accepts ``host``, ``host:port``, ``unix:///path``."""
    if value.startswith("unix://"):
        return None, None, value[len("unix://"):]
    if value.startswith("/"):
        return None, None, value
    host, sep, port = value.rpartition(":")
    if not sep:
        return value, 3306, None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"address {value!r}: port {port!r} is not a number between 1 and 65535")
    return host.strip("[]") or "localhost", int(port), None


def read_my_cnf(path: str) -> dict[str, dict[str, str]]:
    """The sections of a my.cnf. ``!include`` lines and option flags without a value are allowed."""
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if not line.lstrip().startswith("!")]
    parser = configparser.ConfigParser(allow_no_value=True, interpolation=None, strict=False)
    parser.optionxform = lambda option: option.strip().replace("_", "-").lower()
    parser.read_string("".join(lines), source=path)
    return {s: {k: (v or "").strip().strip("'\"") for k, v in parser.items(s)} for s in parser.sections()}


def connection_from(section: dict[str, str], address: str | None, user: str | None,
                    password: str | None, problems: list[str], where: str) -> ConnectionSettings:
    """Connection settings from a my.cnf section, overridden by flags and the environment."""
    host, port, socket = section.get("host", "localhost"), section.get("port", "3306"), section.get("socket") or None
    if address:
        try:
            host, port, socket = parse_address(address)
        except ValueError as exc:
            problems.append(str(exc))
    elif socket:
        host = None
    try:
        port_number = int(port) if port is not None else 3306
    except ValueError:
        problems.append(f"{where}: port {port!r} is not a number")
        port_number = 3306
    user = user if user is not None else section.get("user", "")
    if not user:
        problems.append(f"no user to connect as: set --mysqld.username or user= in {where}")
    mode = section.get("ssl-mode", "").upper()
    verify = section.get("ssl-verify-server-cert", "") in ("", "1", "on", "true") and mode not in ("REQUIRED",)
    return ConnectionSettings(
        host=host or "localhost", port=port_number, socket=socket, user=user,
        password=password if password is not None else section.get("password", ""),
        ssl_ca=section.get("ssl-ca") or None, ssl_cert=section.get("ssl-cert") or None,
        ssl_key=section.get("ssl-key") or None, ssl_verify=verify,
        ssl_required=mode in ("REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"),
    )


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
        except (OSError, configparser.Error, UnicodeDecodeError) as exc:
            problems.append(f"cannot read --config.my-cnf {cnf_path}: {exc}")
    elif explicit_cnf:
        problems.append(f"--config.my-cnf {cnf_path} does not exist")

    password = environ.get(PASSWORD_ENV)
    connection = None
    if my_cnf.get("client") or args.mysqld_address or args.mysqld_username:
        connection = connection_from(my_cnf.get("client", {}), args.mysqld_address, args.mysqld_username,
                                     password, problems, f"[client] of {cnf_path}")

    unknown = sorted(set(args.disabled_sources) - set(sources.BY_NAME))
    if unknown:
        problems.append(f"unknown sources {', '.join(unknown)}; known: {', '.join(sources.BY_NAME)}")
    if args.top < 1:
        problems.append(f"--collect.latches.top must be 1 or more, not {args.top}")
    if not 0 <= args.timeout_offset < 10:
        problems.append(f"--timeout-offset {args.timeout_offset} must be between 0 and 10 seconds")
    if args.scrape_timeout <= 0:
        problems.append(f"--scrape.timeout {args.scrape_timeout} must be positive")

    web = WebConfig()
    if args.web_config_file:
        web, web_problems = load_web_config(args.web_config_file)
        problems.extend(web_problems)

    if problems:
        return None, problems
    options = ScrapeOptions(
        sources=tuple(s.NAME for s in sources.ALL if s.NAME not in args.disabled_sources),
        top=args.top, enable_counters=args.enable_counters,
    )
    return Config(listen_host, listen_port, args.web_telemetry_path, connection, my_cnf, options,
                  args.timeout_offset, args.scrape_timeout, web), []


def probe_connection(config: Config, target: str, auth_module: str | None) -> tuple[ConnectionSettings | None, str | None]:
    """Connection settings for ``/probe?target=...&auth_module=...``, or an error to show the caller."""
    section_name = auth_module or "client"
    if auth_module and not auth_module.startswith("client"):
        return None, f"auth_module {auth_module!r} must name a my.cnf section starting with 'client'"
    section = config.my_cnf.get(section_name)
    if section is None:
        if auth_module:
            return None, f"auth_module {auth_module!r}: no such section in the my.cnf"
        section = {}
    problems: list[str] = []
    base_user = config.connection.user if config.connection else None
    password = os.environ.get(PASSWORD_ENV) if not auth_module else None
    settings = connection_from(section, target, None if section.get("user") else base_user, password,
                               problems, f"[{section_name}]")
    return (None, "; ".join(problems)) if problems else (settings, None)
