"""Database servers in data directories of their own, and sysbench load against them.

Three flavours, each the build a Debian suite carries (``FLAVORS``):

  mariadb-10.11   this machine's own package (Debian 12)
  mariadb-11.8    Debian trixie's, run inside a Debian root (stack/roots.py) with chroot
  mysql-9         Debian sid's MySQL 9.x, the same way

each in two configurations (``CONFIGS``): ``stock`` runs the server's compiled-in defaults (only what a
throwaway server needs: data directory, port, socket, pid file, error log, 127.0.0.1, user), ``tuned``
adds what the README advises (performance_schema and its InnoDB instruments on, the INNODB_METRICS
counters the exporter reads enabled) and a REDO log small enough that sysbench moves checkpoint age.

    with server("mysql-9", "tuned") as db:
        db.create_user()                      # the exporter's account, over TCP at db.address
        Sysbench(db).prepare().start()

A server in a root still keeps its directory on the host: it is mounted into the root while the server
runs, so its socket, error log and data are at the same host paths for every flavour. The native stack
runs its demo server with these, the tests their throwaway ones; everything started here is stopped by
the same object (by pid), never a server it did not start.
"""

from __future__ import annotations

import os
import pwd
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import closing

import pymysql

from innodb_exporter.metrics.model import NEEDED_COUNTERS
from innodb_exporter.sources.perf_schema_latches import LATCH_INSTRUMENTS
from innodb_replay.processes import terminate

from . import roots

FLAVORS = ("mariadb-10.11", "mariadb-11.8", "mysql-9")
CONFIGS = ("stock", "tuned")


_handed_out: set[int] = set()
# Where a process claims the ports it hands out, against the other processes of the machine that hand out ports
# too (the test lanes' two workers, a benchmark beside them): a port is bindable in both until one binds it.
CLAIMS = os.path.join(tempfile.gettempdir(), "innodb-stack-ports")


def free_port() -> int:
    """A free port on 127.0.0.1 below the kernel's ephemeral range: no outgoing connection takes it as
    its local port while a server is down, so a server restarted on its port (the fault tests) finds it
    free; and no port twice, from one process or from two at once (``CLAIMS``)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral_low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    for _ in range(200):
        port = random.randrange(10000, max(ephemeral_low, 10001))
        if port not in _handed_out and _bindable(port) and _claim(port):
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free port found between 10000 and {ephemeral_low}")


def _claim(port: int) -> bool:
    """The port is this process's, by a file in CLAIMS naming its pid (written whole, then linked into place),
    unless a process that still runs claimed it first. A claim outlives its process: it is void once that
    process has ended."""
    os.makedirs(CLAIMS, exist_ok=True)
    path = os.path.join(CLAIMS, str(port))
    with tempfile.NamedTemporaryFile("w", dir=CLAIMS, prefix=".claim-") as mine:
        mine.write(str(os.getpid()))
        mine.flush()
        for _ in range(2):
            try:
                os.link(mine.name, path)
                return True
            except FileExistsError:
                try:
                    with open(path) as f:
                        owner = int(f.read())
                except (OSError, ValueError):
                    return False  # unreadable: left to whoever wrote it
                if owner == os.getpid() or _running(owner):
                    return False
                try:
                    os.unlink(path)  # the claim of a process that has ended
                except FileNotFoundError:
                    pass
    return False


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _bindable(port: int) -> bool:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


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


# The account the tests and the demo give the exporters: the grants the README asks for.
EXPORTER_USER, EXPORTER_PASSWORD = "exporter", "exp-Secret-4711"
EXPORTER_GRANTS = ("PROCESS, REPLICATION CLIENT ON *.*", "SELECT ON performance_schema.*")
# MariaDB 10.5+ no longer lets REPLICATION CLIENT run SHOW SLAVE STATUS, which mysqld_exporter's
# slave_status collector sends on every scrape: SLAVE MONITOR does.
MARIADB_EXPORTER_GRANTS = ("PROCESS, REPLICATION CLIENT, SLAVE MONITOR ON *.*", "SELECT ON performance_schema.*")

# What the README advises for monitoring a MariaDB: latch instruments on, and a REDO log small enough
# that sysbench moves checkpoint age within seconds (the buffer pool is the default, stated so that a
# test's server stays small whatever the default becomes).
MONITORING_OPTIONS = (
    "--performance-schema=ON",
    f"--performance-schema-instrument={LATCH_INSTRUMENTS}=ON",
    "--innodb-log-file-size=32M",
    "--innodb-buffer-pool-size=128M",
)
# The same for MySQL: its REDO size is innodb_redo_log_capacity (8.0.30+), and its REDO file I/O
# instruments give the exporter fsync times.
MYSQL_MONITORING_OPTIONS = (
    "--performance-schema=ON",
    f"--performance-schema-instrument={LATCH_INSTRUMENTS}=ON",
    "--performance-schema-instrument=wait/io/file/innodb/%=ON",
    "--innodb-redo-log-capacity=32M",
    "--innodb-buffer-pool-size=128M",
)


def options(flavor: str, config: str, counters=None) -> tuple[str, ...]:
    """The server options of a configuration. ``counters``: the INNODB_METRICS counters a tuned server
    enables (default: those the exporter reads).

    Both families take the list comma-separated in one innodb_monitor_enable at startup (a repeated
    option replaces the earlier one), and skip a name they do not have with a warning in the error log.
    """
    _check(flavor, config)
    if config == "stock":
        return ()
    names = NEEDED_COUNTERS if counters is None else counters
    monitoring = MYSQL_MONITORING_OPTIONS if _CLASSES[flavor].family == "mysql" else MONITORING_OPTIONS
    return monitoring + (f"--innodb-monitor-enable={','.join(names)}",)


def server(name: str, config: str = "tuned", **kwargs) -> "Server":
    """A server of flavour ``name`` (one of FLAVORS) in configuration ``config`` (one of CONFIGS), not yet
    started. ``kwargs`` go to the class: root_password, directory, port, and options to replace the
    configuration's."""
    _check(name, config)
    return _CLASSES[name](**{"options": options(name, config), "config": config, **kwargs})


