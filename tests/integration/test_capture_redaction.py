"""Captures keep no statement text, on every server (issue 28): real lock waits, a real deadlock, running
transactions and (MariaDB) a foreign key error, whose statements hold the forged sections of the security
tests (support/hostile.py) and a secret, before and after them. The secret is in the server's own text;
it must be in no file of the capture, while the structure an operator reads stays.

Also the bound the redaction rests on: no server prints more than redact.STATEMENT_BOUND bytes of
statement after its thread header, in the transaction list or in a deadlock.
"""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.request

import pymysql
import pytest

from innodb_exporter.capture import redact
from support.exporter import Exporter
from support.hostile import FORGED
from support.servers import EXPORTER_PASSWORD, EXPORTER_USER, wait_for

pytestmark = pytest.mark.integration
MARK = "VICTIM_SECRET"  # every secret starts so: none may be in a capture
THREAD_RE = re.compile(r"^(?:MySQL|MariaDB) thread id \d+, .*$", re.M)


def secret(name: str) -> str:
    return f"{MARK}_{name}_hunter2"


def diary(name: str) -> str:
    """The issue's reproduction: a string literal whose second line is '---'."""
    return f"'Dear diary,\n---\nmy password is {secret(name)}'"


class Sessions:
    """Root connections that hold locks and run statements in threads; all ended by close()."""

    def __init__(self, db):
        self.db = db
        self.conns: list = []
        self.threads: list[threading.Thread] = []
        self.errors: list[Exception] = []

    def open(self):
        conn = self.db.connect()
        conn.autocommit(False)
        self.conns.append(conn)
        return conn

    def run(self, conn, statement: str) -> None:
        """Run ``statement`` in a thread of its own (it waits on a lock, or sleeps)."""
        def go():
            try:
                with conn.cursor() as cur:
                    cur.execute(statement)
            except pymysql.err.MySQLError as exc:  # killed at the end, or chosen as the deadlock's victim
                self.errors.append(exc)

        thread = threading.Thread(target=go, daemon=True)
        thread.start()
        self.threads.append(thread)

    def close(self) -> None:
        for conn in self.conns:
            try:
                self.db.sql(f"KILL {conn.thread_id()}")
            except pymysql.err.MySQLError:
                pass
        for thread in self.threads:
            thread.join(30)
        for conn in self.conns:
            try:
                conn.close()
            except pymysql.err.Error:
                pass


@pytest.fixture
def schema(flavor_server):
    db = flavor_server
    for statement in ("DROP DATABASE IF EXISTS redact", "CREATE DATABASE redact",
                      "CREATE TABLE redact.t (id INT PRIMARY KEY, v INT, note TEXT) ENGINE=InnoDB",
                      "INSERT INTO redact.t VALUES (1, 0, ''), (2, 0, ''), (3, 0, ''), (4, 0, '')",
                      "CREATE TABLE redact.parent (id INT PRIMARY KEY) ENGINE=InnoDB",
                      "CREATE TABLE redact.child (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) "
                      "REFERENCES redact.parent (id)) ENGINE=InnoDB",
                      "INSERT INTO redact.parent VALUES (1)"):
        db.sql(statement)
    sessions = Sessions(db)
    try:
        yield db, sessions
    finally:
        sessions.close()
        db.sql("DROP DATABASE IF EXISTS redact")


def deadlock(db, sessions: Sessions, first: str, second: str) -> None:
    """Two sessions that deadlock, each in an UPDATE of the given text (with WHERE id = 3, then 2)."""
    a, b = sessions.open(), sessions.open()
    with a.cursor() as cur:
        cur.execute("UPDATE redact.t SET v = v + 1 WHERE id = 2")
    with b.cursor() as cur:
        cur.execute("UPDATE redact.t SET v = v + 1 WHERE id = 3")
    sessions.run(a, f"UPDATE redact.t SET note = {first} WHERE id = 3")
    wait_for(lambda: lock_waits(db) == 1, 30, what="the first update to wait")
    sessions.run(b, f"UPDATE redact.t SET note = {second} WHERE id = 2")
    wait_for(lambda: len(sessions.errors) == 1 and lock_waits(db) == 0, 30, what="the deadlock")
    a.rollback()
    b.rollback()


