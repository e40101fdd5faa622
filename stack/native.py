"""The stack without Docker: the compose services as local processes, from Debian's packages.

    python -m stack.native up | down | status        (./innodb-stack up runs this when no Docker engine runs)

Everything lives under ``.stack/`` (data, logs, pid files, the generated credentials, the settings `up`
ran with), so ``down`` stops exactly what ``up`` started and ``up`` again resumes with the same data; an
``up`` with other settings while the stack runs is refused (``down`` first). Prometheus runs the very
prometheus.yml and rules compose uses; only the addresses in its target files differ. Every service's log
in .stack/logs rotates at 10 MiB (one earlier file kept), whatever the service writes.

Environment:
  MYSQL_ADDRESS              watch this server instead of starting the demo server: HOST[:PORT] (default
                             port 3306), [IPv6]:PORT or unix:///path/to/mysqld.sock; the exporters log in
                             with MYSQL_EXPORTER_USER (default exporter) and MYSQLD_EXPORTER_PASSWORD, which
                             only their my.cnf files in .stack/secrets hold
  STACK_SERVER               the demo server: mariadb-10.11 (default, this machine's package), mariadb-11.8
                             or mysql-9 (Debian trixie's and sid's, run in a Debian root that stack/roots.py
                             builds on first use, about a minute, as root); its data is in .stack/<name>
                             (.stack/mariadb for the default) and its port STACK_PORT_MARIADB (on 127.0.0.1)
  STACK_BIND                 the IP address the services listen on (default 127.0.0.1; 0.0.0.0 or :: for
                             every address)
  STACK_PORT_<SERVICE>       e.g. STACK_PORT_PROMETHEUS=19090 (defaults: the usual ports, MariaDB 33306)
  STACK_SYSBENCH_RATE        demo load in transactions per second (default 20; 0 = as fast as it goes)
  STACK_STORE                victoriametrics: Prometheus also writes every sample with remote_write to a
                             VictoriaMetrics single node (data in .stack/victoriametrics), where vmalert
                             evaluates the same rules and alerts through the stack's Alertmanager, its
                             alerts told apart by the label alertgroup (docs/fleet.md); compose: the `store`
                             profile.
                             thanos: a highly available pair behind Thanos: a second Prometheus replica
                             (prometheus_b) scrapes the same targets and runs the same rules, the two told
                             apart by the external label replica; a Thanos sidecar beside each uploads its
                             blocks to a filesystem bucket (.stack/thanos/bucket), a store gateway reads the
                             bucket, and Thanos Query answers for all of them, deduplicated on replica (the
                             Store data source); both replicas alert, and Alertmanager keeps each alert once.
                             Thanos is built on first use (stack/tools.py); compose: the `thanos` profile
  STACK_PROMETHEUS           debian: Debian's Prometheus package; 3: Prometheus 3 built from its Go module
                             (stack/tools.py, on first use). Default: 3 once it has been built, else debian
  STACK_WEB_CONFIG           the innodb exporter's --web.config.file (exporter-toolkit's format). When it has
                             basic_auth_users, the stack adds a user of its own (innodb-stack, its password
                             generated into .stack/secrets) with which Prometheus scrapes and Alertmanager
                             posts the capture webhook (basic_auth with a password_file: the password is on no
                             command line and in no environment); tls_server_config is refused here
"""

from __future__ import annotations

import argparse
import base64
import errno
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import bcrypt
import yaml

from innodb_exporter.config import PASSWORD_ENV
from innodb_exporter.scraping import addresses
from innodb_replay.processes import Process

from . import devices, tools
from .settings import (PROVISIONING, REPLICAS, REPO, STORE_SERVICES, Settings, StackError, demo_name,
                       service_of)
from .servers import FLAVORS, MariaDB, MySQL, Sysbench, options, server

