"""A transaction held open on a native stack's demo server, as an application forgets one."""

from __future__ import annotations

import pymysql


def hold_read_view(stack) -> tuple[pymysql.connections.Connection, str]:
    """A transaction with a read view that has written (so that it has an id of its own), left open: purge
    cannot pass it while sysbench writes. The connection (roll back and close it to end the transaction) and
    the transaction's id."""
    conn = pymysql.connect(unix_socket=stack.s.path("mariadb", "mysqld.sock"), user="root",
                           password=stack._secret("mariadb-root"), database="sbtest", autocommit=False)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS held (i INT) ENGINE=InnoDB")
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("SELECT COUNT(*) FROM sbtest1")
        cur.execute("INSERT INTO held VALUES (1)")
        cur.execute("SELECT trx_id FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()")
        return conn, str(cur.fetchone()[0])