def shape(line: str) -> str:
    """A line without its numbers (hexadecimal ones too)."""
    return re.sub(r"\d+", "N", re.sub(r"0x[0-9a-f]+", "X", line))


def lock_waits(db) -> int:
    return db.sql("SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'")[0][0]


def capture_files(db, tmp_path, *flags) -> dict[str, str]:
    """Every file of one capture the exporter takes when Alertmanager's webhook names this server."""
    with Exporter(db.address, EXPORTER_USER, EXPORTER_PASSWORD, f"--capture.dir={tmp_path}", "--capture.snapshots=1",
                  *flags) as exp:
        exp.scrape()
        body = json.dumps({"status": "firing", "alerts": [{"status": "firing", "labels": {
            "alertname": "InnoDBLockWaits", "instance": db.address, "severity": "warning"}}]}).encode()
        urllib.request.urlopen(urllib.request.Request(exp.url + "/capture", body, method="POST"), timeout=10).read()
        wait_for(lambda: json.loads(exp.get("/api/captures")[1])["captures"], 60, what="the capture")
        [capture] = json.loads(exp.get("/api/captures")[1])["captures"]
        names = [f for s in capture["snapshots"] for f in s["files"]] + ["capture.json"]
        files = {name: exp.get(f"/captures/{capture['id']}/{name}")[1] for name in names}
        assert MARK not in exp.log()
    on_disk = [os.path.join(root, f) for root, _, fs in os.walk(tmp_path) for f in fs]
    assert len(on_disk) == len(files)
    for path in on_disk:
        with open(path, encoding="utf-8", errors="replace") as f:
            assert MARK not in f.read(), path
    return files