def _check(flavor: str, config: str) -> None:
    if flavor not in FLAVORS:
        raise ValueError(f"unknown server flavour {flavor!r}; one of {', '.join(FLAVORS)}")
    if config not in CONFIGS:
        raise ValueError(f"unknown configuration {config!r}; one of {', '.join(CONFIGS)}")


def _user() -> str:
    """The servers refuse to run as root unless told to; run as whoever we are."""
    return pwd.getpwuid(os.getuid()).pw_name


class Server:
    """A server of its own: ``with server("mariadb-11.8", "stock") as db: db.sql("SELECT 1")``."""

    flavor = ""  # one of FLAVORS
    family = ""  # "mariadb" or "mysql"
    root_name: str | None = None  # the stack.roots root it runs in; None: this machine's own package
    package = ""  # the Debian package of the server binary, whose version package_version() gives
    binaries: tuple[str, ...] = ()  # the server binary's names, the first installed wins
    exporter_grants: tuple[str, ...] = EXPORTER_GRANTS  # create_user's default
    throwaway_options: tuple[str, ...] = ()  # beyond the common ones, what a throwaway server needs

    def __init__(self, options=(), root_password: str = "root-pw", directory: str | None = None,
                 port: int | None = None, config: str = "custom"):
        """``directory`` keeps the data between runs (the native stack); without it, a temporary one."""
        self.options = tuple(options)
        self.config = config
        self.root_password = root_password
        self.persistent = directory is not None
        self.tmp = os.path.abspath(directory) if directory else tempfile.mkdtemp(prefix="innodb-test-db-")
        os.makedirs(self.tmp, exist_ok=True)
        self.datadir = os.path.join(self.tmp, "data")
        self.socket = os.path.join(self.tmp, "mysqld.sock")
        self.pid_file = os.path.join(self.tmp, "mysqld.pid")
        self.log_path = os.path.join(self.tmp, "error.log")
        self.console_path = os.path.join(self.tmp, "console.log")  # what the server and its wrappers print
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self._root: str | None = None
        self._version: str | None = None
        self._ping_error: Exception | None = None

    # --- where it runs ---------------------------------------------------------------------------

    @property
    def root(self) -> str:
        """The file system root the server runs in; a Debian root is built on first use."""
        if self._root is None:
            self._root = roots.ensure(self.root_name) if self.root_name else "/"
        return self._root

    def _inside(self, host_path: str) -> str:
        """A path of the server's directory as the server sees it."""
        if not self.root_name:
            return host_path
        return roots.SERVER_DIR + host_path[len(self.tmp):]

    def _command(self, argv: list[str]) -> list[str]:
        if not self.root_name:
            return argv
        if os.geteuid() != 0:
            raise roots.RootError(f"{self.flavor} runs in a Debian root with chroot, which needs root")
        return roots.command(self.root, argv, binds={self.tmp: roots.SERVER_DIR})

    def _bin(self, *names: str) -> str:
        """The first of ``names`` installed where the server runs, as the server sees it."""
        for name in names:
            if not self.root_name:
                found = _find(name)
            else:
                found = next((f"{folder}/{name}" for folder in ("/usr/sbin", "/usr/bin")
                              if os.path.exists(os.path.join(self.root, folder.lstrip("/"), name))), None)
            if found:
                return found
        where = f"the {self.root_name} root ({self.root})" if self.root_name else "this machine"
        raise RuntimeError(f"none of {', '.join(names)} is installed in {where}")

    # --- life cycle ------------------------------------------------------------------------------

    def install(self) -> None:
        raise NotImplementedError

    def start(self, extra=()) -> "Server":
        if not os.path.exists(self.datadir):
            self.install()
        inside = self._inside
        cmd = [self._bin(*self.binaries), "--no-defaults", f"--datadir={inside(self.datadir)}",
               f"--socket={inside(self.socket)}", f"--port={self.port}", "--bind-address=127.0.0.1",
               f"--log-error={inside(self.log_path)}", f"--pid-file={inside(self.pid_file)}", "--user=" + _user(),
               *self.throwaway_options, *self.options, *extra]
        with open(self.console_path, "ab") as console:
            self.proc = subprocess.Popen(self._command(cmd), stdout=console, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 120
        while not self._ping():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.flavor or 'the server'} exited with {self.proc.returncode} while starting: "
                                   f"{self.error_log()[-2000:]}{self._console()[-1000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.flavor or 'the server'} did not let root in on {self.socket} within "
                                   f"120 s: {self._ping_error} (log: {self.log_path})")
            time.sleep(0.2)
        return self

    def _ping(self) -> bool:
        """True once root gets in over the socket (setting root's password on first contact)."""
        for password in (self.root_password, ""):
            try:
                conn = pymysql.connect(unix_socket=self.socket, user="root", password=password, connect_timeout=2)
            except pymysql.err.MySQLError as exc:
                self._ping_error = exc
                continue
            with conn, conn.cursor() as cur:
                if password == "":
                    self._set_root_password(cur)
            return True
        return False

    def _set_root_password(self, cur) -> None:
        cur.execute("ALTER USER 'root'@'localhost' IDENTIFIED BY %s", (self.root_password,))

    def _console(self) -> str:
        return _read(self.console_path)

    def error_log(self) -> str:
        return _read(self.log_path)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    def kill(self) -> None:
        """Stop abruptly, the way a crash would."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def pause(self) -> None:
        """SIGSTOP: the server hangs, its connections stay open."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.pid:
            self.resume()  # a stopped server would not see SIGTERM until continued
        terminate(self.proc, timeout=60)

    def cleanup(self) -> None:
        self.stop()
        if not self.persistent:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()

    # --- talking to it ---------------------------------------------------------------------------

    def connect(self, user: str = "root", password: str | None = None, **kwargs):
        """A connection over the unix socket (root by default)."""
        return pymysql.connect(unix_socket=self.socket, user=user,
                               password=self.root_password if password is None else password,
                               autocommit=True, **kwargs)

    def connect_tcp(self, user: str = EXPORTER_USER, password: str = EXPORTER_PASSWORD, **kwargs):
        """A connection over TCP to 127.0.0.1, the way the exporter connects (the exporter's user by default)."""
        return pymysql.connect(host="127.0.0.1", port=self.port, user=user, password=password, autocommit=True,
                               **kwargs)

    def sql(self, statement: str, args=None):
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(statement, args)
            return cur.fetchall()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def version(self) -> str:
        """The server's version number, e.g. "9.7.4" (asked once; the server must run)."""
        if self._version is None:
            self._version = re.match(r"[\d.]+", self.sql("SELECT VERSION()")[0][0]).group(0)
        return self._version

    def package_version(self) -> str:
        """The Debian package version of the server binary, e.g. "9.7.4-2"."""
        return roots.installed_versions(self.root).get(self.package, "")

    def create_user(self, user: str = EXPORTER_USER, password: str = EXPORTER_PASSWORD, grants=None) -> None:
        """The account, with ``grants`` (default: the exporters' grants on this server's family)."""
        for host in ("%%", "localhost"):
            self.sql(f"CREATE USER IF NOT EXISTS '{user}'@'{host}' IDENTIFIED BY %s", (password,))
        for grant in self.exporter_grants if grants is None else grants:
            self.sql(f"GRANT {grant} TO '{user}'@'%'")
            self.sql(f"GRANT {grant} TO '{user}'@'localhost'")


