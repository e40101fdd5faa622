"""Servers for the integration tests: a MariaDB under sysbench load, and the whole native stack,
each started once for the session."""

from __future__ import annotations

import shutil
import tempfile
import time

import pytest

from innodb_exporter import model
from stack.native import DEFAULT_PORTS, Settings, Stack
from support.servers import MariaDB, Sysbench, free_port, wait_for


@pytest.fixture(scope="session")
def loaded_db():
    """A MariaDB with a small REDO log, performance_schema latches on, the exporter's counters on,
    and sysbench oltp_read_write running for the whole session."""
    db = MariaDB()
    try:
        db.start()
        db.create_user()
        existing = {row[0] for row in db.sql("SELECT NAME FROM information_schema.INNODB_METRICS")}
        for counter in set(model.NEEDED_COUNTERS) & existing:  # what --innodb_metrics.enable does
            db.sql("SET GLOBAL innodb_monitor_enable = %s", (counter,))
        load = Sysbench(db, threads=4).prepare().start(seconds=3600)
        yield db
        load.stop()
    finally:
        db.cleanup()


@pytest.fixture
def fresh_db():
    """A MariaDB of its own, for tests that kill, stop or reconfigure it."""
    db = MariaDB()
    try:
        db.start()
        db.create_user()
        yield db
    finally:
        db.cleanup()


@pytest.fixture(scope="session")
def native_stack():
    """The native stack on free ports, as ./innodb-stack up runs it, with three minutes of scrapes behind it."""
    root = tempfile.mkdtemp(prefix="innodb-stack-")
    stack = Stack(Settings(root=root, ports={name: free_port() for name in DEFAULT_PORTS}, sysbench_threads=2,
                           sysbench_rate=50))
    try:
        stack.up()
        started = time.monotonic()
        wait_for(lambda: time.monotonic() - started > 180, 200, interval=5, what="three minutes of data")
        yield stack
    finally:
        stack.down()
        shutil.rmtree(root, ignore_errors=True)
