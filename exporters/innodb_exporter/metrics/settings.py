"""The settings a tuner changes: one declaration, a reason for each, and their values and changes as metrics.

The second half of the tuning loop (Kravtchuk's "infinite loop of database tuning": monitor, tune,
optimise, improve) needs to know what was changed and when. The exporter reads these settings with the
others it needs (``sources.global_status.GlobalVariables``: when a connection starts, then once a
minute) and exposes

  innodb_setting{setting}                                          the value now, one series per setting
  innodb_setting_last_change_timestamp_seconds{setting,from,to,restart}
                                                                   the latest change seen, one series per setting
  innodb_server_start_time_seconds                                 when the server started: a new value is a restart

A value is a number as the server gives it, ON/OFF is 1/0, and an enumeration is the position of its value
in ``values`` below (docs/metrics.md prints the list): whatever the server says, each setting is one series.
A value outside the declared list has no sample; its change event still names it.

A change is seen by comparing a read with the one before of the same server (``History``, which the
server's ``Target`` keeps across scrapes and reconnections): a SET GLOBAL when the next read shows it, at
most a minute later; a restart with another configuration file when the server is read again, stamped
with the time the server started. The exporter's own restart forgets what it saw: the first read after it
is the new baseline (Prometheus keeps the events seen before).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .families import Exposed, Family, Sample

ON_OFF = ("OFF", "ON")


@dataclass(frozen=True)
class Tunable:
    name: str
    reason: str  # why a tuner changes it: what it moves
    values: tuple[str, ...] = ()  # an enumeration, in the server's order where it has one; empty: a number
    unit: str = ""  # of a number: bytes, pages, …
    aliases: tuple[tuple[str, str], ...] = ()  # a value some server prints for a declared one

    def number(self, text: str) -> float | None:
        """The gauge's value for the server's text, None when it has none."""
        if not self.values:
            try:
                value = float(text)
            except (TypeError, ValueError):
                return None
            return value if math.isfinite(value) else None
        text = dict(self.aliases).get(text, text)
        for position, value in enumerate(self.values):
            if value.lower() == text.lower():
                return float(position)
        return None


# The list: what the tuning procedure asks an operator to change (Kinoshita 2010; Kravtchuk; the MySQL and
# MariaDB manuals' InnoDB sections), each present on the servers that have it and absent on the others.
TUNABLES: tuple[Tunable, ...] = (
    # --- memory --------------------------------------------------------------------------------
    Tunable("innodb_buffer_pool_size", "the cache: its size decides reads from storage and free page waits",
            unit="bytes"),
    Tunable("innodb_buffer_pool_instances", "splits the buffer pool and its mutex: contention on it "
            "(MySQL; MariaDB before 10.6)"),
    # --- REDO ----------------------------------------------------------------------------------
    Tunable("innodb_log_file_size", "the REDO log's size (MariaDB; MySQL before 8.0.30, times the files): the max "
            "checkpoint age, how far flushing may lag behind", unit="bytes"),
    Tunable("innodb_log_files_in_group", "the number of REDO files (MySQL before 8.0.30, MariaDB before 10.5): the "
            "REDO size with innodb_log_file_size"),
    Tunable("innodb_redo_log_capacity", "the REDO log's size on MySQL 8.0.30+: the max checkpoint age", unit="bytes"),
    Tunable("innodb_log_buffer_size", "the REDO log buffer: too small and commits wait for log writes (log waits)",
            unit="bytes"),
    # --- durability ----------------------------------------------------------------------------
    Tunable("innodb_flush_log_at_trx_commit", "1 writes and fsyncs the REDO at every commit, 2 writes at commit and "
            "fsyncs once a second, 0 does both once a second: the fsync per commit is the commit-bound load's floor"),
    Tunable("innodb_log_file_buffering", "the REDO written through the OS page cache (MariaDB 10.8+; OFF: with "
            "O_DIRECT, its default where the block size is known, unless started with innodb_flush_log_at_trx_commit "
            "= 2): OFF, a commit at 2 still waits for the device to take its write", ON_OFF),
    Tunable("sync_binlog", "fsync of the binary log every N commit groups (0: left to the OS): a second fsync per "
            "commit where the binary log is on"),
    Tunable("innodb_doublewrite", "pages written twice for torn-page safety: write IO (MySQL 8.0.30+ also "
            "DETECT_AND_RECOVER, DETECT_ONLY; MariaDB 11.x also fast)",
            ("OFF", "ON", "DETECT_AND_RECOVER", "DETECT_ONLY", "fast")),
    Tunable("innodb_flush_method", "how data and REDO files are opened and flushed (srv_unix_flush_t in the InnoDB "
            "source; Windows and Percona Server values after): O_DIRECT bypasses the page cache",
            ("fsync", "O_DSYNC", "littlesync", "nosync", "O_DIRECT", "O_DIRECT_NO_FSYNC", "unbuffered", "normal",
             "async_unbuffered", "ALL_O_DIRECT"),
            aliases=(("", "fsync"),)),  # MariaDB before 10.3 prints nothing for its default, fsync
    # --- flushing ------------------------------------------------------------------------------
    Tunable("innodb_io_capacity", "the IO rate background flushing aims at: too low and checkpoint age climbs"),
    Tunable("innodb_io_capacity_max", "the ceiling of adaptive flushing when it falls behind"),
    Tunable("innodb_max_dirty_pages_pct", "the dirty page share flushing keeps the buffer pool under"),
    Tunable("innodb_max_dirty_pages_pct_lwm", "the dirty page share at which preflushing starts (0: off)"),
    Tunable("innodb_adaptive_flushing", "flushing follows the REDO generation rate (Kravtchuk: it must follow the "
            "required flush rate)", ON_OFF),
    Tunable("innodb_adaptive_flushing_lwm", "the REDO share (% of capacity) at which adaptive flushing starts"),
    Tunable("innodb_flush_neighbors", "flushes a page's neighbours in its extent too: 0 for SSDs, 1 or 2 for "
            "spinning disks"),
    Tunable("innodb_lru_scan_depth", "pages the page cleaner scans per buffer pool instance for free pages: free "
            "page waits against background IO"),
    Tunable("innodb_page_cleaners", "page cleaner threads (MySQL; MariaDB has one)"),
    # --- purge ---------------------------------------------------------------------------------
    Tunable("innodb_purge_threads", "purge threads: a history list that grows under DML"),
    Tunable("innodb_max_purge_lag", "the history list length past which DML is delayed (0: never)"),
    Tunable("innodb_max_purge_lag_delay", "the longest delay innodb_max_purge_lag adds to a DML row (µs; 0: none)"),
    # --- concurrency and latches -----------------------------------------------------------------
    Tunable("innodb_thread_concurrency", "threads let inside InnoDB at once (0: no limit; MySQL, MariaDB before "
            "10.6): queueing against contention"),
    Tunable("innodb_spin_wait_delay", "the spin loop's delay before a latch waiter sleeps: CPU against latch "
            "waits"),
    Tunable("innodb_adaptive_hash_index", "a hash index over hot B-tree pages: faster lookups, or contention on "
            "its latch", ON_OFF),
    # --- IO threads and the change buffer ----------------------------------------------------------
    Tunable("innodb_read_io_threads", "background read threads (read-ahead, asynchronous reads)"),
    Tunable("innodb_write_io_threads", "background write threads (page flushes)"),
    Tunable("innodb_change_buffering", "secondary index changes buffered instead of read in (MySQL; MariaDB "
            "before 11.0)", ("none", "inserts", "deletes", "changes", "purges", "all")),
)

BY_NAME = {t.name: t for t in TUNABLES}
NAMES = tuple(t.name for t in TUNABLES)  # what sources.GlobalVariables reads for them
STATUS_NAMES = ("Uptime",)  # when the server started: a restart between two reads
LABEL_MAX = 64  # characters of a value kept in a change's from and to labels

SETTING = Family("innodb_setting", "gauge", "",
                 "A setting of the exporter's list of what tuners change (docs/metrics.md, 'Settings'): a number "
                 "as the server gives it, ON/OFF as 1/0, an enumeration as its value's position in that list.",
                 ("setting",))
LAST_CHANGE = Family("innodb_setting_last_change_timestamp_seconds", "gauge", "seconds",
                     "Unix time of the latest change of the setting the exporter saw, from and to the values "
                     "named: when it read the new value (at most a minute after a SET GLOBAL), or when the server "
                     "started where the change came with a restart (restart=\"1\").",
                     ("setting", "from", "to", "restart"))
START_TIME = Family("innodb_server_start_time_seconds", "gauge", "seconds",
                    "Unix time the server started (a scrape's time minus Uptime): a new value is a restart.")
FAMILIES = (SETTING, LAST_CHANGE, START_TIME)


def label_text(text: str) -> str:
    """A value as a change's label shows it: a number in its shortest exact form (90.000000 is 90), else the
    server's text, printable and at most LABEL_MAX characters."""
    try:
        number = float(text)
    except (TypeError, ValueError):
        number = None
    if number is not None and math.isfinite(number) and not text.strip().lower().startswith(("0x", "inf", "nan")):
        return str(int(number)) if number.is_integer() and abs(number) < 2 ** 63 else repr(number)
    printable = "".join(c if c.isprintable() else "?" for c in str(text))
    return printable if len(printable) <= LABEL_MAX else printable[:LABEL_MAX - 1] + "…"


