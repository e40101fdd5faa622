"""The stack's configuration: Prometheus, Alertmanager, compose, and the target files of both modes."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import bcrypt
import pytest
import yaml

from innodb_exporter import config as exporter_config
from innodb_exporter.scraping.addresses import Address
from stack.native import Stack, child_environment, exporter_cnf, go_ini_quoted, mysys_quoted
from stack.settings import DEFAULT_PORTS, Settings, StackError
from stack.servers import EXPORTER_GRANTS, MARIADB_EXPORTER_GRANTS
from support.golden import TESTS
from support.servers import free_port, wait_for

ROOT = os.path.dirname(TESTS)
PROVISIONING = os.path.join(ROOT, "provisioning")


@pytest.fixture
def prometheus_dir(tmp_path):
    """prometheus.yml as both modes use it: with the rules and target files beside it."""
    shutil.copy(os.path.join(PROVISIONING, "prometheus", "prometheus.yml"), tmp_path)
    shutil.copytree(os.path.join(ROOT, "alerts", "rules"), tmp_path / "rules")
    subprocess.run(["sh", os.path.join(PROVISIONING, "prometheus", "write-targets.sh"), str(tmp_path / "targets")],
                   check=True, env=dict(os.environ, MYSQL_ADDRESS="db1:3306"))
    return tmp_path


def test_promtool_check_config(promtool, prometheus_dir):
    out = subprocess.run([promtool, "check", "config", str(prometheus_dir / "prometheus.yml")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_written_targets_label_every_job_with_the_server(prometheus_dir):
    def load(name):
        with open(prometheus_dir / "targets" / name) as f:
            return yaml.safe_load(f)

    assert load("mysql.yml") == [{"targets": ["db1:3306"], "labels": {"__innodb_exporter": "innodb-exporter:9207"}}]
    assert load("mysqld-exporter.yml")[0]["labels"] == {"instance": "db1:3306"}
    assert load("node.yml")[0]["labels"] == {"instance": "db1:3306", "redo_device": ""}  # no REDO_DEVICE given


def test_write_targets_runs_the_command_after_it(tmp_path):
    out = subprocess.run(["sh", os.path.join(PROVISIONING, "prometheus", "write-targets.sh"), str(tmp_path),
                          "--", "echo", "prometheus starts"], capture_output=True, text=True, check=True)
    assert out.stdout == "prometheus starts\n"


def test_a_store_adds_remote_write_and_prometheus_runs_it(promtool, prometheus_dir):
    """STACK_STORE=victoriametrics: the same prometheus.yml plus remote_write, which the command then runs."""
    config = prometheus_dir / "prometheus.yml"
    out = subprocess.run(["sh", os.path.join(PROVISIONING, "prometheus", "write-targets.sh"),
                          str(prometheus_dir / "targets"), "--", "echo", f"--config.file={config}", "--other"],
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, STACK_STORE="victoriametrics", VICTORIAMETRICS="vm.example:8428",
                                  PROMETHEUS_CONFIG=str(config)))
    written = prometheus_dir / "prometheus-remote-write.yml"
    assert out.stdout == f"--config.file={written} --other\n"
    with open(config) as f, open(written) as g:
        base, extended = yaml.safe_load(f), yaml.safe_load(g)
    [remote_write] = extended.pop("remote_write")
    assert extended == base and remote_write["url"] == "http://vm.example:8428/api/v1/write"
    # Recorded series and ALERTS stay local: the store's ruler writes its own.
    assert remote_write["write_relabel_configs"] == [
        {"source_labels": ["__name__"], "regex": "ALERTS|ALERTS_FOR_STATE|.+:.+", "action": "drop"}]
    check = subprocess.run([promtool, "check", "config", str(written)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_thanos_gives_each_replica_its_label_and_prometheus_runs_it_in_blocks_it_never_compacts(promtool,
                                                                                            prometheus_dir):
    """STACK_STORE=thanos: prometheus.yml plus the replica's external label, dropped from the alerts it sends;
    the same targets for both replicas, each scraping both."""
    config = prometheus_dir / "prometheus.yml"
    written = {}
    for replica in ("a", "b"):
        out = subprocess.run(["sh", os.path.join(PROVISIONING, "prometheus", "write-targets.sh"),
                              str(prometheus_dir / "targets"), "--", "echo", f"--config.file={config}"],
                             capture_output=True, text=True, check=True,
                             env=dict(os.environ, STACK_STORE="thanos", PROMETHEUS_REPLICA=replica, MYSQL_ADDRESS="db1:3306",
                                      PROMETHEUS="p-a:9090", PROMETHEUS_B="p-b:9090", THANOS_BLOCK_DURATION="2m",
                                      PROMETHEUS_CONFIG=str(config)))
        path = prometheus_dir / f"prometheus-replica-{replica}.yml"
        assert out.stdout == (f"--config.file={path} --storage.tsdb.min-block-duration=2m "
                              "--storage.tsdb.max-block-duration=2m\n")
        with open(path) as f:
            written[replica] = yaml.safe_load(f)
        check = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True)
        assert check.returncode == 0 and "WARNING" not in check.stdout + check.stderr, check.stdout + check.stderr
    with open(config) as f:
        base = yaml.safe_load(f)
    for replica, extended in written.items():
        assert extended["global"].pop("external_labels") == {"replica": replica}
        assert extended["alerting"].pop("alert_relabel_configs") == [{"action": "labeldrop", "regex": "replica"}]
        assert extended == base
    with open(prometheus_dir / "targets" / "prometheus.yml") as f:
        assert yaml.safe_load(f) == [{"targets": ["p-a:9090", "p-b:9090"]}]


@pytest.mark.parametrize("variable, value, message", [
    ("STACK_STORE", "mimir", "STACK_STORE=mimir: victoriametrics, thanos, or empty"),
    ("PROMETHEUS_REPLICA", "../x", "PROMETHEUS_REPLICA=../x: one letter")])
def test_an_unknown_store_or_replica_is_refused(tmp_path, variable, value, message):
    out = subprocess.run(["sh", os.path.join(PROVISIONING, "prometheus", "write-targets.sh"), str(tmp_path)],
                         capture_output=True, text=True, env=dict(os.environ, **{variable: value}))
    assert out.returncode == 2 and message in out.stderr


def test_amtool_check_config_for_the_config_and_every_example():
    amtool = shutil.which("amtool")
    assert amtool, "amtool is not installed (apt-get install prometheus-alertmanager)"
    files = [os.path.join(PROVISIONING, "alertmanager", "alertmanager.yml"),
             *sorted(glob.glob(os.path.join(PROVISIONING, "alertmanager", "examples", "*.yml")))]
    out = subprocess.run([amtool, "check-config", *files], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("SUCCESS") == len(files)


def compose(*args, env=None):
    binary = shutil.which("docker-compose")
    assert binary, "docker-compose is not installed (apt-get install docker-compose)"
    return subprocess.run([binary, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})})


@pytest.mark.slow
def test_docker_compose_config_validates(tmp_path):
    env_file = tmp_path / "env"
    with open(os.path.join(ROOT, ".env.example")) as f:
        env_file.write_text(f.read().replace("PASSWORD=\n", "PASSWORD=not-a-real-one\n"))
    out = compose("--env-file", str(env_file), "config")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    config = yaml.safe_load(out.stdout)
    services = config["services"]
    thanos = {"prometheus-b", "thanos-sidecar-a", "thanos-sidecar-b", "thanos-store", "thanos-query"}
    assert set(services) == {"mysql", "sysbench", "innodb-exporter", "mysqld-exporter", "node-exporter",
                             "prometheus", "alertmanager", "grafana", "replay-prometheus", "victoriametrics",
                             "vmalert", *thanos}
    for name, service in services.items():
        image = service.get("image")
        assert image is None or (":" in image and not image.endswith(":latest")), f"{name}: unpinned {image}"
        assert "healthcheck" in service or name == "sysbench", f"{name} has no healthcheck"
    assert services["mysql"]["profiles"] == ["demo"] and services["sysbench"]["profiles"] == ["demo"]
    assert services["replay-prometheus"]["profiles"] == ["replay"]
    assert services["victoriametrics"]["profiles"] == services["vmalert"]["profiles"] == ["store"]
    assert all(services[name]["profiles"] == ["thanos"] for name in thanos)
    optional = ("mysql", "sysbench", "replay-prometheus", "victoriametrics", "vmalert", *thanos)
    assert all("profiles" not in s for n, s in services.items() if n not in optional)
    # The pair: the same Prometheus but for its replica and data; Query over both sidecars and the store gateway.
    a, b = services["prometheus"], services["prometheus-b"]
    assert (a["environment"]["PROMETHEUS_REPLICA"], b["environment"]["PROMETHEUS_REPLICA"]) == ("a", "b")
    assert b["environment"]["STACK_STORE"] == "thanos"
    assert {k: v for k, v in a.items() if k not in ("environment", "volumes", "ports", "profiles")} == \
        {k: v for k, v in b.items() if k not in ("environment", "volumes", "ports", "profiles")}
    query = services["thanos-query"]["command"]
    assert "--query.replica-label=replica" in query and "--endpoint.sd-config-file=/etc/thanos/endpoints.yml" in query
    with open(os.path.join(PROVISIONING, "thanos", "endpoints.yml")) as f:
        endpoints = {e["address"] for e in yaml.safe_load(f)["endpoints"]}
    grpc = {c.split("=")[1].rpartition(":")[2] for n in ("thanos-sidecar-a", "thanos-sidecar-b", "thanos-store")
            for c in services[n]["command"] if c.startswith("--grpc-address=")}
    assert endpoints == {f"{n}:{port}" for n in ("thanos-sidecar-a", "thanos-sidecar-b", "thanos-store") for port in grpc}


def test_compose_refuses_to_start_without_passwords():
    out = compose("--env-file", os.path.join(ROOT, ".env.example"), "config")
    assert out.returncode != 0 and "set " in out.stderr and "in .env" in out.stderr


@pytest.mark.slow
def test_mysql_address_points_every_service_at_your_own_server(tmp_path):
    """Without the demo, its root password is not needed; the exporters' password is."""
    env_file = tmp_path / "env"
    with open(os.path.join(ROOT, ".env.example")) as f:
        env_file.write_text(f.read().replace("_ADMIN_PASSWORD=\n", "_ADMIN_PASSWORD=not-a-real-one\n"))
    own = {"MYSQL_ADDRESS": "db.example:3306", "COMPOSE_PROFILES": ""}
    refused = compose("--env-file", str(env_file), "config", env=own)
    assert refused.returncode != 0 and "set MYSQLD_EXPORTER_PASSWORD in .env" in refused.stderr
    out = compose("--env-file", str(env_file), "config", env={**own, "MYSQLD_EXPORTER_PASSWORD": "yours"})
    assert out.returncode == 0 and out.stderr == "", out.stderr
    services = yaml.safe_load(out.stdout)["services"]
    assert services["innodb-exporter"]["environment"]["MYSQLD_EXPORTER_PASSWORD"] == "yours"
    assert services["mysqld-exporter"]["environment"]["MYSQLD_EXPORTER_PASSWORD"] == "yours"
    assert "--mysqld.address=db.example:3306" in services["innodb-exporter"]["command"]
    assert "--mysqld.address=db.example:3306" in services["mysqld-exporter"]["command"]
    assert services["prometheus"]["environment"]["MYSQL_ADDRESS"] == "db.example:3306"


