"""The test servers themselves: every flavour in both configurations starts, is the server it claims to
be, is configured as its configuration says, takes sysbench load, and lets the exporter's account in
over TCP. The exporter's tests rely on each of these."""

from __future__ import annotations

import os
import time

import pymysql
import pytest

from innodb_exporter.metrics.model import NEEDED_COUNTERS
from support.servers import EXPORTER_PASSWORD, EXPORTER_USER, wait_for

pytestmark = pytest.mark.integration

REDO_BYTES = {"mariadb": "innodb_log_file_size", "mysql": "innodb_redo_log_capacity"}
TUNED_REDO = 32 * 1024 * 1024


def _metrics(db) -> dict[str, bool]:
    """INNODB_METRICS: counter name -> enabled (MariaDB has an ENABLED column, MySQL a STATUS column)."""
    column = "STATUS" if db.family == "mysql" else "ENABLED"
    return {name: state in ("enabled", 1) for name, state in
            db.sql(f"SELECT NAME, {column} FROM information_schema.INNODB_METRICS")}


def _status(db, name: str) -> int:
    return int(db.sql("SHOW GLOBAL STATUS LIKE %s", (name,))[0][1])


def test_it_is_the_flavour_and_version_it_claims(flavor_server):
    db = flavor_server
    version, comment = db.sql("SELECT VERSION(), @@version_comment")[0]
    family, number = db.flavor.split("-")
    assert db.version.startswith(number + "."), (db.flavor, version)
    assert ("MariaDB" in version) == (family == "mariadb") == (db.family == "mariadb"), (version, comment)
    # The very build Debian packages: the package's upstream version is the server's.
    assert db.package_version().split(":")[-1].startswith(db.version), (db.package_version(), version)
    assert "Debian" in comment or "deb" in version, (version, comment)


def test_configuration_is_what_its_name_says(flavor_server):
    db = flavor_server
    tuned = db.config == "tuned"
    performance_schema = db.sql("SELECT @@performance_schema")[0][0]
    # Stock: MariaDB leaves performance_schema off, MySQL turns it on.
    assert performance_schema == (1 if tuned or db.family == "mysql" else 0)
    latches = db.sql("SELECT ENABLED, TIMED, COUNT(*) FROM performance_schema.setup_instruments "
                     "WHERE NAME LIKE 'wait/synch/%%/innodb/%%' GROUP BY ENABLED, TIMED")
    if tuned:
        assert [(enabled, timed) for enabled, timed, _ in latches] == [("YES", "YES")], latches
        assert latches[0][2] > 20, latches
    else:
        assert all(enabled == "NO" for enabled, _, _ in latches), latches

    counters = _metrics(db)
    used = [name for name in NEEDED_COUNTERS if name in counters]
    assert len(used) > 20, sorted(counters)
    off = [name for name in used if not counters[name]]
    if tuned:
        assert off == [], f"counters the exporter uses left disabled: {off}"
    else:
        assert "log_lsn_checkpoint_age" in off, "a stock server has the LSN counters off"

    redo = int(db.sql(f"SELECT @@{REDO_BYTES[db.family]}")[0][0])
    assert (redo == TUNED_REDO) == tuned, redo
    assert int(db.sql("SELECT @@innodb_buffer_pool_size")[0][0]) == 128 * 1024 * 1024


def test_it_takes_sysbench_load(loaded_flavor_server):
    db = loaded_flavor_server
    before = (_status(db, "Com_commit"), _status(db, "Com_update"))
    time.sleep(3)
    after = (_status(db, "Com_commit"), _status(db, "Com_update"))
    assert after[0] - before[0] > 30 and after[1] - before[1] > 30, (before, after)
    assert int(db.sql("SELECT COUNT(*) FROM sbtest.sbtest1")[0][0]) > 0


def test_the_exporters_account_logs_in_over_tcp(flavor_server):
    db = flavor_server
    db.sql("FLUSH PRIVILEGES")  # empties MySQL's caching_sha2_password cache: the full authentication runs
    with db.connect_tcp(EXPORTER_USER, EXPORTER_PASSWORD) as conn, conn.cursor() as cur:
        cur.execute("SELECT CURRENT_USER(), @@port")
        user, port = cur.fetchone()
        assert (user.split("@")[0], port) == (EXPORTER_USER, db.port)
        cur.execute("SHOW ENGINE INNODB STATUS")  # needs PROCESS
        assert "BUFFER POOL AND MEMORY" in cur.fetchone()[2]
        cur.execute("SELECT COUNT(*) FROM performance_schema.global_status")  # SELECT on performance_schema
        assert cur.fetchone()[0] >= 0
    with pytest.raises(pymysql.err.OperationalError) as refused:
        db.connect_tcp(EXPORTER_USER, "not-" + EXPORTER_PASSWORD)
    assert refused.value.args[0] == 1045


@pytest.mark.parametrize("fresh_flavor_server", [(flavor, "stock") for flavor in ("mariadb-10.11", "mariadb-11.8",
                                                                                  "mysql-9")],
                         ids=["mariadb-10.11", "mariadb-11.8", "mysql-9"], indirect=True)
def test_pause_kill_and_restart_act_on_the_server_itself(fresh_flavor_server):
    db = fresh_flavor_server
    db.sql("CREATE DATABASE kept")
    db.sql("CREATE TABLE kept.t (id INT PRIMARY KEY) ENGINE=InnoDB")
    db.sql("INSERT INTO kept.t VALUES (1)")
    with open(db.pid_file) as f:
        assert int(f.read()) == db.pid  # the process the tests signal is the server, not a wrapper

    db.pause()
    with pytest.raises(pymysql.err.OperationalError):
        db.connect_tcp(read_timeout=1, connect_timeout=1)
    db.resume()
    assert db.sql("SELECT 1") == ((1,),)

    pid = db.pid
    db.kill()
    assert db.pid is None and _gone(pid)
    db.start()
    assert db.sql("SELECT id FROM kept.t") == ((1,),)  # crash recovery on the same data
    wait_for(lambda: db.connect_tcp().close() is None, 30, what="the exporter's account after the restart")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
