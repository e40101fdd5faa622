"""The stack without Docker: the compose services as local processes, from Debian's packages.

    python -m stack.native up | down | status        (./innodb-stack up runs this when no Docker engine runs)

Everything lives under ``.stack/`` (data, logs, pid files, the generated credentials), so ``down``
stops exactly what ``up`` started and ``up`` again resumes with the same data. Prometheus runs the very
prometheus.yml and rules compose uses; only the addresses in its target files differ.

Environment:
  MYSQL_ADDRESS              watch this server instead of starting the demo server; the exporters
                             log in with MYSQL_EXPORTER_USER (default exporter) and MYSQLD_EXPORTER_PASSWORD
  STACK_SERVER               the demo server: mariadb-10.11 (default, this machine's package), mariadb-11.8
                             or mysql-9 (Debian trixie's and sid's, run in a Debian root that stack/roots.py
                             builds on first use, about a minute, as root); its data is in .stack/<name>
                             (.stack/mariadb for the default) and its port STACK_PORT_MARIADB
  STACK_BIND                 address the services listen on (default 127.0.0.1)
  STACK_PORT_<SERVICE>       e.g. STACK_PORT_PROMETHEUS=19090 (defaults: the usual ports, MariaDB 33306)
  STACK_SYSBENCH_RATE        demo load in transactions per second (default 20; 0 = as fast as it goes)
  STACK_STORE                victoriametrics: Prometheus also writes every sample with remote_write to a
                             VictoriaMetrics single node (data in .stack/victoriametrics), where vmalert
                             evaluates the same rules and alerts through the stack's Alertmanager, its
                             alerts told apart by the label alertgroup (docs/fleet.md); compose: the `store`
                             profile
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field

from innodb_replay.processes import Process

from . import devices, roots
from .servers import FLAVORS, Sysbench, options, server, wait_for

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROVISIONING = os.path.join(REPO, "provisioning")
COMPOSE_EXPORTER = "innodb-exporter:9207"  # the exporter's address in docker-compose.yml and alertmanager.yml

DEFAULT_PORTS = {
    "mariadb": 33306, "innodb_exporter": 9207, "mysqld_exporter": 9104, "node_exporter": 9100,
    "alertmanager": 9093, "prometheus": 9090, "grafana": 3000, "replay_prometheus": 9099,
    "victoriametrics": 8428, "vmalert": 8880,
}
# STACK_STORE: the distributed store Prometheus also writes to, and the services that run it.
STORES = {"victoriametrics": ("victoriametrics", "vmalert")}
STORE_SERVICES = tuple(name for services in STORES.values() for name in services)
# vmalert evaluates as often as Prometheus (provisioning/prometheus/prometheus.yml: evaluation_interval).
EVALUATION_INTERVAL = "15s"
# The demo server is the flavour's tuned configuration: the monitoring options, the INNODB_METRICS counters
# the exporter reads, a REDO log small enough that checkpoint age moves under the demo load.
DEMO_SERVER = "mariadb-10.11"


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
    rule_overrides: tuple = ()  # alerts/mixin.py --set KEY=VALUE, for tests that lower thresholds
    exporter_flags: tuple = ()  # more innodb-exporter flags, e.g. a shorter --capture.cooldown for tests
    store: str | None = None  # None, or one of STORES: Prometheus remote-writes to it, its ruler alerts too
    python: str = sys.executable

    @classmethod
    def from_environment(cls, environ=os.environ) -> "Settings":
        s = cls()
        s.bind = environ.get("STACK_BIND", s.bind)
        for name in s.ports:
            value = environ.get(f"STACK_PORT_{name.upper()}")
            if value:
                s.ports[name] = int(value)
        s.mysql_address = environ.get("MYSQL_ADDRESS") or None
        s.server = environ.get("STACK_SERVER") or s.server
        if s.server not in FLAVORS:
            raise SystemExit(f"STACK_SERVER={s.server!r}: one of {', '.join(FLAVORS)}")
        s.sysbench_rate = int(environ.get("STACK_SYSBENCH_RATE", s.sysbench_rate))
        s.store = environ.get("STACK_STORE") or None
        if s.store and s.store not in STORES:
            raise SystemExit(f"STACK_STORE={s.store!r}: one of {', '.join(STORES)}, or empty for none")
        return s

    def path(self, *parts) -> str:
        return os.path.join(self.root, *parts)

    def address(self, service: str) -> str:
        host = "127.0.0.1" if self.bind in ("0.0.0.0", "") else self.bind
        return f"{host}:{self.ports[service]}"

    def url(self, service: str) -> str:
        return f"http://{self.address(service)}"


def _process(settings: Settings, name: str, pid_file: str | None = None) -> Process:
    """A service of the stack: its pid file under .stack/run, its log under .stack/logs."""
    return Process(pid_file or settings.path("run", f"{name}.pid"), settings.path("logs", f"{name}.log"), cwd=REPO)


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None)
        if found:
            return found
    raise SystemExit(f"none of {', '.join(names)} is installed; ./innodb-stack up installs Debian's packages")


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as response:
        return response.status == 200


class Stack:
    def __init__(self, settings: Settings):
        self.s = settings
        self.services = {name: _process(settings, name) for name in
                         ("sysbench", "innodb_exporter", "mysqld_exporter", "node_exporter", "alertmanager",
                          *STORE_SERVICES, "prometheus", "grafana")}
        # The demo server of every flavour, by the pid file the server writes: `down` stops whichever runs.
        self.server_processes = {flavor: _process(settings, demo_name(flavor),
                                                  settings.path(demo_name(flavor), "mysqld.pid"))
                                 for flavor in FLAVORS}
        self.mariadb_process = self.server_processes[settings.server]  # the one STACK_SERVER picks
        # Started by `innodb-replay import` (its default data directory is .stack/replay/data); down stops it.
        self.services["replay_prometheus"] = _process(settings, "replay_prometheus",
                                                      settings.path("replay", "data.prometheus", "prometheus.pid"))

    # --- credentials -----------------------------------------------------------------------------

    def _secret(self, name: str) -> str:
        """A generated password, kept in .stack/secrets (mode 0600): no default password anywhere."""
        path = self.s.path("secrets", name)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                f.write(secrets.token_urlsafe(18))
        with open(path) as f:
            return f.read().strip()

    def _exporter_cnf(self, host: str, port: int, user: str, password: str) -> str:
        """The my.cnf both exporters read: the password stays out of command lines and environments."""
        path = self.s.path("secrets", "exporter.cnf")
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(f"[client]\nuser={user}\npassword={password}\nhost={host}\nport={port}\n")
        return path

    # --- up --------------------------------------------------------------------------------------

    def check_ports(self) -> None:
        taken = [f"{name} {port}" for name, port in self.s.ports.items()
                 if not (name == "mariadb" and self.s.mysql_address) and name != "replay_prometheus"
                 and not self._other_store(name)
                 and not self._ours(name)
                 and not _port_free(self.s.bind, port)]
        if taken:
            raise SystemExit(f"ports in use: {', '.join(taken)}; set STACK_PORT_<SERVICE> (e.g. "
                             f"STACK_PORT_PROMETHEUS=19090) or stop what holds them")

    def _other_store(self, name: str) -> bool:
        """A service of a store this stack's settings do not run."""
        return name in STORE_SERVICES and name not in STORES.get(self.s.store, ())

    def _ours(self, name: str) -> bool:
        process = self.mariadb_process if name == "mariadb" else self.services.get(name)
        return bool(process and process.pid())

    def up(self) -> None:
        self.check_ports()
        os.makedirs(self.s.root, exist_ok=True)
        if self.s.mysql_address:
            host, _, port = self.s.mysql_address.rpartition(":")
            user = os.environ.get("MYSQL_EXPORTER_USER", "exporter")
            password = os.environ.get("MYSQLD_EXPORTER_PASSWORD", "")
            cnf = self._exporter_cnf(host, int(port or 3306), user, password)
        else:
            cnf = self._demo_server()
        config_dir = self.prometheus_dir()  # first: its target file is also the exporter's allow-list
        self._start_exporters(cnf, os.path.join(config_dir, "targets", "mysql.yml"))
        self._start_alertmanager()
        self._start_store(os.path.join(config_dir, "rules"))
        self._start_prometheus(config_dir)
        self._start_grafana()
        self._wait_ready()
        self._print_urls()

    def _demo_server(self) -> str:
        flavor = self.s.server
        demo_options = options(flavor, "tuned") if self.s.mysql_options is None \
            else self.s.mysql_options
        db = server(flavor, "tuned", options=demo_options, directory=self.s.path(demo_name(flavor)),
                    port=self.s.ports["mariadb"], root_password=self._secret("mariadb-root"))
        first_time = not os.path.exists(db.datadir)
        if not self.mariadb_process.pid():
            db.start()
            db.proc = None  # it outlives this command; `down` stops it by its pid file
        exporter_password = self._secret("mariadb-exporter")
        db.create_user("exporter", exporter_password)
        load = Sysbench(db, threads=self.s.sysbench_threads)
        if first_time:
            load.prepare()
        if not self.services["sysbench"].pid():
            self.services["sysbench"].start(load.run_command(seconds=10 * 365 * 86400, rate=self.s.sysbench_rate))
        return self._exporter_cnf("127.0.0.1", self.s.ports["mariadb"], "exporter", exporter_password)

    def _start_exporters(self, cnf: str, targets_file: str) -> None:
        exporter = os.path.join(os.path.dirname(self.s.python), "innodb-exporter")
        cmd = [exporter] if os.path.exists(exporter) else [self.s.python, "-m", "innodb_exporter"]
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "exporters"))
        env.pop("MYSQLD_EXPORTER_PASSWORD", None)
        # /probe reaches the servers Prometheus' target file lists; Alertmanager's webhook captures into captures/.
        self.services["innodb_exporter"].start(
            [*cmd, f"--web.listen-address={self.s.address('innodb_exporter')}", f"--config.my-cnf={cnf}",
             f"--probe.targets-file={targets_file}", f"--capture.dir={self.s.path('captures')}",
             *self.s.exporter_flags], env=env)
        self.services["mysqld_exporter"].start(
            [_binary("prometheus-mysqld-exporter", "mysqld_exporter"), f"--config.my-cnf={cnf}",
             f"--web.listen-address={self.s.address('mysqld_exporter')}"], env=env)
        self.services["node_exporter"].start(
            [_binary("prometheus-node-exporter", "node_exporter"),
             f"--web.listen-address={self.s.address('node_exporter')}"])

    def alertmanager_config(self) -> str:
        """Compose's alertmanager.yml with the exporter's address here, for the capture webhook."""
        with open(os.path.join(PROVISIONING, "alertmanager", "alertmanager.yml"), encoding="utf-8") as f:
            text = f.read().replace(f"//{COMPOSE_EXPORTER}/", f"//{self.s.address('innodb_exporter')}/")
        path = self.s.path("alertmanager", "alertmanager.yml")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def _start_alertmanager(self) -> None:
        self.services["alertmanager"].start(
            [_binary("prometheus-alertmanager", "alertmanager"), f"--config.file={self.alertmanager_config()}",
             f"--storage.path={self.s.path('alertmanager')}",
             f"--web.listen-address={self.s.address('alertmanager')}", "--cluster.listen-address="])

    def prometheus_dir(self) -> str:
        """The configuration Prometheus reads: compose's prometheus.yml and rules, local target files."""
        config_dir = self.s.path("prometheus")
        rules = os.path.join(config_dir, "rules")
        shutil.rmtree(rules, ignore_errors=True)
        os.makedirs(rules)
        mixin = os.path.join(REPO, "alerts", "mixin.py")
        sets = [arg for item in self.s.rule_overrides for arg in ("--set", item)]
        subprocess.run([self.s.python, mixin, "--out", rules, *sets], check=True)
        shutil.copy(os.path.join(PROVISIONING, "prometheus", "prometheus.yml"), config_dir)
        env = dict(os.environ, MYSQL_ADDRESS=self.s.mysql_address or self.s.address("mariadb"),
                   INNODB_EXPORTER=self.s.address("innodb_exporter"), MYSQLD_EXPORTER=self.s.address("mysqld_exporter"),
                   NODE_EXPORTER=self.s.address("node_exporter"), PROMETHEUS=self.s.address("prometheus"),
                   ALERTMANAGER=self.s.address("alertmanager"),
                   STACK_STORE=self.s.store or "", VICTORIAMETRICS=self.s.address("victoriametrics"),
                   PROMETHEUS_CONFIG=os.path.join(config_dir, "prometheus.yml"),
                   REDO_DEVICE="" if self.s.mysql_address else devices.block_device(
                       self.s.path(demo_name(self.s.server))))
        subprocess.run(["sh", os.path.join(PROVISIONING, "prometheus", "write-targets.sh"),
                        os.path.join(config_dir, "targets")], check=True, env=env)
        return config_dir

    def prometheus_config(self, config_dir: str) -> str:
        """The file Prometheus runs: with the store, the one write-targets.sh adds remote_write to."""
        return os.path.join(config_dir, "prometheus-remote-write.yml" if self.s.store else "prometheus.yml")

    def _start_store(self, rules: str) -> None:
        """VictoriaMetrics, and vmalert on it with Prometheus' rules: it records into the store and alerts
        through the stack's Alertmanager beside Prometheus. Its recorded series are labelled as Prometheus'
        (no external label), so that the dashboards read the same series from either; its alerts carry the
        label alertgroup (the rule group), which Prometheus' do not."""
        if self.s.store != "victoriametrics":
            return
        store = self.s.url("victoriametrics")
        self.services["victoriametrics"].start(
            [_binary("victoria-metrics"), f"-httpListenAddr={self.s.address('victoriametrics')}",
             f"-storageDataPath={self.s.path('victoriametrics')}", "-retentionPeriod=30d"])
        # vmalert restores its alerts' state from the store when it starts: the store must answer by then.
        wait_for(lambda: _http_ok(store + "/health"), 60,
                 what=f"victoriametrics on {store} (log: {self.services['victoriametrics'].log_path})")
        self.services["vmalert"].start(
            [_binary("vmalert"), f"-httpListenAddr={self.s.address('vmalert')}", f"-rule={rules}/*.yml",
             f"-datasource.url={store}", f"-remoteWrite.url={store}", f"-remoteRead.url={store}",
             f"-notifier.url={self.s.url('alertmanager')}", f"-evaluationInterval={EVALUATION_INTERVAL}",
             f"-external.url={self.s.url('vmalert')}"])

    def _start_prometheus(self, config_dir: str) -> None:
        self.services["prometheus"].start(
            [_binary("prometheus"), f"--config.file={self.prometheus_config(config_dir)}",
             f"--storage.tsdb.path={os.path.join(config_dir, 'data')}",
             f"--web.listen-address={self.s.address('prometheus')}", "--web.enable-lifecycle"])

    def _start_grafana(self) -> None:
        """Grafana joins where a grafana binary is installed (Debian does not package it)."""
        try:
            binary = _binary("grafana", "grafana-server")
        except SystemExit:
            return
        from .grafana import command

        self.services["grafana"].start(*command(self.s, binary, self._secret("grafana-admin")))

    def _wait_ready(self) -> None:
        checks = {"innodb_exporter": "/", "mysqld_exporter": "/", "node_exporter": "/",
                  "alertmanager": "/-/ready", "victoriametrics": "/health", "vmalert": "/health",
                  "prometheus": "/-/ready", "grafana": "/api/health"}
        for name, path in checks.items():
            if name == "grafana" and not self.services["grafana"].pid():
                continue
            if self._other_store(name):
                continue
            wait_for(lambda: _http_ok(self.s.url(name) + path), 60,
                     what=f"{name} on {self.s.url(name)} (log: {self.services[name].log_path})")

    def _print_urls(self) -> None:
        print("InnoDB stack is up:")
        for name in ("grafana", "prometheus", "alertmanager", "innodb_exporter", "mysqld_exporter", "node_exporter",
                     *STORE_SERVICES):
            if self.services[name].pid():
                print(f"  {name:16} {self.s.url(name)}")
        target = self.s.mysql_address or f"{self.s.address('mariadb')} (demo {self.s.server} under sysbench load)"
        print(f"  watching         {target}")
        if self.services["grafana"].pid():
            print(f"Grafana: user admin, password in {self.s.path('secrets', 'grafana-admin')}")
        else:
            print("Grafana: no grafana binary installed; the dashboards are in dashboards/ for a Grafana of yours")
        print("Stop it with ./innodb-stack down; data stays in .stack/.")

    # --- down and status -------------------------------------------------------------------------

    def down(self) -> None:
        stopped = [name for name in reversed(list(self.services)) if self.services[name].stop()]
        for flavor, process in self.server_processes.items():
            if process.stop(remove_pid_file=False):  # the server removes its own
                stopped.append(demo_name(flavor))
        print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))

    def status(self) -> dict[str, int | None]:
        pids = {name: p.pid() for name, p in self.services.items()
                if not self._other_store(name) or p.pid()}
        for flavor, process in self.server_processes.items():
            if flavor == self.s.server or process.pid():
                pids[demo_name(flavor)] = process.pid()
        return pids


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m stack.native", description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["up", "down", "status"])
    args = p.parse_args(argv)
    stack = Stack(Settings.from_environment())
    if args.command == "up":
        try:
            stack.up()
        except roots.RootError as exc:  # the demo server's Debian root could not be built
            raise SystemExit(f"error: {exc}")
    elif args.command == "down":
        stack.down()
    else:
        for name, pid in stack.status().items():
            print(f"{name:16} {'running, pid ' + str(pid) if pid else 'stopped'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
