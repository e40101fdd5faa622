"""The native stack's settings: the environment `up` reads, the ports, and where each service listens.

Read by ``stack.native`` (which runs the services) and ``stack.grafana`` (Grafana's command line).
"""

from __future__ import annotations

import ipaddress
import os
import sys
from dataclasses import dataclass, field

from innodb_exporter.config import PASSWORD_ENV
from innodb_exporter.scraping import addresses

from . import tools
from .servers import FLAVORS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROVISIONING = os.path.join(REPO, "provisioning")

DEFAULT_PORTS = {
    "mariadb": 33306, "innodb_exporter": 9207, "mysqld_exporter": 9104, "node_exporter": 9100,
    "alertmanager": 9093, "prometheus": 9090, "grafana": 3000, "replay_prometheus": 9099,
    "victoriametrics": 8428, "vmalert": 8880,
    # STACK_STORE=thanos: the second Prometheus replica, and each Thanos component's HTTP and gRPC ports.
    "prometheus_b": 9091, "thanos_query": 10902, "thanos_query_grpc": 10901, "thanos_sidecar_a": 10912,
    "thanos_sidecar_a_grpc": 10911, "thanos_sidecar_b": 10922, "thanos_sidecar_b_grpc": 10921, "thanos_store": 10932,
    "thanos_store_grpc": 10931,
}
GRPC = "_grpc"  # the suffix of a service's second (gRPC) port in DEFAULT_PORTS
# STACK_STORE: what stands behind Prometheus, and the services that run it. victoriametrics: Prometheus also
# writes to it with remote_write. thanos: a second Prometheus replica, a sidecar beside each that uploads its
# blocks to a bucket, a store gateway that reads the bucket, and the querier over all of them.
STORES = {"victoriametrics": ("victoriametrics", "vmalert"),
          "thanos": ("prometheus_b", "thanos_sidecar_a", "thanos_sidecar_b", "thanos_store", "thanos_query")}
STORE_SERVICES = tuple(name for services in STORES.values() for name in services)
# Where Grafana's Store data source and other readers query each store.
STORE_QUERY = {"victoriametrics": "victoriametrics", "thanos": "thanos_query"}
# STACK_PROMETHEUS: Debian's package (2.42 on bookworm), or Prometheus 3 as stack/tools.py builds it.
PROMETHEUS_BUILDS = ("debian", "3")
# STACK_STORE=thanos: a replica's external label `replica`, by its service.
REPLICAS = {"prometheus": "a", "prometheus_b": "b"}
# The demo server is the flavour's tuned configuration: the monitoring options, the INNODB_METRICS counters
# the exporter reads, a REDO log small enough that checkpoint age moves under the demo load.
DEMO_SERVER = "mariadb-10.11"
DEMO_HOST = "127.0.0.1"  # where stack/servers.py has the demo server listen, whatever STACK_BIND says


def service_of(port: str) -> str:
    """The service a port of DEFAULT_PORTS belongs to: thanos_query_grpc is thanos_query's."""
    return port.removesuffix(GRPC)


def default_prometheus() -> str:
    """Prometheus 3 once stack/tools.py has built it, else Debian's."""
    return "3" if tools.built("prometheus") else "debian"


class StackError(Exception):
    """Something the user has to change; the command prints it as one error line."""


def demo_name(flavor: str) -> str:
    """The demo server's name in .stack/ and in `status`: mariadb for the default, as before there was a choice."""
    return "mariadb" if flavor == DEMO_SERVER else flavor


