"""Flags, my.cnf and web config: every problem reported at once, clear messages, no secret shown."""

from __future__ import annotations

import os
import subprocess

import bcrypt
import pytest

from innodb_exporter import cli, config
from innodb_exporter.web.config import BasicAuth, load_web_config
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
    cfg, problems = load(["--web.listen-address=nonsense", "--probe.max-connections=0", "--probe.allow=10.0.0.0/33",
                          "--config.my-cnf=/nonexistent/my.cnf", "--mysqld.address=db:notaport"])
    assert cfg is None
    text = "\n".join(problems)
    for expected in ("--web.listen-address 'nonsense'", "--probe.max-connections", "10.0.0.0/33",
                     "/nonexistent/my.cnf", "notaport", "no user"):
        assert expected in text, text


def test_bad_flags_exit_2_with_every_problem_on_stderr():
    out = run("--web.listen-address=nonsense", "--probe.max-connections-per-server=0", "--mysqld.username=x")
    assert out.returncode == 2
    assert "--web.listen-address" in out.stderr and "--probe.max-connections-per-server" in out.stderr


@pytest.mark.slow
def test_a_my_cnf_line_is_never_quoted_in_an_error(tmp_path):
    """A my.cnf whose first line is the password must not have it echoed at startup."""
    cnf = tmp_path / "my.cnf"
    cnf.write_text("password=Echo-Me-Not-42\n[client]\nuser=u\n")
    out = run(f"--config.my-cnf={cnf}")
    assert out.returncode == 2 and "line 1: an option before any [section] header" in out.stderr
    cnf.write_text("[client]\nuser=u\n=Echo-Me-Not-42\n")
    out = run(f"--config.my-cnf={cnf}")
    assert out.returncode == 2 and "line 3" in out.stderr
    assert "Echo-Me-Not-42" not in out.stderr + out.stdout


def test_tls_files_of_the_my_cnf_are_named_and_checked_at_start(tmp_path):
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f"[client]\nuser=u\nssl-ca={tmp_path}/ca.pem\nssl-cert={tmp_path}/c.pem\nssl-mode=sometimes\n"
                   f"server-public-key-path={tmp_path}/key.pem\n")
    _, problems = load([f"--config.my-cnf={cnf}"])
    text = "\n".join(problems)
    for expected in (f"ssl-ca {tmp_path}/ca.pem does not exist", f"ssl-cert {tmp_path}/c.pem does not exist",
                     "ssl-cert and ssl-key go together", "ssl-mode 'SOMETIMES'", f"{tmp_path}/key.pem does not exist"):
        assert expected in text, text


def test_a_password_with_characters_beyond_latin_1_is_sent_as_utf_8():
    settings = config.ConnectionSettings(user="u", password="pässwörd-€")
    assert "€" not in repr(settings)
    assert settings.password.encode("utf-8") == "pässwörd-€".encode("utf-8")


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
    cfg, _ = load([f"--config.my-cnf={cnf}", "--probe.allow=db2"])
    settings = config.probe_connection(cfg, "db2:3309", "client.replica")
    assert (settings.user, settings.password, settings.port) == ("other", "p2", 3309)
    with pytest.raises(config.ProbeError, match="auth_module 'client.nope': no such section in the my.cnf"):
        config.probe_connection(cfg, "db2", "client.nope")
    with pytest.raises(config.ProbeError, match="must name a my.cnf section"):
        config.probe_connection(cfg, "db2", "mysqld")