# --- the native stack's settings ---------------------------------------------------------------------

@pytest.mark.parametrize("given, spelled", [
    ("127.0.0.1", "127.0.0.1:3306"), ("db.example:3307", "db.example:3307"), ("[::1]:3306", "[::1]:3306"),
    ("::1", "[::1]:3306"), ("unix:///run/mysqld/mysqld.sock", "unix:///run/mysqld/mysqld.sock")])
def test_mysql_address_is_read_as_the_exporter_reads_it(given, spelled):
    assert Settings.from_environment({"MYSQL_ADDRESS": given}).mysql_address == spelled


@pytest.mark.parametrize("given", ["db:99999", "db:port", "unix://relative/path", "[::1"])
def test_a_mysql_address_the_exporter_cannot_read_is_refused(given):
    with pytest.raises(StackError, match=r"^MYSQL_ADDRESS: .*\(HOST\[:PORT\], \[IPv6\]:PORT or unix:///path\)$"):
        Settings.from_environment({"MYSQL_ADDRESS": given})


def test_the_command_prints_one_error_line_not_a_traceback():
    out = subprocess.run([sys.executable, "-m", "stack.native", "status"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "MYSQL_ADDRESS": "db.example:99999"})
    assert out.returncode == 1, out.stdout
    assert out.stderr.startswith("error: MYSQL_ADDRESS: ") and out.stderr.count("\n") == 1, out.stderr


