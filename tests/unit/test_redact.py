"""Captures without query text: statements and row values become digests; InnoDB's own lines stay."""

from __future__ import annotations

import os
import re

import pytest

from innodb_exporter.capture import redact
from innodb_exporter.parsers import innodb_status
from support.golden import FIXTURES, read_status, status_fixtures
from support.hostile import FORGED

HOSTILE = os.path.join(FIXTURES, "innodb_status_hostile")

STATEMENT_RE = re.compile(r"^(SELECT|UPDATE|INSERT(?! BUFFER AND)|DELETE|REPLACE|COMMIT)\b", re.I | re.M)


@pytest.mark.parametrize("fixture", status_fixtures())
def test_no_statement_or_row_value_survives_and_the_parse_is_the_same(fixture):
    text = read_status(fixture)
    redacted = redact.redact_status(text)
    assert STATEMENT_RE.findall(redacted) == []
    assert " hex " not in redacted and " asc " not in redacted
    before, after = innodb_status.parse(text), innodb_status.parse(redacted)
    # The deadlock's statements are their digests now; all else of it is read as before.
    for deadlock in (before.deadlock, after.deadlock) if before.deadlock else ():
        for t in deadlock.transactions:
            if deadlock is after.deadlock:
                assert re.fullmatch(r"<[0-9]+ bytes, sha256 [0-9a-f]{16}>", t.statement), t.statement
            t.statement = ""
    assert after == before  # every number the exporter reads is still there


def test_a_statement_becomes_its_digest_everywhere_it_appears():
    text = read_status("mariadb-10.2.11.txt")
    statement = "UPDATE sbtest3 SET k=k+1 WHERE id=10057"
    assert statement in text
    redacted = redact.redact_status(text)
    assert statement not in redacted and redact.digest(statement) in redacted
    assert "MySQL thread id 13, OS thread handle 140565555840704" in redacted
    assert "*** WE ROLL BACK TRANSACTION (1)" in redacted
    assert " 0: len 4; <value>;" in redacted


def test_the_foreign_key_error_keeps_no_statement():
    text = ("=====\n2026-11-23 INNODB MONITOR OUTPUT\n=====\n------------------------\nLATEST FOREIGN KEY ERROR\n"
            "------------------------\n2026-11-23 10:00:00 0x7f Transaction:\nTRANSACTION 5, ACTIVE 0 sec inserting\n"
            "INSERT INTO child VALUES (42, 'secret-value')\nForeign key constraint fails for table `t`.`child`:\n"
            "------------\nTRANSACTIONS\n------------\nTrx id counter 7\n")
    redacted = redact.redact_status(text)
    assert "secret-value" not in redacted and "Trx id counter 7" in redacted
    assert redacted.count("sha256") == 1


# --- redaction by the structure the server prints (issue 28) ----------------------------------------------

SECRET = "VICTIM_SECRET_hunter2"
LOCK_WAIT = "percona-8.0-ge30-unknown-minor-lockwait.txt"  # a waiting INSERT, its lock printed after it


def with_statement(text: str, statement: str) -> str:
    """The text as the server prints it when every thread runs ``statement``: after each thread header, cut
    at the most a server prints (redact.STATEMENT_BOUND bytes with the newline that ends it)."""
    out = []
    for line in text.split("\n"):
        out.append(line)
        if re.match(r"(MySQL|MariaDB) thread id ", line):
            out.extend(statement.encode()[:redact.STATEMENT_BOUND - 1].decode(errors="ignore").split("\n"))
    return "\n".join(out)


def test_a_statement_line_starting_with_dashes_does_not_end_the_redaction():
    """The issue's reproduction: with statements reduced to digests, the line '---' and all after it stayed."""
    text = with_statement(read_status(LOCK_WAIT),
                          f"UPDATE t SET note = 'Dear diary,\n---\nmy password is {SECRET}' WHERE id = 1")
    assert SECRET in text
    redacted = redact.redact_status(text)
    assert SECRET not in redacted and "Dear diary" not in redacted
    # InnoDB's own lines after the statement stay: the lock it waits for, the record, the next transaction.
    for kept in ("------- TRX HAS BEEN WAITING 64 SEC FOR THIS LOCK TO BE GRANTED:",
                 "RECORD LOCKS space id 5 page no 4 n bits 80 index PRIMARY of table `lock_test`.`locks` trx id 2378",
                 "MySQL thread id 168, OS thread handle 137182133081664, query id 1832 localhost root update"):
        assert kept in redacted