def test_probe_logs_in_with_the_user_and_password_metrics_uses(tmp_path):
    """[client] names a DBA; the flag and the environment name the exporter's account: /probe must not send
    the exporter's password under the DBA's name, nor log in as the DBA."""
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[client]\nuser=dba\npassword=Dba-Secret\n[client.replica]\nuser=other\npassword=p2\n")
    cfg, problems = load([f"--config.my-cnf={cnf}", "--mysqld.username=exporter", "--probe.allow=db2"],
                         {"MYSQLD_EXPORTER_PASSWORD": "EnvPw"})
    assert problems == []
    assert (cfg.connection.user, cfg.connection.password) == ("exporter", "EnvPw")
    for module in (None, "client"):
        settings = config.probe_connection(cfg, "db2", module)
        assert (settings.user, settings.password) == ("exporter", "EnvPw"), module
    settings = config.probe_connection(cfg, "db2", "client.replica")
    assert (settings.user, settings.password) == ("other", "p2")
    # A named section takes what it lacks from [client] (as mysqld_exporter), never the flag's or the env's.
    cnf.write_text("[client]\nuser=dba\npassword=Dba-Secret\nport=3310\n[client.replica]\npassword=p2\n"
                   "[client.nouser]\nport=3311\n")
    cfg, _ = load([f"--config.my-cnf={cnf}", "--mysqld.username=exporter", "--probe.allow=db2"],
                  {"MYSQLD_EXPORTER_PASSWORD": "EnvPw"})
    settings = config.probe_connection(cfg, "db2", "client.replica")
    assert (settings.user, settings.password) == ("dba", "p2")
    settings = config.probe_connection(cfg, "db2", "client.nouser")
    assert (settings.user, settings.password) == ("dba", "Dba-Secret")
    cnf.write_text("[client]\npassword=x\n[client.replica]\npassword=p2\n")
    cfg, _ = load([f"--config.my-cnf={cnf}", "--mysqld.username=exporter", "--probe.allow=db2"])
    with pytest.raises(config.ProbeError, match=r"no user= in \[client.replica\] or \[client\]"):
        config.probe_connection(cfg, "db2", "client.replica")
    cnf.write_text("[client]\nuser=dba\npassword=Dba-Secret\n[client.replica]\nuser=other\npassword=p2\n")
    cfg, _ = load([f"--config.my-cnf={cnf}", "--probe.allow=db2"])
    settings = config.probe_connection(cfg, "db2", "client")
    assert (settings.user, settings.password) == ("dba", "Dba-Secret")


def test_probe_reaches_only_the_servers_the_configuration_names(tmp_path):
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[client]\nuser=u\nhost=db1.example\n[client.replicas]\nuser=r\nhost=10.0.0.7\nport=3307\n")
    cfg, problems = load([f"--config.my-cnf={cnf}"])
    assert problems == []
    for allowed in ("db1.example", "DB1.example.:3306", "10.0.0.7:3307"):
        config.probe_connection(cfg, allowed, None)
    for refused in ("evil.example:3306", "db1.example:3307", "10.0.0.8:3307", "127.0.0.1:3306"):
        with pytest.raises(config.NotAllowed):
            config.probe_connection(cfg, refused, None)
    targets = tmp_path / "mysql.yml"
    targets.write_text("- targets: ['db7.example:3306', '192.168.1.5:3306']\n  labels: {env: prod}\n")
    cfg, problems = load([f"--config.my-cnf={cnf}", f"--probe.targets-file={targets}", "--probe.allow=10.1.0.0/16"])
    assert problems == []
    config.probe_connection(cfg, "db7.example:3306", None)
    config.probe_connection(cfg, "192.168.1.5", None)
    config.probe_connection(cfg, "10.1.200.3:3399", None)
    with pytest.raises(config.NotAllowed):
        config.probe_connection(cfg, "db1.example", None)  # the file and the flag replace the default
    targets.write_text("- targets: ['db8.example:3306']\n")
    os.utime(targets, ns=(1, 10**18))  # a new modification time, as a rewrite by Prometheus' tooling gives
    config.probe_connection(cfg, "db8.example:3306", None)
    with pytest.raises(config.NotAllowed):
        config.probe_connection(cfg, "db7.example:3306", None)


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
    for expected in ("unknown: unknown key", "missing.crt does not exist", "missing one of key or key_file",
                     "client_auth_type: invalid ClientAuth 'Sometimes'", "basic_auth_users.prometheus: not a bcrypt hash"):
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


@pytest.mark.slow
def test_parse_reads_standard_input_and_with_error_log_the_last_of_several_outputs():
    with open(os.path.join(FIXTURES, "innodb_status", "mariadb-10.11.19.txt"), encoding="utf-8") as f:
        one = f.read()
    second = one.replace("History list length 90", "History list length 12345")
    out = run("parse", "--error-log", "-", stdin=one + "\n" + second)
    assert out.returncode == 0
    assert "innodb_history_list_length 12345.0" in out.stdout
    assert "2 monitor outputs found" in out.stderr
    out = run("parse", "-", stdin=one + "\n" + second)  # without --error-log a file is one output
    assert out.returncode == 1 and "2 monitor output headers" in out.stderr and out.stdout == ""


@pytest.mark.slow
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