@pytest.mark.parametrize("given, bind", [("[::1]", "::1"), ("::1", "::1"), ("", "0.0.0.0"), ("0.0.0.0", "0.0.0.0")])
def test_stack_bind_is_an_ip_address(given, bind):
    assert Settings.from_environment({"STACK_BIND": given}).bind == bind


def test_stack_bind_that_is_no_ip_address_is_refused():
    with pytest.raises(StackError, match="STACK_BIND='localhost' is not an IP address"):
        Settings.from_environment({"STACK_BIND": "localhost"})


def test_thanos_listens_on_the_pair_s_ports_and_only_then():
    ports = dict(DEFAULT_PORTS)
    pair = {"prometheus_b", "thanos_query", "thanos_query_grpc", "thanos_sidecar_a", "thanos_sidecar_a_grpc",
            "thanos_sidecar_b", "thanos_sidecar_b_grpc", "thanos_store", "thanos_store_grpc"}
    thanos = Settings(ports=ports, store="thanos")
    assert pair <= set(thanos.listening()) and not {"victoriametrics", "vmalert"} & set(thanos.listening())
    assert thanos.replicas() == ["prometheus", "prometheus_b"] and thanos.store_url() == thanos.url("thanos_query")
    assert not pair & set(Settings(ports=ports, store="victoriametrics").listening())
    assert Settings(ports=ports).replicas() == ["prometheus"]
    assert Settings(ports=ports, store="victoriametrics").store_url() == Settings(ports=ports).url("victoriametrics")