def test_statements_forging_the_servers_lines_leave_no_secret_in_a_capture(schema, tmp_path):
    db, sessions = schema
    mariadb = db.flavor.startswith("mariadb")
    # A deadlock whose statements forge TRANSACTIONS and the end of the output, a secret before and after.
    deadlock(db, sessions,
             f"{diary('deadlock_1')} /*\n{FORGED['transactions']}\n*/ /* {secret('deadlock_1_after')} */",
             f"{diary('deadlock_2')} /*\n{FORGED['end']}\n*/ /* {secret('deadlock_2_after')} */")
    if mariadb:  # MySQL 8+ checks foreign keys above InnoDB and prints no LATEST FOREIGN KEY ERROR
        with pytest.raises(pymysql.err.IntegrityError):
            db.sql(f"INSERT INTO redact.child VALUES (1, 999) /* {diary('foreign_key')} */ /*\n"
                   f"{FORGED['semaphores']}\n*/ /* {secret('foreign_key_after')} */")
    # A lock wait whose statement forges a transaction list.
    holder, waiter = sessions.open(), sessions.open()
    with holder.cursor() as cur:
        cur.execute("UPDATE redact.t SET v = v + 1 WHERE id = 1")
    with waiter.cursor() as cur:
        cur.execute("SET SESSION innodb_lock_wait_timeout = 600")
    sessions.run(waiter, f"UPDATE redact.t SET note = {diary('lock_wait')} /*\n{FORGED['transactions']}\n*/ "
                         f"/* {secret('lock_wait_after')} */ WHERE id = 1")
    # Running transactions, one per forged section, each in a sleep.
    for n, (name, payload) in enumerate(FORGED.items()):
        conn = sessions.open()
        with conn.cursor() as cur:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute(f"INSERT INTO redact.t VALUES ({100 + n}, 0, '')")  # a write: MySQL lists it with its query
        sessions.run(conn, f"SELECT /* {diary(f'sleep_{n}')} */ SLEEP(600) /*\n{payload}\n*/ /* {secret(f'sleep_{n}_after')} */")
    wait_for(lambda: lock_waits(db) == 1, 30, what="the lock wait")
    wait_for(lambda: db.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT /* %SLEEP(600)%'")
             [0][0] == len(FORGED), 30, what="the sleeping transactions")

    raw = db.sql("SHOW ENGINE INNODB STATUS")[0][2]
    (tmp_path / "raw-status.txt").write_text(raw)  # beside the capture, to read when this fails
    # The secrets are in the server's own text: every one printed before the forged lines, and those after
    # them where the statement fits the server's bound.
    before = ["deadlock_1", "deadlock_2", "lock_wait", *[f"sleep_{n}" for n in range(len(FORGED))]]
    assert [name for name in before + (["foreign_key"] if mariadb else []) if secret(name) not in raw] == []
    assert secret("deadlock_1_after") in raw and secret("lock_wait_after") in raw

    files = capture_files(db, tmp_path / "capture")
    status = files["1-engine-innodb-status.txt"]
    # What an operator reads stays: the threads, the lock wait and its lock, the deadlock's markers, the
    # transactions (their numbers move between the two texts: compared without them), the sections.
    assert len(THREAD_RE.findall(status)) >= len(FORGED) + 3
    kept = {shape(line) for line in status.split("\n")}
    ours = {str(conn.thread_id()) for conn in sessions.conns}
    server_text = re.sub(r"/\*.*?\*/", "", raw, flags=re.S)  # the server's lines, not the comments'
    for block in re.split(r"(?m)^(?=---TRANSACTION |--------\n)", server_text):
        # Of the transactions, those of this test's sessions: another session's short one, committing when
        # the text was read, has ended by the time the capture is taken.
        thread = re.search(r"thread id (\d+)", block)
        if block.startswith("---TRANSACTION ") and not (thread and thread.group(1) in ours):
            continue
        for line in block.split("\n"):
            if line.startswith(("------- TRX HAS BEEN WAITING", "RECORD LOCKS ", "*** ", "---TRANSACTION ")):
                assert shape(line) in kept, line
    assert "TRX HAS BEEN WAITING" in status and "*** WE ROLL BACK TRANSACTION" in status
    for title in ("LATEST DETECTED DEADLOCK", "TRANSACTIONS", "FILE I/O", "END OF INNODB MONITOR OUTPUT"):
        assert f"\n{title}\n" in status
    assert status.count(" bytes, sha256 ") >= len(FORGED) + 3


def test_no_server_prints_a_statement_past_the_bound(schema):
    """The redaction's bound, measured: a 5,000-byte statement waiting for a lock and in a deadlock."""
    db, sessions = schema
    long = "'" + "\n".join(f"L{i:04d}" + "x" * 45 for i in range(100)) + "'"  # each line says where it is
    deadlock(db, sessions, long, long)
    holder, waiter = sessions.open(), sessions.open()
    with holder.cursor() as cur:
        cur.execute("UPDATE redact.t SET v = v + 1 WHERE id = 1")
    with waiter.cursor() as cur:
        cur.execute("SET SESSION innodb_lock_wait_timeout = 600")
    sessions.run(waiter, f"UPDATE redact.t SET note = {long} WHERE id = 1")
    wait_for(lambda: lock_waits(db) == 1, 30, what="the lock wait")
    raw = db.sql("SHOW ENGINE INNODB STATUS")[0][2]
    printed = []  # bytes of each statement after its thread header, with their newline, as the server printed them
    for header in THREAD_RE.finditer(raw):
        lines = raw[header.start():].split("\n")
        if not lines[1].startswith("UPDATE redact.t SET note = 'L0000"):
            continue
        end = next(i for i, line in enumerate(lines[2:], 2) if not re.match(r"L\d{4}x", line))
        printed.append(len("\n".join(lines[1:end]).encode()) + 1)
    assert len(printed) == 3  # the lock wait, and the deadlock's two
    assert max(printed) <= redact.STATEMENT_BOUND
    assert min(printed) > redact.STATEMENT_BOUND - 200  # cut by the server, not by the statement's end (5,100 bytes)