class MariaDB(Server):
    """This machine's MariaDB (Debian 12: 10.11), or a MariaDB build unpacked in ``basedir``."""

    flavor = "mariadb-10.11"
    family = "mariadb"
    package = "mariadb-server-core"
    binaries = ("mariadbd", "mysqld")
    exporter_grants = MARIADB_EXPORTER_GRANTS

    def __init__(self, options=MONITORING_OPTIONS, basedir: str | None = None, root_password: str = "root-pw",
                 directory: str | None = None, port: int | None = None, config: str = "custom"):
        super().__init__(options, root_password, directory, port, config)
        self.basedir = basedir

    def _bin(self, *names: str) -> str:
        if self.basedir:
            for name in names:
                for sub in ("bin", "sbin", "scripts"):
                    path = os.path.join(self.basedir, sub, name)
                    if os.path.exists(path):
                        return path
        return super()._bin(*names)

    def install(self) -> None:
        cmd = [self._bin("mariadb-install-db", "mysql_install_db"), "--no-defaults",
               f"--datadir={self._inside(self.datadir)}", "--user=" + _user()]
        if self.basedir:
            cmd.append(f"--basedir={self.basedir}")
        cwd = self.basedir or self.tmp
        # 10.4+ needs these for a root with a password; older releases do not know them.
        modern = ["--auth-root-authentication-method=normal", "--skip-test-db"]
        out = subprocess.run(self._command(cmd + modern), capture_output=True, text=True, cwd=cwd)
        if out.returncode != 0:
            shutil.rmtree(self.datadir, ignore_errors=True)
            # --force: old releases insist on resolving the host name, which a sandbox may not.
            out = subprocess.run(self._command(cmd + ["--force"]), capture_output=True, text=True, cwd=cwd)
        if out.returncode != 0:
            shutil.rmtree(self.datadir, ignore_errors=True)
            raise RuntimeError(f"mariadb-install-db failed: {out.stdout[-2000:]}{out.stderr[-2000:]}")

    def start(self, extra=()) -> "MariaDB":
        if self.basedir:
            extra = (f"--basedir={self.basedir}", f"--lc-messages-dir={os.path.join(self.basedir, 'share')}",
                     *extra)
        return super().start(extra)

    def _set_root_password(self, cur) -> None:
        # SET PASSWORD: also on releases before 10.2, which have no ALTER USER.
        cur.execute("SET PASSWORD FOR 'root'@'localhost' = PASSWORD(%s)", (self.root_password,))