def test_the_native_thanos_files_are_compose_s_with_the_stack_s_own_places(tmp_path):
    settings = Settings(root=str(tmp_path), ports={name: free_port() for name in DEFAULT_PORTS}, store="thanos")
    stack = Stack(settings)
    with open(stack.bucket_config()) as f:
        bucket = yaml.safe_load(f)
    with open(os.path.join(PROVISIONING, "thanos", "bucket.yml")) as f:
        compose_bucket = yaml.safe_load(f)
    assert bucket == dict(compose_bucket, config={"directory": str(tmp_path / "thanos" / "bucket")})
    assert os.path.isdir(bucket["config"]["directory"])
    with open(stack.endpoints_config()) as f:
        endpoints = yaml.safe_load(f)["endpoints"]
    assert [e["address"] for e in endpoints] == [settings.address(name) for name in (
        "thanos_sidecar_a_grpc", "thanos_sidecar_b_grpc", "thanos_store_grpc")]
    assert stack.prometheus_data("prometheus") != stack.prometheus_data("prometheus_b")
    assert stack.prometheus_config(settings.path("prometheus"), "prometheus_b").endswith("prometheus-replica-b.yml")


@pytest.mark.parametrize("given, chosen", [("debian", "debian"), ("3", "3")])
def test_stack_prometheus_picks_the_build(given, chosen):
    settings = Settings.from_environment({"STACK_PROMETHEUS": given})
    assert settings.prometheus == chosen and settings.environment()["STACK_PROMETHEUS"] == chosen


def test_stack_prometheus_defaults_to_3_once_built(monkeypatch):
    from stack import tools

    monkeypatch.setattr(tools, "built", lambda name: {"version": "3.16.0"} if name == "prometheus" else None)
    assert Settings.from_environment({}).prometheus == "3"
    monkeypatch.setattr(tools, "built", lambda name: None)
    assert Settings.from_environment({}).prometheus == "debian"
    with pytest.raises(StackError, match="STACK_PROMETHEUS='2': debian .* or 3"):
        Settings.from_environment({"STACK_PROMETHEUS": "2"})


