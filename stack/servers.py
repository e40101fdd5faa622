"""A MariaDB in a data directory of its own, and sysbench load against it.

The native stack runs its demo server with these, and the tests their throwaway ones. Everything
started here is stopped by the same object (by pid), never a server it did not start.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import closing

import pymysql

from innodb_exporter.processes import terminate


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, interval: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout
    last_exc = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # the thing waited for is not up yet
            last_exc = exc
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}" + (f": {last_exc}" if last_exc else ""))


def _find(*names: str) -> str | None:
    for name in names:
        path = shutil.which(name) or (f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None)
        if path:
            return path
    return None


# The account the tests give the exporter: the grants docs/grants.md asks for.
EXPORTER_USER, EXPORTER_PASSWORD = "exporter", "exp-Secret-4711"

# Settings the stack recommends for monitoring (docs/grants.md): latch instruments on, and a REDO log
# small enough that sysbench moves checkpoint age within seconds.
MONITORING_OPTIONS = (
    "--performance-schema=ON",
    "--performance-schema-instrument=wait/synch/%/innodb/%=ON",
    "--innodb-log-file-size=32M",
    "--innodb-buffer-pool-size=128M",
)


class MariaDB:
    """A MariaDB server of its own: ``with MariaDB() as db: db.connect()``."""

    def __init__(self, options=MONITORING_OPTIONS, basedir: str | None = None, root_password: str = "root-pw",
                 directory: str | None = None, port: int | None = None):
        """``directory`` keeps the data between runs (the native stack); without it, a temporary one."""
        self.basedir = basedir
        self.options = tuple(options)
        self.root_password = root_password
        self.persistent = directory is not None
        self.tmp = directory or tempfile.mkdtemp(prefix="innodb-test-db-")
        os.makedirs(self.tmp, exist_ok=True)
        self.datadir = os.path.join(self.tmp, "data")
        self.socket = os.path.join(self.tmp, "mysqld.sock")
        self.pid_file = os.path.join(self.tmp, "mysqld.pid")
        self.port = port or free_port()
        self.log_path = os.path.join(self.tmp, "error.log")
        self.proc: subprocess.Popen | None = None

    def _bin(self, *names: str) -> str:
        if self.basedir:
            for name in names:
                for sub in ("bin", "sbin", "scripts"):
                    path = os.path.join(self.basedir, sub, name)
                    if os.path.exists(path):
                        return path
        found = _find(*names)
        if not found:
            raise RuntimeError(f"none of {', '.join(names)} is installed (apt-get install mariadb-server)")
        return found

    def install(self) -> None:
        cmd = [self._bin("mariadb-install-db", "mysql_install_db"), "--no-defaults", f"--datadir={self.datadir}",
               "--user=" + _user()]
        if self.basedir:
            cmd.append(f"--basedir={self.basedir}")
        # 10.4+ needs these for a root with a password; older releases do not know them.
        modern = ["--auth-root-authentication-method=normal", "--skip-test-db"]
        out = subprocess.run(cmd + modern, capture_output=True, text=True, cwd=self.basedir or self.tmp)
        if out.returncode != 0:
            shutil.rmtree(self.datadir, ignore_errors=True)
            # --force: old releases insist on resolving the host name, which a sandbox may not.
            out = subprocess.run(cmd + ["--force"], capture_output=True, text=True, cwd=self.basedir or self.tmp)
        if out.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed: {out.stdout[-2000:]}{out.stderr[-2000:]}")

    def start(self, extra=()) -> "MariaDB":
        if not os.path.exists(self.datadir):
            self.install()
        cmd = [self._bin("mariadbd", "mysqld"), "--no-defaults", f"--datadir={self.datadir}",
               f"--socket={self.socket}", f"--port={self.port}", "--bind-address=127.0.0.1",
               f"--log-error={self.log_path}", f"--pid-file={self.pid_file}",
               "--user=" + _user(), "--skip-name-resolve", *self.options, *extra]
        if self.basedir:
            cmd += [f"--basedir={self.basedir}", f"--lc-messages-dir={os.path.join(self.basedir, 'share')}"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        wait_for(lambda: self._ping(), 60, what=f"MariaDB on port {self.port} (log: {self.log_path})")
        return self

    def _ping(self) -> bool:
        if self.proc and self.proc.poll() is not None:
            raise RuntimeError(f"mariadbd exited with {self.proc.returncode}: {self.error_log()[-2000:]}")
        for password in (self.root_password, ""):
            try:
                conn = pymysql.connect(unix_socket=self.socket, user="root", password=password, connect_timeout=2)
            except pymysql.err.OperationalError:
                continue
            with conn, conn.cursor() as cur:
                if password == "":
                    cur.execute("SET PASSWORD FOR 'root'@'localhost' = PASSWORD(%s)", (self.root_password,))
            return True
        return False

    def error_log(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def connect(self, user: str = "root", password: str | None = None, **kwargs):
        return pymysql.connect(unix_socket=self.socket, user=user,
                               password=self.root_password if password is None else password,
                               autocommit=True, **kwargs)

    def sql(self, statement: str, args=None):
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(statement, args)
            return cur.fetchall()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def create_user(self, user: str = EXPORTER_USER, password: str = EXPORTER_PASSWORD,
                    grants=("PROCESS, REPLICATION CLIENT ON *.*", "SELECT ON performance_schema.*")) -> None:
        self.sql(f"CREATE USER IF NOT EXISTS '{user}'@'%%' IDENTIFIED BY %s", (password,))
        self.sql(f"CREATE USER IF NOT EXISTS '{user}'@'localhost' IDENTIFIED BY %s", (password,))
        for grant in grants:
            self.sql(f"GRANT {grant} TO '{user}'@'%'")
            self.sql(f"GRANT {grant} TO '{user}'@'localhost'")

    def kill(self) -> None:
        """Stop abruptly, the way a crash would."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        terminate(self.proc, timeout=60)

    def cleanup(self) -> None:
        self.stop()
        if not self.persistent:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()


