"""Evidence captured when a page fires (issue 13), against a real MariaDB and the real exporter: a held read
view is in the capture with its transaction id and age, a burst of webhooks gives one capture per cool-down,
an address the webhook names on its own is never reached, the store keeps within its bound, a capture keeps
within its deadline, and statements are digests unless asked for."""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request

import bcrypt
import pymysql
import pytest

from stack.native import Stack
from stack.settings import Settings
from support.exporter import ROOT, Exporter, parse_samples
from support.servers import EXPORTER_PASSWORD, EXPORTER_USER, free_port, wait_for

pytestmark = pytest.mark.integration
SECRET_STATEMENT = "SELECT SLEEP(20) AS held_for_the_capture_test"


def webhook(instance: str, alertname: str = "InnoDBHistoryListGrowing", status: str = "firing") -> bytes:
    return json.dumps({"version": "4", "status": status, "receiver": "capture", "groupLabels": {"alertname": alertname},
                       "alerts": [{"status": status, "startsAt": "2026-11-23T12:00:00Z",
                                   "labels": {"alertname": alertname, "instance": instance, "job": "innodb",
                                              "severity": "warning"}}]}).encode()


def post(exp: Exporter, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(exp.url + "/capture", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, {"error": exc.read().decode()}


def captures(exp: Exporter) -> list[dict]:
    return json.loads(exp.get("/api/captures")[1])["captures"]


def capture_file(exp: Exporter, capture: dict, name: str) -> str:
    status, body = exp.get(f"/captures/{capture['id']}/{name}")
    assert status == 200, body
    return body


@pytest.fixture
def held_read_view(fresh_db):
    """A transaction holding a read view (what holds purge back) that has written, so it has an id of its own,
    and a statement to find."""
    fresh_db.sql("CREATE DATABASE IF NOT EXISTS captest")
    fresh_db.sql("CREATE TABLE IF NOT EXISTS captest.t (i INT) ENGINE=InnoDB")
    conn = pymysql.connect(unix_socket=fresh_db.socket, user="root", password=fresh_db.root_password, autocommit=False)
    with conn.cursor() as cur:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("INSERT INTO captest.t VALUES (1)")
        cur.execute("SELECT trx_id FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()")
        trx_id = str(cur.fetchone()[0])
        thread_id = conn.thread_id()

    def run():  # busy inside its transaction until KILL QUERY ends the statement
        try:
            with conn.cursor() as cur:
                cur.execute(SECRET_STATEMENT)
        except pymysql.err.MySQLError:  # interrupted, as the teardown means it to be
            pass

    running = threading.Thread(target=run)
    running.start()
    wait_for(lambda: fresh_db.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = %s",
                                  (SECRET_STATEMENT,))[0][0] == 1, 10, what="the statement running")
    yield trx_id
    fresh_db.sql(f"KILL QUERY {thread_id}")
    running.join(30)
    conn.rollback()
    conn.close()


def test_the_capture_holds_the_transaction_that_holds_purge_back(fresh_db, held_read_view, tmp_path):
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD, f"--capture.dir={tmp_path}",
                  "--capture.snapshots=2", "--capture.interval=1") as exp:
        exp.scrape()
        time.sleep(2)  # the transaction's age
        status, answer = post(exp, webhook(fresh_db.address))
        assert status == 202 and [s["instance"] for s in answer["started"]] == [fresh_db.address]
        wait_for(lambda: captures(exp), 30, what="the capture")
        [capture] = captures(exp)
        assert capture["alerts"][0]["labels"]["alertname"] == "InnoDBHistoryListGrowing"
        assert [len(s["files"]) for s in capture["snapshots"]] == [5, 5]  # status, mutex, trx, processlist, latches
        trx = capture_file(exp, capture, "2-innodb-trx.tsv").splitlines()
        header, rows = trx[0].split("\t"), [line.split("\t") for line in trx[1:]]
        held = [dict(zip(header, row)) for row in rows if row[0] == held_read_view]
        assert held and int(held[0]["age_seconds"]) >= 2
        assert SECRET_STATEMENT not in "\n".join(trx)
        assert held[0]["query"].startswith(f"<{len(SECRET_STATEMENT)} bytes, sha256 ")
        status_text = capture_file(exp, capture, "1-engine-innodb-status.txt")
        assert "TRANSACTIONS" in status_text and SECRET_STATEMENT not in status_text
        assert "held_for_the_capture_test" not in capture_file(exp, capture, "1-processlist.tsv")
        samples = parse_samples(exp.get("/metrics")[1])
        assert samples.value("innodb_exporter_captures_total") == 1
        assert abs(samples.value("innodb_exporter_last_capture_timestamp_seconds") - time.time()) < 60
        with open(os.path.join(ROOT, "docs", "metrics.md"), encoding="utf-8") as f:
            reference = f.read()
        ours = {name for name, _ in samples if name.startswith("innodb_") and not name.startswith("innodb_metrics_")}
        assert {name for name in ours if f"`{name}" not in reference} == set(), "undocumented"
        assert "held_for" not in exp.log()