def test_services_listen_on_stack_bind_and_are_reached_on_loopback():
    every = Settings(bind="::", ports=dict(DEFAULT_PORTS, prometheus=19090))
    assert every.listen_address("prometheus") == "[::]:19090" and every.url("prometheus") == "http://[::1]:19090"
    # The demo server listens on 127.0.0.1 whatever STACK_BIND says (stack/servers.py).
    assert Settings(bind="10.0.0.5").address("mariadb") == "127.0.0.1:33306"


# --- the exporters' my.cnf files ---------------------------------------------------------------------

HOSTILE_PASSWORDS = ["Abx1#yz;q", "q\"uo'te\\s\\", " spaces ", "tab\there", "line\nbreak", "cr\rlf\r\n", "`ticks`",
                     "%(x)s", "é€😀", "".join(map(chr, range(1, 128)))]


@pytest.mark.parametrize("password", HOSTILE_PASSWORDS)
def test_our_exporter_reads_back_every_password_its_my_cnf_holds(tmp_path, password):
    path = tmp_path / "my.cnf"
    path.write_text(exporter_cnf(Address("127.0.0.1", 3306), "exporter", password, mysys_quoted), encoding="utf-8")
    assert exporter_config.read_my_cnf(str(path))["client"]["password"] == password


def test_mysqld_exporter_takes_its_values_in_backticks():
    """go-ini: verbatim up to the last backtick of the first line that has one (tests/integration/
    test_stack_native.py logs in with such passwords through the real mysqld_exporter)."""
    assert go_ini_quoted("Abx1#yz;q") == "`Abx1#yz;q`"
    assert go_ini_quoted("a\nb`c") == "`a\nb`c`"
    with pytest.raises(StackError, match="backtick before a line break"):
        go_ini_quoted("a`b\nc")


def test_each_exporter_gets_the_server_as_it_reads_it():
    assert exporter_cnf(Address("::1", 3307), "u", "p", go_ini_quoted) == \
        "[client]\nuser=`u`\npassword=`p`\nhost=[::1]\nport=3307\n"
    assert exporter_cnf(Address(None, None, "/run/my sql.sock"), "u", "p", mysys_quoted) == \
        '[client]\nuser="u"\npassword="p"\nsocket="/run/my sql.sock"\n'


@pytest.fixture
def own_server_stack(tmp_path):
    """``own_server_stack(**settings)``: a stack for your server on free ports, stopped after the test
    whatever its up started."""
    made = []

    def make(**settings) -> Stack:
        made.append(Stack(Settings(root=str(tmp_path / ".stack"), ports={name: free_port() for name in DEFAULT_PORTS},
                                   **settings)))
        return made[-1]

    yield make
    for stack in made:
        stack.down()


def test_a_password_mysqld_exporter_cannot_carry_is_refused_before_anything_starts(tmp_path, own_server_stack):
    stack = own_server_stack(mysql_address="127.0.0.1:3306", exporter_password="se`cret\nline")
    with pytest.raises(StackError, match="backtick before a line break") as refused:
        stack.up()
    assert "se`cret" not in str(refused.value)
    assert stack.running() == [] and not (tmp_path / ".stack" / "secrets").exists()


# --- a second up -------------------------------------------------------------------------------------

@pytest.fixture
def running_stack(tmp_path):
    """Settings saved as `up` saves them, and one process of the stack running (a sleep stands for it)."""
    settings = Settings(root=str(tmp_path / ".stack"), ports={name: free_port() for name in DEFAULT_PORTS},
                        mysql_address="db1.example:3306")
    stack = Stack(settings)
    stack._save_settings()
    stack.services["node_exporter"].start(["sleep", "300"])
    yield stack
    stack.services["node_exporter"].stop(timeout=5)


def test_a_second_up_with_other_settings_is_refused_naming_what_differs(running_stack):
    s = running_stack.s
    other = Settings(root=s.root, ports=dict(s.ports, prometheus=s.ports["prometheus"] + 1),
                     mysql_address="db2.example:3306")
    with pytest.raises(StackError) as refused:
        Stack(other).up()
    assert str(refused.value) == (
        f"the stack runs with other settings: MYSQL_ADDRESS=db1.example:3306 (now db2.example:3306), "
        f"STACK_PORT_PROMETHEUS={s.ports['prometheus']} (now {s.ports['prometheus'] + 1}); "
        "run ./innodb-stack down first")
    assert not os.path.exists(s.path("prometheus")), "nothing was rewritten"
    Stack(s).check_settings()  # the same settings: up goes on and starts what is stopped


