"""The stack's configuration: Prometheus, Alertmanager, compose, and the target files of both modes."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest
import yaml

from support.golden import TESTS

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
    for name in ("mysqld-exporter.yml", "node.yml"):
        assert load(name)[0]["labels"] == {"instance": "db1:3306"}


def test_write_targets_runs_the_command_after_it(tmp_path):
    out = subprocess.run(["sh", os.path.join(PROVISIONING, "prometheus", "write-targets.sh"), str(tmp_path),
                          "--", "echo", "prometheus starts"], capture_output=True, text=True, check=True)
    assert out.stdout == "prometheus starts\n"


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


def test_docker_compose_config_validates(tmp_path):
    env_file = tmp_path / "env"
    with open(os.path.join(ROOT, ".env.example")) as f:
        env_file.write_text(f.read().replace("PASSWORD=\n", "PASSWORD=not-a-real-one\n"))
    out = compose("--env-file", str(env_file), "config")
    assert out.returncode == 0, out.stderr
    config = yaml.safe_load(out.stdout)
    services = config["services"]
    assert set(services) == {"mysql", "sysbench", "innodb-exporter", "mysqld-exporter", "node-exporter",
                             "prometheus", "alertmanager", "grafana", "replay-prometheus"}
    for name, service in services.items():
        image = service.get("image")
        assert image is None or (":" in image and not image.endswith(":latest")), f"{name}: unpinned {image}"
        assert "healthcheck" in service or name == "sysbench", f"{name} has no healthcheck"
    assert services["mysql"]["profiles"] == ["demo"] and services["sysbench"]["profiles"] == ["demo"]
    assert services["replay-prometheus"]["profiles"] == ["replay"]
    assert all("profiles" not in s for n, s in services.items() if n not in ("mysql", "sysbench", "replay-prometheus"))


def test_compose_refuses_to_start_without_passwords():
    out = compose("--env-file", os.path.join(ROOT, ".env.example"), "config")
    assert out.returncode != 0 and "set " in out.stderr and "in .env" in out.stderr


def test_mysql_address_points_every_service_at_your_own_server(tmp_path):
    env_file = tmp_path / "env"
    with open(os.path.join(ROOT, ".env.example")) as f:
        env_file.write_text(f.read().replace("PASSWORD=\n", "PASSWORD=not-a-real-one\n"))
    out = compose("--env-file", str(env_file), "config", env={"MYSQL_ADDRESS": "db.example:3306"})
    assert out.returncode == 0, out.stderr
    services = yaml.safe_load(out.stdout)["services"]
    assert "--mysqld.address=db.example:3306" in services["innodb-exporter"]["command"]
    assert "--mysqld.address=db.example:3306" in services["mysqld-exporter"]["command"]
    assert services["prometheus"]["environment"]["MYSQL_ADDRESS"] == "db.example:3306"