class Sysbench:
    """``sysbench oltp_read_write`` against a MariaDB, prepared once, run in the background."""

    def __init__(self, db: MariaDB, tables: int = 4, table_size: int = 20000, threads: int = 4,
                 workload: str = "oltp_read_write"):
        self.db = db
        # The password goes in an options file, not on the command line where `ps` would show it.
        options = os.path.join(db.tmp, "sysbench.cfg")
        with open(os.open(options, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(f"mysql-password={db.root_password}\n")
        self.common = [f"--config-file={options}", "--db-driver=mysql", f"--mysql-socket={db.socket}",
                       "--mysql-user=root", "--mysql-db=sbtest", f"--tables={tables}", f"--table-size={table_size}"]
        self.threads = threads
        self.workload = workload
        self.proc: subprocess.Popen | None = None

    def prepare(self) -> "Sysbench":
        self.db.sql("CREATE DATABASE IF NOT EXISTS sbtest")
        out = subprocess.run(["sysbench", self.workload, *self.common, "prepare"], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"sysbench prepare failed: {out.stdout[-1000:]}{out.stderr[-1000:]}")
        return self

    def run_command(self, seconds: int = 3600, rate: int = 0, extra=()) -> list[str]:
        return ["sysbench", self.workload, *self.common, f"--threads={self.threads}", f"--time={seconds}",
                f"--rate={rate}", "--report-interval=0", "--db-ps-mode=disable", "--mysql-ignore-errors=all",
                *extra, "run"]

    def start(self, seconds: int = 3600, rate: int = 0, extra=()) -> "Sysbench":
        self.proc = subprocess.Popen(self.run_command(seconds, rate, extra), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        return self

    def stop(self) -> None:
        terminate(self.proc)


def _user() -> str:
    """mariadbd refuses to run as root unless told to; run as whoever we are."""
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name