def test_a_running_stack_without_saved_settings_is_not_guessed_at(running_stack):
    os.remove(running_stack.settings_path())
    with pytest.raises(StackError, match=r"the stack runs \(node_exporter\) with settings .* does not record"):
        running_stack.check_settings()


# --- ports -------------------------------------------------------------------------------------------

def test_a_bind_address_of_another_host_is_named_so(tmp_path):
    stack = Stack(Settings(root=str(tmp_path), bind="192.0.2.1"))
    with pytest.raises(StackError, match=r"^STACK_BIND=192\.0\.2\.1: not an address of this host$"):
        stack.check_ports()


def test_an_ipv6_bind_address_is_checked_as_the_services_bind_it(tmp_path):
    ports = {name: free_port() for name in DEFAULT_PORTS}
    stack = Stack(Settings(root=str(tmp_path), bind="::1", ports=ports))
    stack.check_ports()  # free
    with socket.socket(socket.AF_INET6) as held:
        held.bind(("::1", ports["prometheus"]))
        held.listen()
        with pytest.raises(StackError, match=f"^ports in use: prometheus {ports['prometheus']};"):
            stack.check_ports()


def test_a_port_the_stack_s_other_demo_server_holds_names_it(tmp_path):
    """STACK_SERVER=mysql-9 while the default demo server runs on the demo port."""
    root = tmp_path / ".stack"
    ports = {name: free_port() for name in DEFAULT_PORTS}
    pid_file = root / "mariadb" / "mysqld.pid"
    pid_file.parent.mkdir(parents=True)
    mariadbd = tmp_path / "mariadbd"  # what the pid file's process runs, as the real one would
    mariadbd.symlink_to(os.path.realpath(sys.executable))  # the interpreter itself, not a shim that reads argv[0]
    holder = subprocess.Popen([str(mariadbd), "-c", (
        "import os, socket, time\n"
        f"s = socket.socket(); s.bind(('127.0.0.1', {ports['mariadb']})); s.listen()\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(300)\n")])
    try:
        wait_for(pid_file.exists, 10, what="the stand-in demo server")
        stack = Stack(Settings(root=str(root), ports=ports, server="mysql-9"))
        with pytest.raises(StackError, match=f"^ports in use: mariadb {ports['mariadb']} \\(the stack's demo server "
                                             r"mariadb runs: ./innodb-stack down first\);"):
            stack.check_ports()
    finally:
        holder.kill()
        holder.wait()


# --- innodb-stack with Docker ------------------------------------------------------------------------

@pytest.fixture
def checkout(tmp_path):
    """innodb-stack and compose's files in a directory of their own (the script writes .env beside itself),
    and a docker whose engine answers and whose `compose up` runs the real docker-compose's `config`."""
    for name in ("innodb-stack", "docker-compose.yml", ".env.example"):
        shutil.copy(os.path.join(ROOT, name), tmp_path / name)
    for name in ("exporters", "provisioning", "alerts", "dashboards"):
        (tmp_path / name).symlink_to(os.path.join(ROOT, name))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text('#!/bin/sh\ncase "$1 $2" in\n  "info "*|"compose version") exit 0 ;;\n'
                      '  "compose "*) env > compose.env; exec docker-compose config --quiet ;;\nesac\nexit 1\n')
    docker.chmod(0o755)
    return tmp_path


def innodb_stack(checkout, *args, **env):
    return subprocess.run(["bash", str(checkout / "innodb-stack"), *args], capture_output=True, text=True,
                          env={"PATH": f"{checkout / 'bin'}:{os.environ['PATH']}", "HOME": str(checkout), **env})


