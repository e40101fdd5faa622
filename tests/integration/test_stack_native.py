"""The native stack's `up` for your own server, for real: the processes it starts and their environments,
what it refuses, what it says when a service or the server does not play along. Each test brings up its
own stack on free ports (no demo server: a server the test starts, or none) and stops it."""

from __future__ import annotations

import dataclasses
import os
import urllib.error
import urllib.request

import pytest

from innodb_exporter.config import PASSWORD_ENV
from stack.native import Stack
from stack.settings import DEFAULT_PORTS, Settings, StackError
from support.servers import free_port, server

pytestmark = pytest.mark.integration


def settings_from(tmp_path, **environ) -> Settings:
    """Settings as `./innodb-stack up` reads them from its environment, on free ports, under tmp_path."""
    ports = {f"STACK_PORT_{name.upper()}": str(free_port()) for name in DEFAULT_PORTS}
    settings = Settings.from_environment({**ports, **environ})
    settings.root = str(tmp_path / ".stack")
    return settings


@pytest.fixture
def stacks():
    """Stacks a test brings up (``stacks(settings)``), all stopped after it."""
    made: list[Stack] = []

    def make(settings: Settings) -> Stack:
        made.append(Stack(settings))
        return made[-1]

    yield make
    for stack in made:
        stack.down()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=15) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def environ_of(pid: int) -> bytes:
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read()


def test_up_for_a_server_it_cannot_reach(tmp_path, stacks, monkeypatch, capsys):
    """It warns instead of saying all is well; no process it starts sees the exporter password; a second
    up with the same settings leaves everything as it is, one with other settings is refused."""
    password, closed = "Leak-Me-4711", free_port()
    monkeypatch.setenv(PASSWORD_ENV, password)  # the caller's environment, as the stack reads it
    settings = settings_from(tmp_path, MYSQL_ADDRESS=f"127.0.0.1:{closed}", **{PASSWORD_ENV: password})
    stack = stacks(settings)
    stack.up()
    err = capsys.readouterr().err
    assert f"warning: the innodb exporter cannot scrape 127.0.0.1:{closed}: 503 cannot scrape" in err, err
    assert stack.services["innodb_exporter"].log_path in err

    running = {name: stack.services[name].pid() for name in stack.running()}
    assert set(running) == {"innodb_exporter", "mysqld_exporter", "node_exporter", "alertmanager", "prometheus"}
    for name, pid in running.items():
        assert password.encode() not in environ_of(pid), f"{name} has the password in its environment"

    with open(f"/proc/{running['prometheus']}/cmdline", "rb") as f:
        assert b"--storage.tsdb.retention.time=30d" in f.read().split(b"\0")
    where = {name: address for name, pid, address in stack.status() if pid}
    assert where["prometheus"] == f"http://127.0.0.1:{settings.ports['prometheus']}"

    Stack(settings).up()
    assert {name: stack.services[name].pid() for name in stack.running()} == running
    moved = dataclasses.replace(settings, ports=dict(settings.ports, prometheus=free_port()))
    with pytest.raises(StackError, match=f"STACK_PORT_PROMETHEUS={settings.ports['prometheus']} "):
        Stack(moved).up()


def test_up_on_ipv6_loopback(tmp_path, stacks):
    settings = settings_from(tmp_path, STACK_BIND="::1", MYSQL_ADDRESS=f"127.0.0.1:{free_port()}",
                             **{PASSWORD_ENV: "any"})
    stack = stacks(settings)
    stack.up()
    assert get(f"http://[::1]:{settings.ports['prometheus']}/-/ready")[0] == 200
    assert {address for name, pid, address in stack.status() if pid} >= {
        f"http://[::1]:{settings.ports[name]}" for name in ("prometheus", "alertmanager", "innodb_exporter")}


def test_a_service_that_exits_on_start_stops_up_at_once_with_its_log(tmp_path, stacks, monkeypatch):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "prometheus").write_text("#!/bin/sh\necho 'prometheus: error: cannot start (the test says so)' >&2\n"
                                     "exit 1\n")
    (fake / "prometheus").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    # Debian's Prometheus is the one found on PATH (a built Prometheus 3 is run from the tools cache).
    stack = stacks(settings_from(tmp_path, MYSQL_ADDRESS=f"127.0.0.1:{free_port()}", STACK_PROMETHEUS="debian",
                                 **{PASSWORD_ENV: "any"}))
    with pytest.raises(StackError) as failed:
        stack.up()
    message = str(failed.value)
    assert message.startswith(f"prometheus exited while starting; the end of its log, "
                              f"{stack.services['prometheus'].log_path}:\n")
    assert "    prometheus: error: cannot start (the test says so)" in message


@pytest.mark.parametrize("flavor, via", [("mariadb-10.11", "tcp"), ("mariadb-10.11", "socket"),
                                         ("mariadb-11.8", "tcp")])
def test_both_exporters_log_in_with_a_password_full_of_comment_signs(tmp_path, stacks, flavor, via):
    """'#' starts a comment for both exporters' my.cnf readers and ';' for mysqld_exporter's, unless quoted
    as each reads it; the demo's grants let mysqld_exporter's collectors run without an error."""
    password = "Abx1#yz;q`\"'\\"
    with server(flavor, "stock") as db:
        db.create_user("watcher", password)
        address = db.address if via == "tcp" else f"unix://{db.socket}"
        settings = settings_from(tmp_path, MYSQL_ADDRESS=address, MYSQL_EXPORTER_USER="watcher",
                                 **{PASSWORD_ENV: password})
        stack = stacks(settings)
        stack.up()
        assert get(settings.url("innodb_exporter") + "/-/healthy") == (200, "OK\n")
        for _ in range(3):  # every collector runs on every scrape
            status, metrics = get(settings.url("mysqld_exporter") + "/metrics")
        assert "\nmysql_up 1\n" in metrics
        with open(stack.services["mysqld_exporter"].log_path) as f:
            errors = [line for line in f if "level=error" in line]
        assert errors == []