@dataclass(frozen=True)
class Change:
    setting: str
    before: str  # label_text of the value before
    after: str
    at: float  # unix time
    restart: bool

    def sample(self) -> Sample:
        return (self.setting, self.before, self.after, "1" if self.restart else "0"), self.at


@dataclass(frozen=True)
class Seen:
    """What a server's history holds at one scrape: its start time and the latest change of each setting."""

    started_at: float | None = None
    changes: tuple[Change, ...] = ()


class History:
    """One server's settings as last read, its start time, and the latest change of each setting.

    ``observe`` takes every scrape's reading: the settings (the same as the scrape before until the next read
    a minute on), and Uptime. A start time that moved by more than ``RESTART_SLACK`` seconds is a restart
    (the estimate, a scrape's time minus an Uptime in whole seconds, wanders by a second or two); settings
    that differ from the last reading become changes, stamped with the server's start after a restart, else
    with the time of the reading that showed them.
    """

    RESTART_SLACK = 5.0

    def __init__(self):
        self.values: dict[str, str] | None = None
        self.started_at: float | None = None
        self.latest: dict[str, Change] = {}
        self._restarted = False  # since the last reading of the settings
        self._seen = Seen()  # replaced whole, never changed: a scrape that timed out reads it from another thread

    def observe(self, variables: dict[str, str] | None, uptime: str | None, now: float) -> list[Change]:
        """The changes this reading shows (the same reading again shows none)."""
        changes = self._compare(variables, uptime, now)
        self._seen = Seen(self.started_at, tuple(self.latest[name] for name in sorted(self.latest)))
        return changes

    def _compare(self, variables: dict[str, str] | None, uptime: str | None, now: float) -> list[Change]:
        self._see_start(uptime, now)
        if variables is None:
            return []
        values = {name: variables[name] for name in NAMES if name in variables}
        if self.values is None:
            self.values = values
            return []
        if values is self.values or values == self.values:
            self._restarted = False
            return []
        restart = self._restarted
        at = self.started_at if restart and self.started_at is not None else now
        changes = [Change(name, label_text(self.values[name]), label_text(value), at, restart)
                   for name, value in values.items() if name in self.values and value != self.values[name]]
        for change in changes:
            self.latest[change.setting] = change
        self.values = values
        self._restarted = False
        return changes

    def _see_start(self, uptime: str | None, now: float) -> None:
        try:
            seconds = float(uptime) if uptime is not None else math.nan
        except ValueError:
            return
        if not math.isfinite(seconds) or seconds < 0:
            return
        started = float(round(now - seconds))  # Uptime counts whole seconds: so does the start
        if self.started_at is None:
            self.started_at = started
        elif abs(started - self.started_at) > self.RESTART_SLACK:
            self.started_at = started
            self._restarted = True

    def seen(self) -> Seen:
        return self._seen


