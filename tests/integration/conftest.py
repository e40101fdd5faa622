"""Servers for the integration tests: one MariaDB under sysbench load for the whole session."""

from __future__ import annotations

import pytest

from innodb_exporter import model
from support.servers import MariaDB, Sysbench


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
