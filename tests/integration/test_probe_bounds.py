"""/probe against a real MariaDB (issue 9, findings 2 and 3): every spelling of the server is one connection,
the exporter's connections stay within their bounds whatever callers ask, the account's MAX_USER_CONNECTIONS
cannot be used up by /probe, and a server the configuration does not name is never connected to."""

from __future__ import annotations

import socket
import threading

import pytest

from support.exporter import Exporter, parse_samples
from support.servers import EXPORTER_PASSWORD, EXPORTER_USER

pytestmark = pytest.mark.integration


def spellings(port: int) -> list[str]:
    """500 ways of writing 127.0.0.1:PORT that the C library reads as that address."""
    hosts = ["127.0.0.1", "127.1", "127.0.1", "0x7f.1", "0177.0.0.1", "127.000.000.001", "2130706433", "0x7f000001",
             "127.0.0.01", "0x7F.0x0.0x0.0x1"]
    ports = [str(port), f"0{port}", f"00{port}", f"000{port}", f"0000{port}"]
    out = [f"{h}:{p}" for h in hosts for p in ports]
    return (out * (500 // len(out) + 1))[:500]


def exporter_sessions(db) -> int:
    return db.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s", (EXPORTER_USER,))[0][0]


def test_five_hundred_spellings_are_one_connection(fresh_db):
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exp:
        for target in spellings(fresh_db.port):
            status, body = exp.get(f"/probe?target={target}", timeout_header=5)
            assert status == 200 and "innodb_up 1.0" in body, (target, status, body[:200])
        assert exporter_sessions(fresh_db) == 1


def test_max_user_connections_cannot_be_used_up_through_probe(fresh_db):
    fresh_db.sql(f"ALTER USER '{EXPORTER_USER}'@'%' WITH MAX_USER_CONNECTIONS 3")
    fresh_db.sql(f"ALTER USER '{EXPORTER_USER}'@'localhost' WITH MAX_USER_CONNECTIONS 3")
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD, "--probe.allow=127.0.0.0/8") as exp:
        threads = [threading.Thread(target=exp.get, args=(f"/probe?target={t}",)) for t in spellings(fresh_db.port)[:170]]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert exporter_sessions(fresh_db) <= 2  # --probe.max-connections-per-server
        samples = parse_samples(exp.get("/metrics")[1])
        assert samples.value("innodb_up") == 1  # the exporter's own server stays up


def test_a_server_the_configuration_does_not_name_is_never_connected_to(fresh_db):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(2)
    port = listener.getsockname()[1]
    try:
        with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exp:
            status, body = exp.get(f"/probe?target=127.0.0.1:{port}")
            assert status == 403 and "not allowed" in body
            with pytest.raises(socket.timeout):
                listener.accept()  # nobody came
    finally:
        listener.close()