def values(variables: dict[str, str] | None) -> list[Sample]:
    """``innodb_setting``'s samples: each listed setting the server has whose value has a number."""
    out = []
    for tunable in TUNABLES:
        text = (variables or {}).get(tunable.name)
        number = tunable.number(text) if text is not None else None
        if number is not None:
            out.append(((tunable.name,), number))
    return out


def families(variables: dict[str, str] | None, seen: Seen | None) -> list[Exposed]:
    out = []
    if samples := values(variables):
        out.append(SETTING.build(samples))
    if seen is not None and seen.changes:
        out.append(LAST_CHANGE.build(change.sample() for change in seen.changes))
    if seen is not None and seen.started_at is not None:
        out.append(START_TIME.build([((), seen.started_at)]))
    return out


def reference() -> str:
    """docs/metrics.md's section on the list: each setting, its reason, and the numbers of its values."""
    lines = ["\n## Settings\n",
             "`innodb_setting{setting}` holds each setting of this list that the server has (the others have no",
             "series), read when a connection starts and then once a minute; `innodb_setting_last_change_timestamp_seconds`",
             "marks the latest change of each, and `innodb_server_start_time_seconds` the server's start. The list",
             "is `TUNABLES` in `exporters/innodb_exporter/metrics/settings.py`; a setting's series count is one, whatever",
             "its value.\n",
             "| setting | values | why a tuner changes it |", "|---|---|---|"]
    for t in TUNABLES:
        if t.values == ON_OFF:
            kind = "OFF 0, ON 1"
        elif t.values:
            kind = ", ".join(f"{v} {n}" for n, v in enumerate(t.values))
        else:
            kind = f"a number ({t.unit})" if t.unit else "a number"
        lines.append(f"| `{t.name}` | {kind} | {t.reason} |")
    return "\n".join(lines) + "\n"