@pytest.mark.parametrize("line, value", [
    ('password = "exp-Secret-4711"   # monitoring account, rotated quarterly', "exp-Secret-4711"),
    ("password = 'a#b'  # the quotes keep the #", "a#b"),
    ("password = ab#cd", "ab"),
    ("port=26050  # tcp", "26050"),
    ('password = "say \\"hi\\""', 'say "hi"'),
    ("password = one\\stwo\\\\", "one two\\"),
    ("password = trailing\"", 'trailing"'),
    ("password = it's", "it's"),
])
def test_my_cnf_values_read_as_the_mysql_client_reads_them(tmp_path, line, value):
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f"[client]\n{line}\n")
    key = line.split("=")[0].strip()
    assert config.read_my_cnf(str(cnf))["client"][key] == value


def test_a_dsn_style_address_is_refused_without_showing_its_password():
    """An operator coming from mysqld_exporter's DATA_SOURCE_NAME may pass user:password@tcp(host:port)/."""
    for flags in (["--mysqld.address=exporter:S3cretPw@tcp(db:3306)/", "--mysqld.username=x"],
                  ["--mysqld.username=x", "--probe.allow=exporter:S3cretPw@db:3306"],
                  ["--mysqld.username=x", "--probe.allow=exporter:S3cretPw@10.0.0.0/33"]):
        _, problems = load(flags)
        text = "\n".join(problems)
        assert problems and "…@" in text, text
        assert "s3cretpw" not in text.lower(), text


def test_a_targets_file_that_is_not_a_target_list_is_named_at_start_and_kept_while_running(tmp_path, caplog):
    good, bad = "- targets: ['db7.example:3306']\n", "- targets: [db7.example:3306\n  labels: {"
    targets = tmp_path / "mysql.yml"
    targets.write_text(bad)
    _, problems = load(["--mysqld.username=x", f"--probe.targets-file={targets}"])
    assert any(str(targets) in p and "not YAML or JSON" in p for p in problems), problems
    targets.write_text(good)
    cfg, problems = load(["--mysqld.username=x", f"--probe.targets-file={targets}"])
    assert problems == []
    config.probe_connection(cfg, "db7.example:3306", None)
    # Broken by a bad edit while running: the exporter says so and keeps the last good targets.
    targets.write_text(bad)
    os.utime(targets, ns=(1, 1))
    config.probe_connection(cfg, "db7.example:3306", None)
    assert "keeping the 1 targets of its last good reading" in caplog.text
    # Removed: its targets go, as Prometheus drops them.
    targets.unlink()
    with pytest.raises(config.NotAllowed):
        config.probe_connection(cfg, "db7.example:3306", None)


@pytest.mark.slow
def test_a_capture_directory_the_exporter_cannot_make_is_named_as_such(tmp_path):
    """It was reported as 'cannot listen on ...', the flag it came from unnamed."""
    (tmp_path / "file").write_text("")
    for directory, reason in ((tmp_path / "file" / "captures", "Not a directory"),
                              ("/proc/no-such-captures", "No such file or directory")):
        out = run("--mysqld.username=x", f"--capture.dir={directory}", "--web.listen-address=127.0.0.1:1")
        assert out.returncode == 2, out.stderr
        assert f"--capture.dir {directory}: {reason}" in out.stderr and "cannot listen" not in out.stderr
    made = tmp_path / "new" / "captures"
    cfg, problems = load(["--mysqld.username=x", f"--capture.dir={made}"])
    assert problems == [] and made.is_dir() and (made.stat().st_mode & 0o777) == 0o700


def test_concurrent_probes_wait_for_the_targets_file_being_read(tmp_path, monkeypatch):
    """The stamp was kept before the file was read: a second probe meanwhile checked no rules and got 403."""
    import threading
    import time

    from innodb_exporter.scraping import addresses

    targets = tmp_path / "mysql.yml"
    targets.write_text("- targets: ['db7.example:3306']\n")
    cfg, problems = load(["--mysqld.username=x", f"--probe.targets-file={targets}"])
    assert problems == []
    read = addresses.read_target_file

    def slow(path):
        time.sleep(0.3)
        return read(path)

    monkeypatch.setattr(addresses, "read_target_file", slow)
    os.utime(targets, ns=(1, 1))  # changed since start: the next probe reads it again
    results = []

    def probe():
        try:
            config.probe_connection(cfg, "db7.example:3306", None)
            results.append(True)
        except config.NotAllowed:
            results.append(False)

    threads = [threading.Thread(target=probe) for _ in range(2)]
    threads[0].start()
    time.sleep(0.1)
    threads[1].start()
    for t in threads:
        t.join()
    assert results == [True, True]