class TrixieMariaDB(MariaDB):
    """Debian trixie's MariaDB 11.8, in its Debian root."""

    flavor = "mariadb-11.8"
    root_name = "mariadb-11.8"

    def __init__(self, options=(), root_password: str = "root-pw", directory: str | None = None,
                 port: int | None = None, config: str = "custom"):
        super().__init__(options, None, root_password, directory, port, config)


class MySQL(Server):
    """Debian sid's MySQL 9.x, in its Debian root."""

    flavor = "mysql-9"
    family = "mysql"
    root_name = "mysql-9"
    package = "mysql-server-core"
    binaries = ("mysqld",)
    # The X Protocol plugin would listen on 33060 too: two test servers would collide there.
    throwaway_options = ("--mysqlx=OFF",)

    def install(self) -> None:
        # The root account gets an empty password, set on first contact (_ping) like MariaDB's.
        out = subprocess.run(self._command([self._bin("mysqld"), "--no-defaults", "--initialize-insecure",
                                            f"--datadir={self._inside(self.datadir)}", "--user=" + _user(),
                                            f"--log-error={self._inside(self.log_path)}"]),
                             capture_output=True, text=True, cwd=self.tmp)
        if out.returncode != 0:
            shutil.rmtree(self.datadir, ignore_errors=True)
            raise RuntimeError(f"mysqld --initialize-insecure failed: {out.stdout[-1000:]}{out.stderr[-1000:]}"
                               f"{self.error_log()[-2000:]}")


_CLASSES = {"mariadb-10.11": MariaDB, "mariadb-11.8": TrixieMariaDB, "mysql-9": MySQL}


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


class Sysbench:
    """``sysbench oltp_read_write`` against a server, prepared once, run in the background.

    sysbench logs in as root over the unix socket: a socket is a secure transport, so MySQL 9's
    caching_sha2_password (its only password plugin) accepts libmariadb's plain-text full authentication
    there without TLS or an RSA key exchange.
    """

    def __init__(self, db: Server, tables: int = 4, table_size: int = 20000, threads: int = 4,
                 workload: str = "oltp_read_write"):
        self.db = db
        # The password goes in an options file, not on the command line where `ps` would show it.
        options_file = os.path.join(db.tmp, "sysbench.cfg")
        with open(os.open(options_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(f"mysql-password={db.root_password}\n")
        self.common = [f"--config-file={options_file}", "--db-driver=mysql", f"--mysql-socket={db.socket}",
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