def env_file(checkout) -> dict[str, str]:
    lines = (checkout / ".env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def test_docker_up_for_your_server_requires_its_exporter_password(checkout):
    out = innodb_stack(checkout, "up", MYSQL_ADDRESS="db.example:3306")
    assert out.returncode == 1 and not (checkout / "compose.env").exists()
    assert "error: MYSQL_ADDRESS=db.example:3306: set MYSQLD_EXPORTER_PASSWORD" in out.stderr, out.stderr
    assert env_file(checkout)["MYSQLD_EXPORTER_PASSWORD"] == "", "no password invented for your server"
    given = innodb_stack(checkout, "up", MYSQL_ADDRESS="db.example:3306", MYSQLD_EXPORTER_PASSWORD="yours")
    assert given.returncode == 0 and given.stderr == "", given.stderr  # compose config: valid, no warning
    assert "COMPOSE_PROFILES=\n" in (checkout / "compose.env").read_text()


def test_docker_up_for_the_demo_generates_its_passwords(checkout):
    out = innodb_stack(checkout, "up")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    env = env_file(checkout)
    assert env["MYSQLD_EXPORTER_PASSWORD"] and env["MYSQL_ROOT_PASSWORD"] and env["GRAFANA_ADMIN_PASSWORD"]


def test_one_name_for_the_exporter_password_everywhere():
    """MYSQLD_EXPORTER_PASSWORD, which both exporters read; the demo's init script gets it under its own name."""
    with open(os.path.join(ROOT, "docker-compose.yml")) as f:
        compose_text = f.read()
    with open(os.path.join(ROOT, ".env.example")) as f:
        example = f.read()
    with open(os.path.join(ROOT, "innodb-stack")) as f:
        script = f.read()
    assert "${MYSQL_EXPORTER_PASSWORD" not in compose_text and "${MYSQLD_EXPORTER_PASSWORD:?" in compose_text
    assert "\nMYSQLD_EXPORTER_PASSWORD=" in example and "MYSQL_EXPORTER_PASSWORD" not in example
    assert "MYSQL_EXPORTER_PASSWORD" not in script


def test_every_variable_compose_reads_is_in_the_env_example():
    with open(os.path.join(ROOT, "docker-compose.yml")) as f:
        used = set(re.findall(r"\$\{([A-Z_]+)", f.read()))
    with open(os.path.join(ROOT, ".env.example")) as f:
        listed = set(re.findall(r"^([A-Z_]+)=", f.read(), re.MULTILINE))
    # Given on the command line, as README.md and docker-compose.yml's comments say.
    assert used - listed == {"REPLAY_USER", "REPLAY_DATA_DIR", "STACK_STORE", "STORE_URL"}


def test_help_and_readme_name_every_native_setting():
    out = subprocess.run(["bash", os.path.join(ROOT, "innodb-stack"), "--help"], capture_output=True, text=True)
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    settings = ["STACK_BIND", "STACK_PORT_<SERVICE>", "STACK_SYSBENCH_RATE", "STACK_SERVER", "STACK_STORE",
                "STACK_WEB_CONFIG", "STACK_PROMETHEUS", "MYSQL_ADDRESS", "MYSQL_EXPORTER_USER",
                "MYSQLD_EXPORTER_PASSWORD"]
    services = [name.upper() for name in DEFAULT_PORTS if name != "replay_prometheus"]
    for text in (out.stdout, readme):
        assert all(name in text for name in settings + services)


def test_the_readme_asks_for_the_grants_the_demo_gives():
    with open(os.path.join(ROOT, "README.md")) as f:
        asked = {p for line in re.findall(r"^GRANT (.+) ON ", f.read(), re.MULTILINE) for p in line.split(", ")}
    given = {p for grants in (EXPORTER_GRANTS, MARIADB_EXPORTER_GRANTS) for g in grants for p in g.split(" ON ")[0].split(", ")}
    assert given <= asked


def test_your_server_without_an_exporter_password_is_refused(own_server_stack):
    stack = own_server_stack(mysql_address="db.example:3306")
    with pytest.raises(StackError, match="^MYSQL_ADDRESS=db.example:3306: set MYSQLD_EXPORTER_PASSWORD"):
        stack.up()
    assert stack.running() == []


# --- the innodb exporter's web config: the stack's own user for Prometheus and Alertmanager ------------

@pytest.fixture
def web_stack(tmp_path):
    """A native stack given a web config with one user of the operator's."""
    web = tmp_path / "web.yml"
    operator_hash = bcrypt.hashpw(b"operator-pw", bcrypt.gensalt(4)).decode()
    web.write_text(f"basic_auth_users:\n  prometheus: {operator_hash}\n"
                   "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n")
    return Stack(Settings(root=str(tmp_path / ".stack"), web_config=str(web)))


def test_with_users_in_the_web_config_prometheus_and_alertmanager_log_in_from_a_password_file(web_stack, promtool):
    """The webhook could require authentication, but the stack gave Alertmanager no credentials for it."""
    amtool = shutil.which("amtool")
    web, password_file = web_stack.exporter_web_config()
    web_stack.web_password_file = password_file
    assert os.path.dirname(password_file) == web_stack.s.path("secrets")
    assert os.stat(password_file).st_mode & 0o777 == 0o600 and os.stat(web).st_mode & 0o777 == 0o600
    with open(password_file) as f:
        password = f.read()
    with open(web) as f:
        users = yaml.safe_load(f)["basic_auth_users"]
    assert set(users) == {"prometheus", "innodb-stack"}  # the operator's user stays
    assert bcrypt.checkpw(password.encode(), users["innodb-stack"].encode())
    login = {"basic_auth": {"username": "innodb-stack", "password_file": password_file}}

    with open(web_stack.alertmanager_config()) as f:
        text = f.read()
    [hook] = [h for r in yaml.safe_load(text)["receivers"] for h in r.get("webhook_configs", [])]
    assert hook["url"].endswith("/capture") and hook["http_config"] == login
    out = subprocess.run([amtool, "check-config", web_stack.s.path("alertmanager", "alertmanager.yml")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr

    config_dir = web_stack.prometheus_dir()
    with open(os.path.join(config_dir, "prometheus.yml")) as f:
        jobs = {job["job_name"]: job for job in yaml.safe_load(f)["scrape_configs"]}
    assert jobs["innodb"]["basic_auth"] == login["basic_auth"] and "basic_auth" not in jobs["mysqld"]
    out = subprocess.run([promtool, "check", "config", os.path.join(config_dir, "prometheus.yml")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr

    command = web_stack.exporter_command("exporter.cnf", "targets.yml", web)
    assert f"--web.config.file={web}" in command
    everything = text + " ".join(command) + json.dumps(child_environment({**os.environ}))
    assert password not in everything


def test_without_users_or_without_a_web_config_nothing_logs_in(tmp_path):
    plain = tmp_path / "plain.yml"
    plain.write_text("http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n")
    for stack, flags in ((Stack(Settings(root=str(tmp_path / "a"), web_config=str(plain))), [f"--web.config.file={plain}"]),
                         (Stack(Settings(root=str(tmp_path / "b"))), [])):
        web, password_file = stack.exporter_web_config()
        assert password_file is None and web == stack.s.web_config
        with open(stack.alertmanager_config()) as f:
            assert "http_config" not in f.read()
        assert [a for a in stack.exporter_command("c", "t", web) if a.startswith("--web.config.file")] == flags


@pytest.mark.parametrize("text,says", [
    ("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n", "tls_server_config is not supported"),
    ("basic_auth_users:\n  innodb-stack: x\n", "innodb-stack is the stack's own"),
    ("- a list\n", "not a web configuration"),
])
def test_a_web_config_the_stack_cannot_serve_is_refused_before_anything_starts(tmp_path, text, says):
    web = tmp_path / "web.yml"
    web.write_text(text)
    with pytest.raises(StackError, match=says):
        Stack(Settings(root=str(tmp_path / ".stack"), web_config=str(web))).exporter_web_config()
    assert not os.path.exists(tmp_path / ".stack" / "secrets")


def test_stack_web_config_is_read_from_the_environment_and_must_exist(tmp_path):
    web = tmp_path / "web.yml"
    web.write_text("{}\n")
    assert Settings.from_environment({"STACK_WEB_CONFIG": str(web)}).web_config == str(web)
    assert Settings.from_environment({"STACK_WEB_CONFIG": str(web)}).environment()["STACK_WEB_CONFIG"] == str(web)
    with pytest.raises(StackError, match="no such file"):
        Settings.from_environment({"STACK_WEB_CONFIG": str(tmp_path / "missing.yml")})