COMPOSE_EXPORTER = "innodb-exporter:9207"  # the exporter's address in docker-compose.yml and alertmanager.yml
COMPOSE_BUCKET = "/bucket"  # the Thanos bucket's directory in docker-compose.yml and provisioning/thanos/bucket.yml
# vmalert evaluates as often as Prometheus (provisioning/prometheus/prometheus.yml: evaluation_interval).
EVALUATION_INTERVAL = "15s"
# The demo server writes its own pid file: a pid there is its only while it runs one of these programs.
SERVER_PROGRAMS = tuple(sorted({*MariaDB.binaries, *MySQL.binaries}))
# The path each service answers on once it is ready.
READY_PATHS = {"innodb_exporter": "/", "mysqld_exporter": "/", "node_exporter": "/", "alertmanager": "/-/ready",
               "victoriametrics": "/health", "vmalert": "/health", "prometheus": "/-/ready",
               "prometheus_b": "/-/ready", "thanos_sidecar_a": "/-/ready", "thanos_sidecar_b": "/-/ready",
               "thanos_store": "/-/ready", "thanos_query": "/-/ready", "grafana": "/api/health"}
READY_TIMEOUT = 60  # seconds a service may take to answer ready
RETENTION = "30d"  # as docker-compose.yml's Prometheus and VictoriaMetrics keep
# STACK_STORE=thanos: each replica's sidecar, by the replica's service.
SIDECARS = {"prometheus": "thanos_sidecar_a", "prometheus_b": "thanos_sidecar_b"}
WEB_USER = "innodb-stack"


# --- the exporters' my.cnf files -----------------------------------------------------------------------

# Our exporter reads a value as mysys does (innodb_exporter/config.py): in double quotes, a backslash
# escapes; a line break must be escaped, or it would end the value.
_MYSYS_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"}


def mysys_quoted(value: str) -> str:
    return '"' + "".join(_MYSYS_ESCAPES.get(char, char) for char in value) + '"'


def go_ini_quoted(value: str) -> str:
    """Debian's mysqld_exporter reads its my.cnf with go-ini, which takes a value in backticks verbatim, up
    to the last backtick of its first line, or, over several lines, of the first line that holds one; so
    no backtick may come before the value's last line break (nothing else is special: '#', ';', quotes)."""
    if "`" in value.rpartition("\n")[0]:
        raise StackError(f"{PASSWORD_ENV} (or MYSQL_EXPORTER_USER) holds a backtick before a line break, which "
                         "mysqld_exporter's my.cnf cannot carry: give the exporter account another password")
    return f"`{value}`"


# One my.cnf per exporter, each quoted as that exporter reads it.
CNF_QUOTING = {"innodb_exporter": mysys_quoted, "mysqld_exporter": go_ini_quoted}


def exporter_cnf(server: addresses.Address, user: str, password: str, quoted) -> str:
    """A [client] section for ``server``; a socket path is quoted like the credentials."""
    if server.socket:
        where = f"socket={quoted(server.socket)}\n"
    else:
        host = f"[{server.host}]" if ":" in server.host else server.host  # both read [IPv6]
        where = f"host={host}\nport={server.port}\n"
    return f"[client]\nuser={quoted(user)}\npassword={quoted(password)}\n{where}"


# --- processes and ports -------------------------------------------------------------------------------


def _process(settings: Settings, name: str, pid_file: str | None = None, programs: tuple = ()) -> Process:
    """A service of the stack: its pid file under .stack/run, its log under .stack/logs, within its size."""
    return Process(pid_file or settings.path("run", f"{name}.pid"), settings.path("logs", f"{name}.log"), cwd=REPO,
                   programs=programs, log_max_bytes=settings.log_max_bytes)


def child_environment(environ=os.environ) -> dict[str, str]:
    """The environment of every process `up` starts: the caller's without the exporter password, which
    /proc/PID/environ would show (the exporters read it from their my.cnf)."""
    return {key: value for key, value in environ.items() if key != PASSWORD_ENV}


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None)
        if found:
            return found
    raise StackError(f"none of {', '.join(names)} is installed; ./innodb-stack up installs Debian's packages")


def bind_error(host: str, port: int) -> int | None:
    """The errno binding HOST:PORT fails with (None: free), in the address family of HOST."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        # As the services bind: a port whose last connections wait out TIME_WAIT is free to them.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.errno
    return None


def _http_get(url: str, timeout: float = 2, headers: dict | None = None) -> tuple[int | None, str]:
    """(status, body); (None, why) when nothing answered."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except OSError as exc:
        return None, str(getattr(exc, "reason", exc))


def _indented(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines()) or "    (empty)"


