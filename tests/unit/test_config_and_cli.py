"""Flags, my.cnf and web config: every problem reported at once, clear messages, no secret shown."""

from __future__ import annotations

import os
import subprocess

import bcrypt

from innodb_exporter import cli, config
from innodb_exporter.webconfig import BasicAuth, load_web_config
from support.exporter import exporter_command
from support.golden import FIXTURES


def load(argv, environ=None):
    args = cli.server_parser().parse_args(argv)
    args.disabled_sources = set()
    return config.load(args, environ or {})


def run(*argv, stdin=None):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(FIXTURES), "..", "exporters"))
    return subprocess.run([*exporter_command(), *argv], capture_output=True, text=True, input=stdin, env=env, timeout=60)


def test_all_problems_at_once():
    cfg, problems = load(["--web.listen-address=nonsense", "--collect.latches.top=0",
                          "--config.my-cnf=/nonexistent/my.cnf", "--mysqld.address=db:notaport"])
    assert cfg is None
    text = "\n".join(problems)
    for expected in ("--web.listen-address 'nonsense'", "--collect.latches.top", "/nonexistent/my.cnf", "notaport",
                     "no user"):
        assert expected in text, text


def test_bad_flags_exit_2_with_every_problem_on_stderr():
    out = run("--web.listen-address=nonsense", "--collect.latches.top=0", "--mysqld.username=x")
    assert out.returncode == 2
    assert "--web.listen-address" in out.stderr and "--collect.latches.top" in out.stderr


def test_my_cnf_gives_credentials_and_flags_override(tmp_path):
    cnf = tmp_path / "my.cnf"
    cnf.write_text("!includedir /etc/mysql/conf.d/\n[client]\nuser=monitor\npassword='Cnf-Secret'\n"
                   "host=db.example\nport=3307\nskip-ssl\n[client.replica]\nuser=other\npassword=p2\n")
    cfg, problems = load([f"--config.my-cnf={cnf}"])
    assert problems == []
    c = cfg.connection
    assert (c.user, c.password, c.host, c.port) == ("monitor", "Cnf-Secret", "db.example", 3307)
    assert "Cnf-Secret" not in repr(cfg)
    cfg, _ = load([f"--config.my-cnf={cnf}", "--mysqld.address=other:3308"], {"MYSQLD_EXPORTER_PASSWORD": "EnvPw"})
    assert (cfg.connection.host, cfg.connection.port, cfg.connection.password) == ("other", 3308, "EnvPw")
    settings, error = config.probe_connection(cfg, "db2:3309", "client.replica")
    assert error is None and (settings.user, settings.password, settings.port) == ("other", "p2", 3309)
    assert config.probe_connection(cfg, "db2", "client.nope")[1] == "auth_module 'client.nope': no such section in the my.cnf"


def test_socket_address():
    cfg, problems = load(["--mysqld.address=unix:///run/mysqld/mysqld.sock", "--mysqld.username=u"])
    assert problems == [] and cfg.connection.socket == "/run/mysqld/mysqld.sock"
    assert cfg.connection.address == "unix:///run/mysqld/mysqld.sock"


def test_web_config_problems_are_listed(tmp_path):
    path = tmp_path / "web.yml"
    path.write_text("tls_server_config:\n  cert_file: missing.crt\n  client_auth_type: Sometimes\n"
                    "basic_auth_users:\n  prometheus: plain-text\nunknown: 1\n")
    _, problems = load_web_config(str(path))
    text = "\n".join(problems)
    for expected in ("unknown key 'unknown'", "missing.crt does not exist", "key_file go together",
                     "client_auth_type 'Sometimes'", "not a bcrypt hash"):
        assert expected in text, text


def test_basic_auth_checks_bcrypt_and_remembers_success():
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(4))
    auth = BasicAuth({"prometheus": hashed})
    assert auth.check("prometheus", "pw") and auth.check("prometheus", "pw")
    assert not auth.check("prometheus", "wrong") and not auth.check("nobody", "pw")


def test_parse_command_prints_metrics_with_the_live_names():
    out = run("parse", os.path.join(FIXTURES, "innodb_status", "mysql-5.7.26-semaphores.txt"))
    assert out.returncode == 0, out.stderr
    assert "innodb_checkpoint_age_bytes 5.40492347e+08" in out.stdout
    assert 'innodb_semaphore_waiting_threads{latch="BUF_POOL"} 20.0' in out.stdout


def test_parse_reads_standard_input_and_the_last_of_several_outputs():
    with open(os.path.join(FIXTURES, "innodb_status", "mariadb-10.11.19.txt"), encoding="utf-8") as f:
        one = f.read()
    second = one.replace("History list length 90", "History list length 12345")
    out = run("parse", "-", stdin=one + "\n" + second)
    assert out.returncode == 0
    assert "innodb_history_list_length 12345.0" in out.stdout
    assert "2 monitor outputs found" in out.stderr


def test_parse_garbage_and_missing_files_fail_clearly(tmp_path):
    garbage = tmp_path / "garbage.txt"
    garbage.write_bytes(b"\x00\xffnot a status\n" * 10)
    out = run("parse", str(garbage))
    assert out.returncode == 1 and "holds no SHOW ENGINE INNODB STATUS output" in out.stderr
    out = run("parse", str(tmp_path / "missing.txt"))
    assert out.returncode == 1 and "cannot read" in out.stderr


def test_parse_of_a_truncated_text_says_so():
    out = run("parse", os.path.join(FIXTURES, "innodb_status", "mysql-8.0.26-semaphores-truncated.txt"))
    assert out.returncode == 0 and "truncated" in out.stderr
    assert 'innodb_exporter_parse_errors_total{source="engine_innodb_status"} 1.0' in out.stdout
