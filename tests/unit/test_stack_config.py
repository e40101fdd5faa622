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


def test_an_unknown_store_is_refused(tmp_path):
    out = subprocess.run(["sh", os.path.join(PROVISIONING, "prometheus", "write-targets.sh"), str(tmp_path)],
                         capture_output=True, text=True, env=dict(os.environ, STACK_STORE="mimir"))
    assert out.returncode == 2 and "STACK_STORE=mimir: victoriametrics, or empty" in out.stderr


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
                             "prometheus", "alertmanager", "grafana", "replay-prometheus", "victoriametrics",
                             "vmalert"}
    for name, service in services.items():
        image = service.get("image")
        assert image is None or (":" in image and not image.endswith(":latest")), f"{name}: unpinned {image}"
        assert "healthcheck" in service or name == "sysbench", f"{name} has no healthcheck"
    assert services["mysql"]["profiles"] == ["demo"] and services["sysbench"]["profiles"] == ["demo"]
    assert services["replay-prometheus"]["profiles"] == ["replay"]
    assert services["victoriametrics"]["profiles"] == services["vmalert"]["profiles"] == ["store"]
    optional = ("mysql", "sysbench", "replay-prometheus", "victoriametrics", "vmalert")
    assert all("profiles" not in s for n, s in services.items() if n not in optional)


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