class Stack:
    def __init__(self, settings: Settings):
        self.s = settings
        self.env = child_environment()
        self.web_password_file: str | None = None  # the stack's own user's, when the exporter asks for one
        self.services = {name: _process(settings, name) for name in
                         ("sysbench", "innodb_exporter", "mysqld_exporter", "node_exporter", "alertmanager",
                          *STORE_SERVICES, "prometheus", "grafana")}
        # The demo server of every flavour, by the pid file the server writes: `down` stops whichever runs.
        self.server_processes = {flavor: _process(settings, demo_name(flavor),
                                                  settings.path(demo_name(flavor), "mysqld.pid"), SERVER_PROGRAMS)
                                 for flavor in FLAVORS}
        self.mariadb_process = self.server_processes[settings.server]  # the one STACK_SERVER picks
        self.grafana_problem: str | None = None  # why the grafana binary may not draw the dashboards right
        # Started by `innodb-replay import` (its default data directory is .stack/replay/data); down stops it.
        self.services["replay_prometheus"] = _process(settings, "replay_prometheus",
                                                      settings.path("replay", "data.prometheus", "prometheus.pid"))

    # --- credentials and settings ----------------------------------------------------------------

    def _secret(self, name: str) -> str:
        """A generated password, kept in .stack/secrets (mode 0600): no default password anywhere."""
        path = self.s.path("secrets", name)
        if not os.path.exists(path):
            self._write_secret(name, secrets.token_urlsafe(18))
        with open(path) as f:
            return f.read().strip()

    def _write_secret(self, name: str, text: str) -> str:
        path = self.s.path("secrets", name)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def _exporter_cnfs(self, user: str, password: str) -> dict[str, str]:
        """Each exporter's my.cnf for the watched server: the password stays out of command lines and
        environments. Both are quoted before either is written: a password one cannot carry is refused."""
        texts = {name: exporter_cnf(self.s.watched(), user, password, quoted) for name, quoted in CNF_QUOTING.items()}
        return {name: self._write_secret(os.path.basename(self.cnf_path(name)), text) for name, text in texts.items()}

    def exporter_web_config(self) -> tuple[str | None, str | None]:
        """(the web config the innodb exporter runs, the password file of the stack's own user in it): with
        STACK_WEB_CONFIG's users, the file with WEB_USER added, for Prometheus and Alertmanager; without
        users, the file as it is and no password file; without STACK_WEB_CONFIG, (None, None)."""
        if not self.s.web_config:
            return None, None
        where = f"STACK_WEB_CONFIG={self.s.web_config}"
        try:
            with open(self.s.web_config, encoding="utf-8") as f:
                data = yaml.safe_load(f) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise StackError(f"{where}: cannot be read ({type(exc).__name__})") from None
        if not isinstance(data, dict):
            raise StackError(f"{where}: not a web configuration (a mapping of tls_server_config, basic_auth_users, ...)")
        if data.get("tls_server_config"):
            raise StackError(f"{where}: tls_server_config is not supported by the native stack, whose Prometheus and "
                             "Alertmanager reach the exporter over plain HTTP on STACK_BIND; give basic_auth_users only")
        users = data.get("basic_auth_users") or {}
        if not users:
            return self.s.web_config, None
        if not isinstance(users, dict) or WEB_USER in users:
            raise StackError(f"{where}: basic_auth_users must map user names to bcrypt hashes, and {WEB_USER} is the "
                             "stack's own")
        password = self._secret("innodb_exporter-web-password")
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(10)).decode()
        text = ("# Written by stack/native.py: STACK_WEB_CONFIG with the stack's own user, which Prometheus and "
                "Alertmanager log in as.\n" + yaml.safe_dump({**data, "basic_auth_users": {**users, WEB_USER: hashed}},
                                                             sort_keys=False))
        return self._write_secret("innodb_exporter-web.yml", text), self.s.path("secrets", "innodb_exporter-web-password")

    def _exporter_auth(self) -> dict:
        """The Authorization header of the stack's own user, when the exporter asks for one."""
        if not self.web_password_file:
            return {}
        with open(self.web_password_file, encoding="utf-8") as f:
            token = base64.b64encode(f"{WEB_USER}:{f.read().strip()}".encode()).decode()
        return {"Authorization": f"Basic {token}"}

    def cnf_path(self, exporter: str) -> str:
        """The my.cnf ``exporter`` (a key of CNF_QUOTING) reads."""
        return self.s.path("secrets", f"{exporter}.cnf")

    def settings_path(self) -> str:
        return self.s.path("run", "settings.json")

    def saved_settings(self) -> dict | None:
        """The settings the running stack was brought up with (Settings.environment), None when unknown."""
        try:
            with open(self.settings_path(), encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def _save_settings(self) -> None:
        path = self.settings_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(self.s.environment(), f, indent=1, sort_keys=True)
        os.replace(path + ".tmp", path)

    def running(self) -> list[str]:
        """The stack's processes that run (not the replay Prometheus: innodb-replay import runs that)."""
        names = [name for name, p in self.services.items() if name != "replay_prometheus" and p.pid()]
        return names + [demo_name(flavor) for flavor, p in self.server_processes.items() if p.pid()]

    def check_settings(self) -> None:
        """While the stack runs, `up` only starts what is stopped: with other settings it would rewrite the
        configuration of processes that keep running with the old one."""
        running = self.running()
        if not running:
            return
        saved = self.saved_settings()
        if saved is None:
            raise StackError(f"the stack runs ({', '.join(running)}) with settings {self.settings_path()} does not "
                             "record: run ./innodb-stack down first")
        # Which settings apply follows from MYSQL_ADDRESS and STACK_STORE, which always do.
        wanted = self.s.environment()
        differ = [f"{key}={saved[key] or '(unset)'} (now {wanted[key] or '(unset)'})"
                  for key in sorted(saved.keys() & wanted.keys()) if saved[key] != wanted[key]]
        if differ:
            raise StackError(f"the stack runs with other settings: {', '.join(differ)}; run ./innodb-stack down "
                             "first")

    # --- up --------------------------------------------------------------------------------------

    def check_ports(self) -> None:
        """Every port `up` listens on is free, or its own service holds it."""
        problem = bind_error(self.s.bind, 0)
        if problem:
            why = "not an address of this host" if problem == errno.EADDRNOTAVAIL else os.strerror(problem)
            raise StackError(f"STACK_BIND={self.s.bind}: {why}")
        taken = [self._holder(name) for name in self.s.listening()
                 if not self._ours(name) and bind_error(self.s.listen_host(name), self.s.ports[name])]
        if taken:
            raise StackError(f"ports in use: {', '.join(taken)}; set STACK_PORT_<SERVICE> (e.g. "
                             f"STACK_PORT_PROMETHEUS=19090) or stop what holds them")

    def _holder(self, name: str) -> str:
        """A taken port, with the stack's own demo server when another flavour of it runs there."""
        taken = f"{name} {self.s.ports[name]}"
        if name != "mariadb":
            return taken
        others = [demo_name(flavor) for flavor, p in self.server_processes.items() if p.pid()]
        return taken + (f" (the stack's demo server {others[0]} runs: ./innodb-stack down first)" if others else "")

    def _ours(self, name: str) -> bool:
        process = self.mariadb_process if name == "mariadb" else self.services.get(service_of(name))
        return bool(process and process.pid())

    def up(self) -> None:
        self.check_settings()
        self.check_ports()
        os.makedirs(self.s.root, exist_ok=True)
        cnfs = self._own_server_cnfs() if self.s.mysql_address else None  # refused before anything starts
        web_config, self.web_password_file = self.exporter_web_config()  # likewise
        self._save_settings()
        cnfs = cnfs or self._demo_server()
        config_dir = self.prometheus_dir()  # first: its target file is also the exporter's allow-list
        self._start_exporters(cnfs, os.path.join(config_dir, "targets", "mysql.yml"), web_config)
        self._start_alertmanager()
        self._start_victoriametrics(os.path.join(config_dir, "rules"))
        self._start_prometheus(config_dir)
        self._start_thanos()
        self._start_grafana()
        self._wait_ready()
        self._print_urls()
        self._warn_unless_healthy()

    def _own_server_cnfs(self) -> dict[str, str]:
        if not self.s.exporter_password:  # mysqld_exporter exits on an empty one
            raise StackError(f"MYSQL_ADDRESS={self.s.mysql_address}: set {PASSWORD_ENV}, the password of the "
                             f"exporters' account {self.s.exporter_user} on it (README.md, Grants)")
        return self._exporter_cnfs(self.s.exporter_user, self.s.exporter_password)

    def _demo_server(self) -> dict[str, str]:
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
        load = Sysbench(db, threads=self.s.sysbench_threads, workload=self.s.sysbench_workload)
        if first_time:
            load.prepare()
        if not self.services["sysbench"].pid():
            self.services["sysbench"].start(load.run_command(seconds=10 * 365 * 86400, rate=self.s.sysbench_rate),
                                            env=self.env)
        return self._exporter_cnfs("exporter", exporter_password)

    def exporter_command(self, cnf: str, targets_file: str, web_config: str | None) -> list[str]:
        """The innodb exporter's command line: /probe reaches the servers Prometheus' target file lists,
        Alertmanager's webhook captures into captures/; no password on it (they are in files)."""
        exporter = os.path.join(os.path.dirname(self.s.python), "innodb-exporter")
        cmd = [exporter] if os.path.exists(exporter) else [self.s.python, "-m", "innodb_exporter"]
        return [*cmd, f"--web.listen-address={self.s.listen_address('innodb_exporter')}", f"--config.my-cnf={cnf}",
                f"--probe.targets-file={targets_file}", f"--capture.dir={self.s.path('captures')}",
                *([f"--web.config.file={web_config}"] if web_config else []), *self.s.exporter_flags]

    def _start_exporters(self, cnfs: dict[str, str], targets_file: str, web_config: str | None) -> None:
        self.services["innodb_exporter"].start(self.exporter_command(cnfs["innodb_exporter"], targets_file, web_config),
                                               env=dict(self.env, PYTHONPATH=os.path.join(REPO, "exporters")))
        self.services["mysqld_exporter"].start(
            [_binary("prometheus-mysqld-exporter", "mysqld_exporter"), f"--config.my-cnf={cnfs['mysqld_exporter']}",
             f"--web.listen-address={self.s.listen_address('mysqld_exporter')}"], env=self.env)
        self.services["node_exporter"].start(
            [_binary("prometheus-node-exporter", "node_exporter"),
             f"--web.listen-address={self.s.listen_address('node_exporter')}"], env=self.env)

    def alertmanager_config(self) -> str:
        """Compose's alertmanager.yml with the exporter's address here, for the capture webhook, and the
        stack's own user for it when the exporter asks for one (its password in a file)."""
        with open(os.path.join(PROVISIONING, "alertmanager", "alertmanager.yml"), encoding="utf-8") as f:
            text = f.read().replace(f"//{COMPOSE_EXPORTER}/", f"//{self.s.address('innodb_exporter')}/")
        if self.web_password_file:
            config = yaml.safe_load(text)
            for receiver in config["receivers"]:
                for hook in receiver.get("webhook_configs", []):
                    if hook["url"].startswith(self.s.url("innodb_exporter") + "/"):
                        hook["http_config"] = self._basic_auth()
            text = ("# Written by stack/native.py from provisioning/alertmanager/alertmanager.yml, with the "
                    "exporter's address and user.\n" + yaml.safe_dump(config, sort_keys=False))
        path = self.s.path("alertmanager", "alertmanager.yml")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def _basic_auth(self) -> dict:
        """An http_config (Alertmanager's, and a scrape config's keys) that logs in as the stack's user."""
        return {"basic_auth": {"username": WEB_USER, "password_file": self.web_password_file}}

    def _start_alertmanager(self) -> None:
        self.services["alertmanager"].start(
            [_binary("prometheus-alertmanager", "alertmanager"), f"--config.file={self.alertmanager_config()}",
             f"--storage.path={self.s.path('alertmanager')}",
             f"--web.listen-address={self.s.listen_address('alertmanager')}", "--cluster.listen-address="],
            env=self.env)

    def prometheus_dir(self) -> str:
        """The configuration Prometheus reads: compose's prometheus.yml and rules, local target files."""
        config_dir = self.s.path("prometheus")
        rules = os.path.join(config_dir, "rules")
        shutil.rmtree(rules, ignore_errors=True)
        os.makedirs(rules)
        mixin = os.path.join(REPO, "alerts", "mixin.py")
        sets = [arg for item in self.s.rule_overrides for arg in ("--set", item)]
        subprocess.run([self.s.python, mixin, "--out", rules, *sets], check=True, env=self.env)
        shutil.copy(os.path.join(PROVISIONING, "prometheus", "prometheus.yml"), config_dir)
        if self.web_password_file:  # the innodb job scrapes the exporter as the stack's user
            path = os.path.join(config_dir, "prometheus.yml")
            with open(path, encoding="utf-8") as f:
                config = yaml.safe_load(f)
            for job in config["scrape_configs"]:
                if job["job_name"] == "innodb":
                    job.update(self._basic_auth())
            with open(path, "w", encoding="utf-8") as f:
                f.write("# Written by stack/native.py from provisioning/prometheus/prometheus.yml, with the exporter's "
                        "user.\n" + yaml.safe_dump(config, sort_keys=False))
        env = dict(self.env, MYSQL_ADDRESS=str(self.s.watched()),
                   INNODB_EXPORTER=self.s.address("innodb_exporter"), MYSQLD_EXPORTER=self.s.address("mysqld_exporter"),
                   NODE_EXPORTER=self.s.address("node_exporter"),
                   PROMETHEUS=self.s.address("prometheus"), PROMETHEUS_B=self.s.address("prometheus_b"),
                   ALERTMANAGER=self.s.address("alertmanager"),
                   STACK_STORE=self.s.store or "", VICTORIAMETRICS=self.s.address("victoriametrics"),
                   PROMETHEUS_CONFIG=os.path.join(config_dir, "prometheus.yml"),
                   REDO_DEVICE="" if self.s.mysql_address else devices.block_device(
                       self.s.path(demo_name(self.s.server))))
        for replica in self.s.replicas():  # the same targets; with Thanos, each replica's configuration
            subprocess.run(["sh", os.path.join(PROVISIONING, "prometheus", "write-targets.sh"),
                            os.path.join(config_dir, "targets")], check=True,
                           env=dict(env, PROMETHEUS_REPLICA=REPLICAS[replica]))
        return config_dir

    def prometheus_config(self, config_dir: str, replica: str = "prometheus") -> str:
        """The file a Prometheus runs: with a store, the one write-targets.sh writes for it."""
        name = {"victoriametrics": "prometheus-remote-write.yml",
                "thanos": f"prometheus-replica-{REPLICAS[replica]}.yml"}.get(self.s.store or "", "prometheus.yml")
        return os.path.join(config_dir, name)

    def prometheus_data(self, replica: str = "prometheus") -> str:
        """A replica's TSDB: .stack/prometheus/data, and data-b for the second replica."""
        return self.s.path("prometheus", "data" if replica == "prometheus" else f"data-{REPLICAS[replica]}")

    def _start_victoriametrics(self, rules: str) -> None:
        """VictoriaMetrics, and vmalert on it with Prometheus' rules: it records into the store and alerts
        through the stack's Alertmanager beside Prometheus. Its recorded series are labelled as Prometheus'
        (no external label), so that the dashboards read the same series from either; its alerts carry the
        label alertgroup (the rule group), which Prometheus' do not."""
        if self.s.store != "victoriametrics":
            return
        store = self.s.url("victoriametrics")
        self.services["victoriametrics"].start(
            [_binary("victoria-metrics"), f"-httpListenAddr={self.s.listen_address('victoriametrics')}",
             f"-storageDataPath={self.s.path('victoriametrics')}", f"-retentionPeriod={RETENTION}", *self._tcp6()],
            env=self.env)
        # vmalert restores its alerts' state from the store when it starts: the store must answer by then.
        self._wait_until_ready("victoriametrics")
        self.services["vmalert"].start(
            [_binary("vmalert"), f"-httpListenAddr={self.s.listen_address('vmalert')}", f"-rule={rules}/*.yml",
             f"-datasource.url={store}", f"-remoteWrite.url={store}", f"-remoteRead.url={store}",
             f"-notifier.url={self.s.url('alertmanager')}", f"-evaluationInterval={EVALUATION_INTERVAL}",
             f"-external.url={self.s.url('vmalert')}", *self._tcp6()], env=self.env)

    def _tcp6(self) -> list[str]:
        """VictoriaMetrics' programs listen and dial on IPv4 only unless told."""
        return ["-enableTCP6"] if ":" in self.s.bind else []

    def prometheus_binary(self) -> str:
        """STACK_PROMETHEUS: Debian's package, or Prometheus 3 as stack/tools.py builds it (first, if need be)."""
        return tools.ensure("prometheus") if self.s.prometheus == "3" else _binary("prometheus")

    def _start_prometheus(self, config_dir: str) -> None:
        for replica in self.s.replicas():
            self.start_replica(replica, config_dir)

    def start_replica(self, replica: str = "prometheus", config_dir: str | None = None) -> None:
        """A Prometheus of the stack (with Thanos, either replica; it runs in the bucket's block length, which
        the sidecar needs, and keeps its own blocks for replica_retention)."""
        config_dir = config_dir or self.s.path("prometheus")
        thanos = self.s.store == "thanos"
        tsdb = ([f"--storage.tsdb.min-block-duration={self.s.block_duration}",
                 f"--storage.tsdb.max-block-duration={self.s.block_duration}"] if thanos else [])
        self.services[replica].start(
            [self.prometheus_binary(), f"--config.file={self.prometheus_config(config_dir, replica)}",
             f"--storage.tsdb.path={self.prometheus_data(replica)}",
             f"--storage.tsdb.retention.time={self.s.replica_retention if thanos else RETENTION}", *tsdb,
             f"--web.listen-address={self.s.listen_address(replica)}", "--web.enable-lifecycle"], env=self.env)

    def bucket_config(self) -> str:
        """Compose's Thanos bucket configuration (a filesystem bucket) with its directory in .stack/thanos."""
        directory = self.s.path("thanos", "bucket")
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(PROVISIONING, "thanos", "bucket.yml"), encoding="utf-8") as f:
            text = f.read().replace(f"directory: {COMPOSE_BUCKET}\n", f"directory: {json.dumps(directory)}\n")
        path = self.s.path("thanos", "bucket.yml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def _start_thanos(self) -> None:
        """A sidecar beside each replica, the store gateway on the bucket, and the querier over them all."""
        if self.s.store != "thanos":
            return
        thanos, bucket = tools.ensure("thanos"), self.bucket_config()

        def addresses(service: str) -> list[str]:
            return [f"--http-address={self.s.listen_address(service)}",
                    f"--grpc-address={self.s.listen_address(service + '_grpc')}"]

        for replica in SIDECARS:
            self._start_sidecar(replica, thanos, bucket)
        self.services["thanos_store"].start(
            [thanos, "store", f"--data-dir={self.s.path('thanos', 'store')}", f"--objstore.config-file={bucket}",
             f"--sync-block-duration={self.s.bucket_sync}", *addresses("thanos_store")], env=self.env)
        self.services["thanos_query"].start(
            [thanos, "query", *addresses("thanos_query"), f"--endpoint.sd-config-file={self.endpoints_config()}",
             "--query.replica-label=replica"], env=self.env)

    def endpoints_config(self) -> str:
        """The Store API endpoints Query reads, as compose's provisioning/thanos/endpoints.yml lists them: both
        sidecars and the store gateway (JSON, which is YAML)."""
        path = self.s.path("thanos", "endpoints.yml")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"endpoints": [{"address": self.s.address(service + "_grpc")}
                                     for service in (*SIDECARS.values(), "thanos_store")]}, f)
        return path

    def _start_sidecar(self, replica: str, thanos: str, bucket: str) -> None:
        """The replica's sidecar: its Store API for Query, and the upload of each block the replica cuts."""
        sidecar = SIDECARS[replica]
        self.services[sidecar].start(
            [thanos, "sidecar", f"--tsdb.path={self.prometheus_data(replica)}",
             f"--prometheus.url={self.s.url(replica)}", f"--objstore.config-file={bucket}",
             f"--http-address={self.s.listen_address(sidecar)}", f"--grpc-address={self.s.listen_address(sidecar + '_grpc')}"],
            env=self.env)

    def _start_grafana(self) -> None:
        """Grafana joins where a grafana binary is installed (Debian does not package it)."""
        try:
            binary = _binary("grafana", "grafana-server")
        except StackError:
            return
        from .grafana import command, version_problem

        self.grafana_problem = version_problem(binary)
        if self.grafana_problem:
            print(f"warning: {self.grafana_problem}", file=sys.stderr)
        argv, env = command(self.s, binary, self._secret("grafana-admin"))
        self.services["grafana"].start(argv, env=child_environment(env))

    def _wait_ready(self) -> None:
        for name in READY_PATHS:
            if name in self.s.listening() and (name != "grafana" or self.services["grafana"].pid()):
                self._wait_until_ready(name)

    def _wait_until_ready(self, name: str) -> None:
        """Until the service answers ready; as soon as its process is gone, an error with the end of its log."""
        process, url = self.services[name], self.s.url(name) + READY_PATHS[name]
        headers = self._exporter_auth() if name == "innodb_exporter" else {}
        deadline = time.monotonic() + READY_TIMEOUT
        while _http_get(url, headers=headers)[0] != 200:
            if process.pid() is None:
                raise StackError(f"{name} exited while starting; the end of its log, {process.log_path}:\n"
                                 f"{_indented(process.log_tail())}")
            if time.monotonic() > deadline:
                raise StackError(f"{name} did not answer ready on {url} within {READY_TIMEOUT} s "
                                 f"(log: {process.log_path})")
            time.sleep(0.2)

    def _warn_unless_healthy(self) -> None:
        """The exporters answer whether or not the watched server lets them in: say when it does not."""
        status, answer = _http_get(self.s.url("innodb_exporter") + "/-/healthy", timeout=15,
                                   headers=self._exporter_auth())
        if status != 200:
            print(f"warning: the innodb exporter cannot scrape {self.s.watched()}: {status or 'no answer'} "
                  f"{answer.strip()}; the server's own words are in {self.services['innodb_exporter'].log_path}",
                  file=sys.stderr)

    def _print_urls(self) -> None:
        print("InnoDB stack is up:")
        for name in ("grafana", "prometheus", "alertmanager", "innodb_exporter", "mysqld_exporter", "node_exporter",
                     *STORE_SERVICES):
            if self.services[name].pid():
                print(f"  {name:16} {self.s.url(name)}")
        version = "3 (built by stack/tools.py)" if self.s.prometheus == "3" else "Debian's package"
        pair = f"; replicas {', '.join(REPLICAS.values())} behind Thanos Query" if self.s.store == "thanos" else ""
        print(f"  Prometheus       {version}{pair}")
        target = self.s.mysql_address or f"{self.s.address('mariadb')} (demo {self.s.server} under sysbench load)"
        print(f"  watching         {target}")
        if self.web_password_file:
            print(f"innodb exporter: user {WEB_USER}, password in {self.web_password_file} (and the users of "
                  f"{self.s.web_config})")
        if self.services["grafana"].pid():
            print(f"Grafana: user admin, password in {self.s.path('secrets', 'grafana-admin')}")
            if self.grafana_problem:  # said again where the addresses are read
                print(f"warning: {self.grafana_problem}", file=sys.stderr)
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

    def status(self) -> list[tuple[str, int | None, str]]:
        """(name, pid or None, where it listens) of every service these settings run, and of any that runs."""
        rows, listening = [], self.s.listening()
        for name, process in self.services.items():
            pid = process.pid()
            if pid or name in listening or (name == "sysbench" and not self.s.mysql_address):
                rows.append((name, pid, self.s.url(name) if name in listening else ""))
        for flavor, process in self.server_processes.items():
            pid = process.pid()
            if pid or (flavor == self.s.server and not self.s.mysql_address):
                rows.append((demo_name(flavor), pid, self.s.address("mariadb") if flavor == self.s.server else ""))
        return rows


def _status_lines(stack: Stack) -> list[str]:
    lines = [f"{name:16} " + (f"running, pid {pid}" + (f", {where}" if where else "") if pid else "stopped")
             for name, pid, where in stack.status()]
    return lines + [f"{'watching':16} {stack.s.watched()}"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m stack.native", description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["up", "down", "status"])
    args = p.parse_args(argv)
    try:
        settings = Settings.from_environment()
        # Read into the settings: nothing this command starts needs it in its environment (stack.servers
        # starts the demo server with this process's).
        os.environ.pop(PASSWORD_ENV, None)
        stack = Stack(settings)
        if args.command == "up":
            stack.up()
            return 0
        saved = stack.saved_settings()  # down and status: the settings the stack runs with
        stack = Stack(Settings.from_environment(saved)) if saved and stack.running() else stack
        if args.command == "down":
            stack.down()
        else:
            print("\n".join(_status_lines(stack)))
    except (StackError, RuntimeError, TimeoutError) as exc:  # RuntimeError: roots.RootError, a server's start
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