@dataclass
class Settings:
    root: str = os.path.join(REPO, ".stack")
    bind: str = "127.0.0.1"
    ports: dict = field(default_factory=lambda: dict(DEFAULT_PORTS))
    mysql_address: str | None = None  # None: start the demo server
    server: str = DEMO_SERVER  # the demo server's flavour (stack.servers.FLAVORS)
    mysql_options: tuple | None = None  # the demo server's options; None: its flavour's tuned ones
    sysbench_threads: int = 2
    sysbench_rate: int = 20
    sysbench_workload: str = "oltp_read_write"  # the demo load's sysbench script (a test's may be commit-bound)
    rule_overrides: tuple = ()  # alerts/mixin.py --set KEY=VALUE, for tests that lower thresholds
    exporter_flags: tuple = ()  # more innodb-exporter flags, e.g. a shorter --capture.cooldown for tests
    store: str | None = None  # None, or one of STORES: Prometheus remote-writes to it, its ruler alerts too
    web_config: str | None = None  # STACK_WEB_CONFIG: the innodb exporter's --web.config.file (basic auth)
    log_max_bytes: int = 10 * 1024 * 1024  # a service's log rotates past it: at most twice this on disk
    prometheus: str = "debian"  # one of PROMETHEUS_BUILDS
    # STACK_STORE=thanos: a replica's TSDB block length (the sidecar uploads each block once it is cut) and how
    # long a replica keeps its own blocks; tests shorten both so that blocks reach the bucket within minutes.
    block_duration: str = "2h"
    replica_retention: str = "2d"
    bucket_sync: str = "3m"  # how often the store gateway looks for new blocks in the bucket
    exporter_user: str = "exporter"  # the account the exporters log in as on MYSQL_ADDRESS
    exporter_password: str = field(default="", repr=False)  # its password: only the exporters' my.cnf files hold it
    python: str = sys.executable

    @classmethod
    def from_environment(cls, environ=os.environ) -> "Settings":
        s = cls()
        s.bind = _bind_address(environ.get("STACK_BIND", s.bind))
        for name in s.ports:
            s.ports[name] = _integer(environ, f"STACK_PORT_{name.upper()}", s.ports[name])
        s.mysql_address = _watched_address(environ.get("MYSQL_ADDRESS", ""))
        s.server = environ.get("STACK_SERVER") or s.server
        if s.server not in FLAVORS:
            raise StackError(f"STACK_SERVER={s.server!r}: one of {', '.join(FLAVORS)}")
        s.sysbench_rate = _integer(environ, "STACK_SYSBENCH_RATE", s.sysbench_rate)
        s.store = environ.get("STACK_STORE") or None
        if s.store and s.store not in STORES:
            raise StackError(f"STACK_STORE={s.store!r}: one of {', '.join(STORES)}, or empty for none")
        web_config = environ.get("STACK_WEB_CONFIG", "").strip()
        if web_config and not os.path.isfile(web_config):
            raise StackError(f"STACK_WEB_CONFIG={web_config}: no such file")
        s.web_config = os.path.abspath(web_config) if web_config else None
        s.prometheus = environ.get("STACK_PROMETHEUS") or default_prometheus()
        if s.prometheus not in PROMETHEUS_BUILDS:
            raise StackError(f"STACK_PROMETHEUS={s.prometheus!r}: debian (the package) or 3 (built from its Go module "
                             "on first use, python -m stack.tools build prometheus)")
        s.exporter_user = environ.get("MYSQL_EXPORTER_USER") or s.exporter_user
        s.exporter_password = environ.get(PASSWORD_ENV, "")
        return s

    def environment(self) -> dict[str, str]:
        """These settings as the variables that give them, those that shape what `up` runs: what it saves,
        and what the next `up` must give while the stack runs."""
        env = {"MYSQL_ADDRESS": self.mysql_address or "", "STACK_BIND": self.bind, "STACK_STORE": self.store or "",
               "STACK_WEB_CONFIG": self.web_config or "", "STACK_PROMETHEUS": self.prometheus}
        if self.mysql_address:
            env["MYSQL_EXPORTER_USER"] = self.exporter_user
        else:
            env.update(STACK_SERVER=self.server, STACK_SYSBENCH_RATE=str(self.sysbench_rate))
        env.update({f"STACK_PORT_{name.upper()}": str(self.ports[name]) for name in self.listening()})
        return env

    def listening(self) -> list[str]:
        """The services with a port that `up` starts with these settings (the replay Prometheus is
        innodb-replay import's)."""
        return [name for name in self.ports if name != "replay_prometheus"
                and not (name == "mariadb" and self.mysql_address)
                and not (service_of(name) in STORE_SERVICES and service_of(name) not in STORES.get(self.store, ()))]

    def replicas(self) -> list[str]:
        """The Prometheus services: two replicas with STACK_STORE=thanos, else one."""
        return list(REPLICAS) if self.store == "thanos" else ["prometheus"]

    def store_url(self) -> str:
        """Where the store answers Prometheus' query API: Grafana's Store data source (with no store, where
        VictoriaMetrics would listen, as before)."""
        return self.url(STORE_QUERY.get(self.store or "", "victoriametrics"))

    def path(self, *parts) -> str:
        return os.path.join(self.root, *parts)

    def listen_host(self, service: str) -> str:
        return DEMO_HOST if service == "mariadb" else self.bind

    def listen_address(self, service: str) -> str:
        """HOST:PORT a service listens on."""
        return _join(self.listen_host(service), self.ports[service])

    def address(self, service: str) -> str:
        """HOST:PORT the other services reach it at: loopback when it listens on every address."""
        host = self.listen_host(service)
        return _join({"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host), self.ports[service])

    def url(self, service: str) -> str:
        return f"http://{self.address(service)}"

    def watched(self) -> addresses.Address:
        """The server the exporters watch: MYSQL_ADDRESS, else the demo server."""
        return _parse_address(self.mysql_address) if self.mysql_address else \
            addresses.Address(DEMO_HOST, self.ports["mariadb"])


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _integer(environ, name: str, default: int) -> int:
    value = environ.get(name) or str(default)
    if not value.isdigit():
        raise StackError(f"{name}={value!r} is not a number")
    return int(value)


def _bind_address(value: str) -> str:
    """STACK_BIND: an IP address (an IPv6 one with or without brackets); empty is 0.0.0.0."""
    text = value.strip()
    text = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return str(ipaddress.ip_address(text or "0.0.0.0"))
    except ValueError:
        raise StackError(f"STACK_BIND={value!r} is not an IP address (e.g. 127.0.0.1, ::1, 0.0.0.0)") from None


def _parse_address(value: str) -> addresses.Address:
    try:
        return addresses.parse(value)  # as the exporter reads --mysqld.address
    except addresses.AddressError as exc:
        raise StackError(f"MYSQL_ADDRESS: {exc} (HOST[:PORT], [IPv6]:PORT or unix:///path)") from None


def _watched_address(value: str) -> str | None:
    """MYSQL_ADDRESS in the exporter's spelling (port 3306 when none is given); None when empty."""
    return str(_parse_address(value)) if value.strip() else None