def placements(payload: str) -> dict[str, str]:
    """Statements holding a forged section and the secret: before it, after it, around it, alone after it."""
    return {"diary before": f"UPDATE t SET note = 'Dear diary,\n---\nmy password is {SECRET}' /*\n{payload}\n*/",
            "after": f"SELECT SLEEP(8) /*\n{payload}\n{SECRET}\n*/",
            "after the comment": f"SELECT SLEEP(8) /*\n{payload}\n*/ WHERE k = '{SECRET}'",
            "in the first line": f"UPDATE t SET v = '{SECRET}' /*\n{payload}\n*/",
            "bare": f"{payload}\n{SECRET}"}


@pytest.mark.parametrize("fixture", [f for f in status_fixtures() if "thread id " in read_status(f)])
def test_forged_sections_in_any_statement_leave_no_secret(fixture):
    real = read_status(fixture)
    for name, payload in FORGED.items():
        for place, statement in placements(payload).items():
            text = with_statement(real, statement)
            if SECRET not in text:  # cut off by the bound, as the server would cut it
                continue
            redacted = redact.redact_status(text)
            assert SECRET not in redacted, (name, place)
            assert redacted.count("MySQL thread id") + redacted.count("MariaDB thread id") == \
                real.count("MySQL thread id") + real.count("MariaDB thread id")


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(HOSTILE) if "-forged-" in f))
def test_recorded_forgeries_keep_no_comment_and_every_thread(name):
    """Live servers, an application user's statements forging sections (tests/fixtures/SOURCES.md): no line of
    a forged section survives, and every thread header and lock line the server wrote does."""
    with open(os.path.join(HOSTILE, name), encoding="utf-8", newline="") as f:
        text = f.read()
    redacted = redact.redact_status(text)
    for forged in ("attacker_was_here", "Pending normal aio reads:" + " " * 40, "666 queries inside InnoDB",
                   "History list length 99999999", "Free buffers 50000"):
        assert forged not in redacted
    server_lines = [line for line in text.split("\n") if re.match(r"(MySQL|MariaDB) thread id |RECORD LOCKS |\*\*\* ", line)]
    assert server_lines and all(line in redacted.split("\n") for line in server_lines)
    assert redact.redact_status(re.sub(r"/\*.*?\*/", "", text, flags=re.S)).count("sha256") <= redacted.count("sha256")


def test_after_the_servers_cut_mark_the_text_may_be_a_statement():
    """A list longer than 1 MiB is cut inside it: what follows the mark may be the end of a statement whose
    header was cut away."""
    real = read_status(LOCK_WAIT)
    cut = real.replace("LIST OF TRANSACTIONS FOR EACH SESSION:\n",
                       f"... truncated...\nof the statement: my password is {SECRET}\n---\n")
    assert SECRET in cut and "... truncated..." in cut
    redacted = redact.redact_status(cut)
    assert SECRET not in redacted and "---TRANSACTION 2378, ACTIVE 64 sec inserting" in redacted


def test_lines_past_the_bound_are_the_servers():
    """Past STATEMENT_BOUND bytes from its thread header no statement goes on: a line InnoDB prints there
    that the redaction does not know stays, as every line of the server's does."""
    header = "MySQL thread id 5, OS thread handle 1, query id 7 localhost root updating"
    statement = (("x" * 59 + "\n") * 60)[:redact.STATEMENT_BOUND - 1].rstrip("\n")  # as long as it gets
    text = "\n".join(["---TRANSACTION 9, ACTIVE 3 sec", header, statement, "a line of a newer server"])
    redacted = redact.redact_status(text).split("\n")
    assert redacted[-2:] == [redact.digest(statement), "a line of a newer server"]
