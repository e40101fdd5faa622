"""``innodb-replay record`` against the real exporter behind basic auth (issue 9, finding 6): credentials
in a target's URL are used, and never printed nor stored; a target no scrape reached fails the command."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import urllib.parse
import zipfile

import bcrypt
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from innodb_bundle.bundle import BundleReader
from innodb_replay.endpoints import Endpoint, EndpointError
from support.exporter import ROOT, exporter_command
from support.servers import free_port, wait_for

USER = "prometheus"
PASSWORD = "s3cret:p@ss/wörd%"  # every character a URL must escape, and one outside Latin-1


@pytest.fixture(scope="module")
def exporter(tmp_path_factory):
    """The real exporter with basic auth (--web.config.file) and no server: /metrics has its own metrics."""
    tmp = tmp_path_factory.mktemp("exporter")
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    (tmp / "web.yml").write_text(f"basic_auth_users:\n  {USER}: '{hashed}'\n")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    proc = subprocess.Popen([*exporter_command(), f"--web.listen-address=127.0.0.1:{port}",
                             f"--web.config.file={tmp / 'web.yml'}", "--config.my-cnf=/dev/null"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"127.0.0.1:{port}/metrics"
    try:
        wait_for(lambda: _status(f"http://{url}") == 401, 20, what="the exporter with basic auth")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def _status(url: str) -> int:
    try:
        Endpoint.parse(url).get(5, 1 << 20)
        return 200
    except EndpointError as exc:
        return int(str(exc).split()[1]) if str(exc).startswith("HTTP ") else 0


def record(tmp_path, *targets: str, extra=()) -> tuple[subprocess.CompletedProcess, str]:
    out = str(tmp_path / "recorded.zip")
    command = [sys.executable, "-m", "innodb_replay.cli", "record", *(f"--target={t}" for t in targets),
               "--instance=db1:3306", "--interval=0.5", "--duration=2", f"--out={out}", *extra]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env), out


def no_secret_in(*texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text and urllib.parse.quote(PASSWORD, safe="") not in text
        assert f"{USER}:" not in text and f"{USER}@" not in text, text


def up_values(bundle: str) -> dict[str, list[float]]:
    values: dict[str, list[float]] = {}
    with BundleReader(bundle) as reader:
        for chunk in reader.manifest.chunks:
            text = reader.chunk(chunk.name).decode()
            for family in text_string_to_metric_families(text):
                for s in family.samples:
                    if s.name == "up":
                        values.setdefault(s.labels["job"], []).append(s.value)
    return values


@pytest.mark.slow
def test_credentials_in_the_url_are_used_and_never_kept(tmp_path, exporter):
    secret = urllib.parse.quote(PASSWORD, safe="")
    proc, bundle = record(tmp_path, f"innodb=http://{USER}:{secret}@{exporter}")
    assert proc.returncode == 0, proc.stderr
    no_secret_in(proc.stdout, proc.stderr)
    with zipfile.ZipFile(bundle) as z:
        no_secret_in(z.read("manifest.json").decode())
    with BundleReader(bundle) as reader:
        assert reader.manifest.source == [f"innodb=http://{exporter}"]
    up = up_values(bundle)["innodb"]
    assert len(up) >= 3 and set(up) == {1.0}, up
    with open(bundle, "rb") as f:
        assert PASSWORD.encode() not in f.read()


@pytest.mark.slow
def test_a_password_file_keeps_the_password_off_the_command_line(tmp_path, exporter):
    password_file = tmp_path / "password"
    password_file.write_text(PASSWORD + "\n")
    proc, bundle = record(tmp_path, f"innodb=http://{USER}@{exporter}",
                          extra=[f"--target-password-file={password_file}"])
    assert proc.returncode == 0, proc.stderr
    no_secret_in(proc.stdout, proc.stderr)
    assert set(up_values(bundle)["innodb"]) == {1.0}


@pytest.mark.slow
def test_a_target_no_scrape_reached_fails_without_a_secret_in_the_message(tmp_path, exporter):
    wrong = urllib.parse.quote(PASSWORD + "-wrong", safe="")
    proc, bundle = record(tmp_path, f"innodb=http://{USER}:{wrong}@{exporter}")
    assert proc.returncode == 1 and "no scrape of any target succeeded" in proc.stderr, proc.stderr
    assert "HTTP 401" in proc.stderr and "nothing written" in proc.stderr
    assert "-wrong" not in proc.stdout + proc.stderr
    no_secret_in(proc.stdout, proc.stderr)
    assert not os.path.exists(bundle) and not os.path.exists(bundle + ".partial")
    # One target answers, another never does: the bundle keeps what was recorded, the command fails.
    closed = f"127.0.0.1:{free_port()}"
    proc, bundle = record(tmp_path, f"innodb=http://{USER}:{urllib.parse.quote(PASSWORD, safe='')}@{exporter}",
                          f"node=http://{USER}:{wrong}@{closed}/metrics")
    assert proc.returncode == 1 and "every scrape of node failed" in proc.stderr, proc.stderr
    no_secret_in(proc.stdout, proc.stderr)
    up = up_values(bundle)
    assert set(up["innodb"]) == {1.0} and set(up["node"]) == {0.0}


def test_a_user_without_a_password_is_a_clear_error(tmp_path, exporter):
    proc, _ = record(tmp_path, f"innodb=http://{USER}@{exporter}")
    assert proc.returncode == 1 and "--target-password-file" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("url", ["http://u:pw-secret@host:notaport/metrics", "ftp://u:pw-secret@host/x",
                                 "http://u:pw-secret@/metrics",
                                 # a '/' in the password ends the authority where a URL parser looks
                                 "http://admin:pw/secret@127.0.0.1:19999/metrics",
                                 "http://admin:9090/pw-secret@127.0.0.1:19999",
                                 "http://admin:12?pw-secret@127.0.0.1:9207/metrics",
                                 "http://admin:12#pw-secret@127.0.0.1:9207/metrics"])
def test_a_bad_url_is_refused_without_its_password(url):
    with pytest.raises(EndpointError) as error:
        Endpoint.parse(url)
    assert "pw-secret" not in str(error.value) and "secret" not in str(error.value)


@pytest.mark.slow
def test_credentials_never_follow_a_redirect():
    """urllib would send the Authorization header on to wherever a redirect points."""
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.server.server_port, self.headers.get("Authorization")))
            if self.path == "/metrics":
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{other.server_port}/stolen")
                self.end_headers()
            else:
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"up 1\n")

        def log_message(self, *args):
            pass

    first, other = (http.server.HTTPServer(("127.0.0.1", 0), Handler) for _ in range(2))
    for server in (first, other):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = Endpoint.parse(f"http://user:pw@127.0.0.1:{first.server_port}/metrics")
        with pytest.raises(EndpointError, match="redirect, which is not followed"):
            endpoint.get(5, 1 << 20)
    finally:
        for server in (first, other):
            server.shutdown()
    assert [port for port, _ in seen] == [first.server_port] and seen[0][1].startswith("Basic ")
