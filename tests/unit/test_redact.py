"""Captures without query text: statements and row values become digests; InnoDB's own lines stay."""

from __future__ import annotations

import re

import pytest

from innodb_exporter.capture import redact
from innodb_exporter.parsers import innodb_status
from support.golden import read_status, status_fixtures

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