def test_statements_are_kept_when_the_operator_asks(fresh_db, held_read_view, tmp_path):
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD, f"--capture.dir={tmp_path}",
                  "--capture.snapshots=1", "--capture.query-text") as exp:
        exp.scrape()
        assert post(exp, webhook(fresh_db.address))[0] == 202
        wait_for(lambda: captures(exp), 30, what="the capture")
        [capture] = captures(exp)
        assert SECRET_STATEMENT in capture_file(exp, capture, "1-innodb-trx.tsv")


def test_a_burst_of_webhooks_gives_one_capture_per_cooldown(fresh_db, tmp_path):
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD, f"--capture.dir={tmp_path}",
                  "--capture.snapshots=1", "--capture.cooldown=600") as exp:
        exp.scrape()
        answers = [post(exp, webhook(fresh_db.address, alertname=f"InnoDBAlert{i % 3}"))[1] for i in range(20)]
        assert sum(len(a["started"]) for a in answers) == 1
        assert sum(len(a["cooling_down"]) for a in answers) == 19
        wait_for(lambda: captures(exp), 30, what="the capture")
        time.sleep(1)
        assert len(captures(exp)) == 1


def test_alerts_that_arrive_during_the_cooldown_are_captured_when_it_ends(fresh_db, tmp_path):
    """Alertmanager does not send an alert again: one that came while its server was cooling down would
    otherwise have no capture at all."""
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD, f"--capture.dir={tmp_path}",
                  "--capture.snapshots=1", "--capture.cooldown=3") as exp:
        exp.scrape()
        assert len(post(exp, webhook(fresh_db.address, alertname="InnoDBCheckpointAgeHigh"))[1]["started"]) == 1
        later = ("InnoDBHistoryListGrowing", "InnoDBFreePageWaits")
        answers = [post(exp, webhook(fresh_db.address, alertname=name))[1] for name in later]
        assert [len(a["started"]) for a in answers] == [0, 0] and [len(a["cooling_down"]) for a in answers] == [1, 1]
        wait_for(lambda: len(captures(exp)) == 2, 30, what="the capture at the end of the cooldown")
        newest, first = captures(exp)
        assert {a["labels"]["alertname"] for a in first["alerts"]} == {"InnoDBCheckpointAgeHigh"}
        assert {a["labels"]["alertname"] for a in newest["alerts"]} == set(later)
        assert newest["started"] >= answers[0]["cooling_down"][0]["until"] and newest["snapshots"]
        time.sleep(4)
        assert len(captures(exp)) == 2  # the deferred alerts were captured once


def test_an_address_the_webhook_names_on_its_own_is_never_reached(fresh_db, tmp_path):
    listener_port = fresh_db.port + 1  # nothing of ours listens there; a connection attempt would be refused
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD, f"--capture.dir={tmp_path}") as exp:
        exp.scrape()
        status, answer = post(exp, webhook(f"127.0.0.1:{listener_port}"))
        assert status == 202 and answer["started"] == []
        assert answer["refused"][0]["instance"] == f"127.0.0.1:{listener_port}"
        assert "not a server this exporter scrapes" in answer["refused"][0]["reason"]
        assert post(exp, b"not json")[0] == 400
        assert post(exp, json.dumps({"alerts": [{"labels": "x"}]}).encode())[0] == 400
        time.sleep(1)
        assert captures(exp) == [] and os.listdir(tmp_path) == []
        assert "capture refused" in exp.log()


def test_the_store_never_grows_past_its_bound(fresh_db, tmp_path):
    bound = 40 * 1024  # room for a few captures of an idle server (about 8 KiB each)
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD, f"--capture.dir={tmp_path}",
                  "--capture.snapshots=1", "--capture.cooldown=0.5", f"--capture.max-size={bound}") as exp:
        exp.scrape()
        seen = set()
        for _ in range(12):
            post(exp, webhook(fresh_db.address))
            time.sleep(0.8)
            used = sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(tmp_path) for f in files)
            assert used <= bound, used
            seen |= {c["id"] for c in captures(exp)}
        kept = captures(exp)
        assert len(seen) > len(kept) >= 1  # the oldest went first
        assert max(c["id"] for c in kept) == max(seen)


def test_a_capture_of_a_hung_server_ends_by_its_deadline(fresh_db, tmp_path):
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD, f"--capture.dir={tmp_path}",
                  "--capture.deadline=3", "--capture.snapshots=5", "--capture.interval=0.5") as exp:
        exp.scrape()
        fresh_db.pause()
        try:
            assert post(exp, webhook(fresh_db.address))[0] == 202
            # It ends while the server is still paused: by its deadline, not by the server answering.
            wait_for(lambda: captures(exp), 60, what="the capture to end")
        finally:
            fresh_db.resume()
        [capture] = captures(exp)
        assert capture["errors"], capture


def test_alertmanager_posts_the_webhook_as_the_stacks_user_when_the_web_config_has_users(fresh_db, tmp_path):
    """With users in the exporter's web config the webhook answered Alertmanager 401: the native stack gave it
    no credentials. Now it gives the stack's own user, its password in a file under .stack/secrets."""
    web = tmp_path / "web.yml"
    web.write_text(f"basic_auth_users:\n  prometheus: {bcrypt.hashpw(b'operator-pw', bcrypt.gensalt(4)).decode()}\n")
    settings = Settings(root=str(tmp_path / ".stack"), web_config=str(web), mysql_address=fresh_db.address,
                        exporter_flags=("--capture.snapshots=1",))
    settings.ports.update(innodb_exporter=free_port(), alertmanager=free_port())
    stack = Stack(settings)
    web_config, stack.web_password_file = stack.exporter_web_config()
    cnf = stack._exporter_cnfs(EXPORTER_USER, EXPORTER_PASSWORD)["innodb_exporter"]
    targets = tmp_path / "mysql.yml"
    targets.write_text(f"- targets: ['{fresh_db.address}']\n")
    exporter, alertmanager = stack.services["innodb_exporter"], stack.services["alertmanager"]
    exporter.start(stack.exporter_command(cnf, str(targets), web_config),
                   env=dict(stack.env, PYTHONPATH=os.path.join(ROOT, "exporters")))
    try:
        url, login = settings.url("innodb_exporter"), stack._exporter_auth()

        def get(path: str, headers=None) -> tuple[int, str]:
            request = urllib.request.Request(url + path, headers=headers or {})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read().decode()

        wait_for(lambda: get("/-/healthy", login)[0] == 200, 30, what=f"the exporter (log {exporter.log_path})")
        assert get("/api/captures")[0] == 401
        request = urllib.request.Request(url + "/capture", data=webhook(fresh_db.address), method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401
        stack._start_alertmanager()
        am = settings.url("alertmanager")
        wait_for(lambda: urllib.request.urlopen(am + "/-/ready", timeout=2).status == 200, 30, what="alertmanager")
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        alert = [{"labels": {"alertname": "InnoDBHistoryListGrowing", "severity": "warning", "job": "innodb",
                             "instance": fresh_db.address}, "startsAt": now}]
        urllib.request.urlopen(urllib.request.Request(am + "/api/v2/alerts", json.dumps(alert).encode(),
                                                      {"Content-Type": "application/json"}), timeout=5).read()
        wait_for(lambda: json.loads(get("/api/captures", login)[1])["captures"], 90,
                 what=f"Alertmanager's webhook to capture (logs {exporter.log_path}, {alertmanager.log_path})")
        [capture] = json.loads(get("/api/captures", login)[1])["captures"]
        assert capture["alerts"][0]["labels"]["alertname"] == "InnoDBHistoryListGrowing"
        with open(stack.web_password_file) as f:
            password = f.read().strip()
        pid = alertmanager.pid()
        for what in ("cmdline", "environ"):
            with open(f"/proc/{pid}/{what}", "rb") as f:
                assert password.encode() not in f.read(), what
    finally:
        alertmanager.stop(timeout=10)
        exporter.stop(timeout=10)
