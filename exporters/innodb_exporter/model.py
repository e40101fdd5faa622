"""The metric contract: every metric the exporter emits, and where each value comes from.

Each metric lists its providers in order of preference; the first that has a value in this scrape
wins. A provider names the source it reads and the flavours that have it, so this table is also the
metrics reference (docs/metrics.md is generated from it). Version differences live here as data:
a provider simply has no value on a server that lacks its status variable, counter or text line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from . import redo
from .parsers.innodb_status import InnodbStatus
from .server import ServerInfo

OTHER = "other"  # label value that sums the series beyond the top N


@dataclass
class Snapshot:
    """Everything one scrape read. A source that failed or was not read leaves its field None."""

    server: ServerInfo | None = None
    status: dict[str, str] | None = None  # SHOW GLOBAL STATUS, lower-case names
    variables: dict[str, str] | None = None  # SHOW GLOBAL VARIABLES, lower-case names
    counters: dict | None = None  # INNODB_METRICS rows by name
    innodb_status: InnodbStatus | None = None
    mutexes: object | None = None  # parsers.innodb_mutex.MutexReading
    trx: object | None = None  # sources.innodb_trx.TrxSummary
    latches: list | None = None  # sources.perf_schema_latches.LatchWaits
    redo_file: object | None = None  # sources.perf_schema_redo_file.RedoFileIO
    _limits: redo.Limits | None = field(default=None, repr=False)

    def limits(self) -> redo.Limits:
        """The REDO limits computed from the settings (cached: several metrics ask)."""
        if self._limits is None:
            if self.server is None or self.variables is None:
                self._limits = redo.Limits()
            else:
                settings = redo.Settings.from_variables(self.variables, self.status)
                self._limits = redo.limits(self.server.flavor, self.server.version, settings)
        return self._limits


@dataclass(frozen=True)
class Provider:
    source: str  # the source module it reads (see sources/)
    what: str  # what it reads, as a reader of the SQL would name it
    flavors: str  # where it exists
    get: Callable[[Snapshot], float | None]
    # Names this provider needs from SHOW GLOBAL STATUS / VARIABLES / INNODB_METRICS.
    status_names: tuple[str, ...] = ()
    variable_names: tuple[str, ...] = ()
    counter_names: tuple[str, ...] = ()


def _number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def status(name: str, flavors: str) -> Provider:
    def get(s: Snapshot):
        return _number((s.status or {}).get(name.lower()))

    return Provider("global_status", f"`{name}`", flavors, get, status_names=(name,))


def status_diff(a: str, b: str, flavors: str) -> Provider:
    def get(s: Snapshot):
        x, y = (_number((s.status or {}).get(n.lower())) for n in (a, b))
        return None if x is None or y is None else x - y

    return Provider("global_status", f"`{a}` − `{b}`", flavors, get, status_names=(a, b))


def counter(name: str, flavors: str, divisor: float = 1) -> Provider:
    """An INNODB_METRICS counter, when it exists and is enabled; divided into base units (µs -> s)."""

    def get(s: Snapshot):
        row = (s.counters or {}).get(name)
        return row.count / divisor if row is not None and row.enabled else None

    return Provider("innodb_metrics", f"`{name}`", flavors, get, counter_names=(name,))


def text(what: str, flavors: str, fn: Callable[[InnodbStatus], float | None]) -> Provider:
    """A value read from the parsed SHOW ENGINE INNODB STATUS text."""

    def get(s: Snapshot):
        if s.innodb_status is None:
            return None
        try:
            return fn(s.innodb_status)
        except (AttributeError, TypeError):  # the section or a field is missing in this format
            return None

    return Provider("engine_innodb_status", what, flavors, get)


def computed(what: str, flavors: str, fn: Callable[[redo.Limits], int | None]) -> Provider:
    """A REDO limit computed from the settings with the flavour's formula (redo.py)."""
    return Provider("global_variables", what, flavors, lambda s: fn(s.limits()),
                    variable_names=redo.VARIABLES, status_names=redo.STATUS)


def variable_product(a: str, b: str, flavors: str) -> Provider:
    def get(s: Snapshot):
        x = _number((s.variables or {}).get(a))
        y = _number((s.variables or {}).get(b))
        return None if x is None else x * (y if y is not None else 1)

    return Provider("global_variables", f"`{a}` × `{b}`", flavors, get, variable_names=(a, b))


def variable(name: str, flavors: str) -> Provider:
    return Provider("global_variables", f"`{name}`", flavors,
                    lambda s: _number((s.variables or {}).get(name)), variable_names=(name,))


def field_of(source: str, attribute: str, what: str, flavors: str) -> Provider:
    """An attribute of a source's typed value (INNODB_TRX, the REDO file summary)."""

    def get(s: Snapshot):
        value = getattr(s, attribute)
        return None if value is None else getattr(value, what.split(" ")[0])

    return Provider(source, what, flavors, get)


@dataclass(frozen=True)
class Metric:
    name: str
    type: str  # "gauge" or "counter"
    unit: str
    help: str
    labels: tuple[str, ...] = ()
    # Fixed series: label values -> providers in order of preference.
    series: tuple[tuple[tuple[str, ...], tuple[Provider, ...]], ...] = ()
    # Series whose label values come from the data (latches, pools): returns (labels, value) pairs.
    build: Callable[[Snapshot, int], Iterable[tuple[tuple[str, ...], float]]] | None = None
    build_doc: str = ""  # for the reference: where a built metric comes from
    produced_by: str = "model"  # "model", or "exporter" for the exporter's own health metrics
    headline: bool = False  # part of SPEC.md's contract


def one(*providers: Provider) -> tuple[tuple[tuple[str, ...], tuple[Provider, ...]], ...]:
    return (((), providers),)


ALL_FLAVORS = "all"
MARIADB = "MariaDB 10.5+"
MARIADB_PERCONA = "MariaDB 10.5+, Percona Server"
MYSQL_8030 = "MySQL 8.0.30+ (8.4, 9.x)"
OFF = "; off by default"


def _lsn(fn):
    return lambda st: fn(st.log)


def _top(pairs: list[tuple[tuple[str, ...], float]], top: int, rank: list[float], width: int):
    """Keep the top N series by rank (a cumulative value, so membership is stable) and sum the rest."""
    order = sorted(range(len(pairs)), key=lambda i: (-rank[i], pairs[i][0]))
    kept = [pairs[i] for i in order[:top]]
    rest = [pairs[i][1] for i in order[top:]]
    if rest:
        kept.append(((OTHER,) * width, sum(rest)))
    return kept


def _semaphore_waiting(s: Snapshot, top: int):
    if s.innodb_status is None or s.innodb_status.semaphores is None:
        return []
    counts: dict[str, int] = {}
    for wait in s.innodb_status.semaphores.waits:
        counts[wait.latch] = counts.get(wait.latch, 0) + 1
    pairs = [((latch,), float(n)) for latch, n in counts.items()]
    return _top(pairs, top, [v for _, v in pairs], 1)


def _semaphore_longest(s: Snapshot, top: int):
    if s.innodb_status is None or s.innodb_status.semaphores is None:
        return []
    waits = s.innodb_status.semaphores.waits
    return [((), max((w.seconds for w in waits), default=0.0))]


def _latch_series(attribute: str):
    def build(s: Snapshot, top: int):
        if s.latches is None:
            return []
        latches = [l for l in s.latches if l.waits > 0]
        pairs = [((l.kind, l.name), float(getattr(l, attribute))) for l in latches]
        return _top(pairs, top, [l.seconds for l in latches], 2)

    return build


def _mutex_waits(s: Snapshot, top: int):
    if s.mutexes is None:
        return []
    stats = [m for m in s.mutexes.latches if m.waits is not None]
    pairs = [((m.name,), float(m.waits)) for m in stats]
    return _top(pairs, top, [v for _, v in pairs], 1)


def _spin(attribute: str):
    def build(s: Snapshot, top: int):
        if s.innodb_status is None or s.innodb_status.semaphores is None:
            return []
        return [((mode,), float(getattr(st, attribute)))
                for mode, st in s.innodb_status.semaphores.spin.items() if getattr(st, attribute) is not None]

    return build


def _instance_pages(s: Snapshot, top: int):
    if s.innodb_status is None:
        return []
    out = []
    for pool, bp in sorted(s.innodb_status.buffer_pool_instances.items()):
        for state, value in (("total", bp.size), ("free", bp.free), ("data", bp.database_pages),
                             ("dirty", bp.modified_pages)):
            if value is not None:
                out.append(((str(pool), state), float(value)))
    return out


def _instance_pending_writes(s: Snapshot, top: int):
    if s.innodb_status is None:
        return []
    out = []
    for pool, bp in sorted(s.innodb_status.buffer_pool_instances.items()):
        for kind, value in (("lru", bp.pending_writes_lru), ("flush_list", bp.pending_writes_flush_list),
                            ("single_page", bp.pending_writes_single_page)):
            if value is not None:
                out.append(((str(pool), kind), float(value)))
    return out


def _instance_pending_reads(s: Snapshot, top: int):
    if s.innodb_status is None:
        return []
    return [((str(pool),), float(bp.pending_reads))
            for pool, bp in sorted(s.innodb_status.buffer_pool_instances.items()) if bp.pending_reads is not None]


def _change_buffer_operations(s: Snapshot, top: int):
    ib = s.innodb_status.insert_buffer if s.innodb_status else None
    if ib is None:
        return []
    return [((action, operation), float(value))
            for action, counts in (("merged", ib.merged), ("discarded", ib.discarded))
            for operation, value in counts.items()]


def _pool_misc(st: InnodbStatus):
    bp = st.buffer_pool
    return bp.size - bp.free - bp.database_pages


def _purge_delay_mariadb(s: Snapshot):
    """Recent MariaDB no longer sets purge_dml_delay_usec; it delays DML by this formula (trx0purge.cc)."""
    if s.server is None or s.server.flavor != "mariadb":
        return None
    history = _number((s.status or {}).get("innodb_history_list_length"))
    lag = _number((s.variables or {}).get("innodb_max_purge_lag"))
    cap = _number((s.variables or {}).get("innodb_max_purge_lag_delay"))
    if history is None or lag is None or cap is None:
        return None
    if not lag or not cap or history <= lag:
        return 0.0
    return min(cap, 10000 * history // lag - 5000) / 1e6


PURGE_DELAY_MARIADB = Provider(
    "global_variables", "`innodb_max_purge_lag`, `innodb_max_purge_lag_delay` and the history length, by "
    "MariaDB's formula", MARIADB, _purge_delay_mariadb,
    status_names=("Innodb_history_list_length",),
    variable_names=("innodb_max_purge_lag", "innodb_max_purge_lag_delay"))


def _exporter(name, type_, unit, help_, labels=()):
    return Metric(name, type_, unit, help_, labels, produced_by="exporter", headline=True)


CATALOGUE: tuple[Metric, ...] = (
    # --- the exporter and the server -----------------------------------------------------------
    _exporter("innodb_up", "gauge", "", "1 when the server answered the core source (SHOW GLOBAL STATUS) in this scrape."),
    _exporter("innodb_exporter_source_up", "gauge", "",
              "1 when the source was read in this scrape, 0 when it failed or the server cannot answer it.", ("source",)),
    _exporter("innodb_exporter_source_duration_seconds", "gauge", "seconds",
              "Time spent reading the source in this scrape.", ("source",)),
    Metric("innodb_exporter_source_errors_total", "counter", "",
           "Failed reads of the source since the exporter started (missing privilege, lost connection, timeout).",
           ("source",), produced_by="exporter"),
    Metric("innodb_exporter_parse_errors_total", "counter", "",
           "Problems met parsing the source's output since the exporter started (garbled or truncated text).",
           ("source",), produced_by="exporter"),
    Metric("innodb_exporter_counter_disabled", "gauge", "",
           "1 for each INNODB_METRICS counter this exporter uses that is disabled on the server "
           "(enable with SET GLOBAL innodb_monitor_enable, or the --innodb_metrics.enable flag).",
           ("counter",), produced_by="exporter"),
    _exporter("innodb_server_info", "gauge", "", "1, labelled with the server's flavour and version.",
              ("flavor", "version")),

    # --- REDO and checkpoint age ---------------------------------------------------------------
    Metric("innodb_checkpoint_age_bytes", "gauge", "bytes",
           "Current LSN minus the last checkpoint LSN: REDO that crash recovery would have to apply.",
           series=one(
               status("Innodb_checkpoint_age", MARIADB_PERCONA),
               status_diff("Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn", MYSQL_8030),
               text("LOG 'Checkpoint age'", "Percona Server, XtraDB", _lsn(lambda l: l.checkpoint_age)),
               text("LOG 'Log sequence number' − 'Last checkpoint at'", ALL_FLAVORS,
                    _lsn(lambda l: l.lsn - l.last_checkpoint_lsn)),
               counter("log_lsn_checkpoint_age", ALL_FLAVORS + OFF),
           ), headline=True),
    Metric("innodb_checkpoint_age_max_bytes", "gauge", "bytes",
           "The server's hard limit for checkpoint age: above it InnoDB flushes synchronously and writers wait.",
           series=one(
               status("Innodb_checkpoint_max_age", MARIADB_PERCONA),
               text("LOG 'Max checkpoint age'", "Percona Server, XtraDB", _lsn(lambda l: l.max_checkpoint_age)),
               computed("computed from the REDO settings (docs/redo-model.md)", "MySQL 5.7+, MariaDB 10.0+",
                        lambda lim: lim.max_checkpoint_age),
           ), headline=True),
    Metric("innodb_checkpoint_age_async_bytes", "gauge", "bytes",
           "Age at which adaptive flushing turns aggressive (async preflush point, max_modified_age_async).",
           series=one(
               counter("log_max_modified_age_async", ALL_FLAVORS + OFF),
               computed("computed from the REDO settings (docs/redo-model.md)", "MySQL 5.7+, MariaDB 10.0+",
                        lambda lim: lim.async_age),
           ), headline=True),
    Metric("innodb_checkpoint_age_sync_bytes", "gauge", "bytes",
           "Age at which InnoDB flushes synchronously (max_modified_age_sync). On MariaDB 10.5+ that is the max "
           "checkpoint age, where it flushes furiously.",
           series=one(
               counter("log_max_modified_age_sync", "MySQL" + OFF),
               computed("computed from the REDO settings (docs/redo-model.md)",
                        "MySQL 5.7+, MariaDB 10.0+ (10.5+: the max checkpoint age)", lambda lim: lim.sync_age),
           ), headline=True),
    Metric("innodb_redo_capacity_bytes", "gauge", "bytes",
           "Total REDO log capacity: innodb_redo_log_capacity, or innodb_log_file_size × innodb_log_files_in_group.",
           series=one(
               variable("innodb_redo_log_capacity", MYSQL_8030),
               variable_product("innodb_log_file_size", "innodb_log_files_in_group",
                                "MySQL before 8.0.30, MariaDB (one file since 10.5)"),
           ), headline=True),
    Metric("innodb_redo_lsn_bytes", "gauge", "bytes", "Current log sequence number (bytes of REDO ever written).",
           series=one(
               status("Innodb_lsn_current", MARIADB_PERCONA),
               status("Innodb_redo_log_current_lsn", MYSQL_8030),
               text("LOG 'Log sequence number'", ALL_FLAVORS, _lsn(lambda l: l.lsn)),
               counter("log_lsn_current", ALL_FLAVORS + OFF),
           ), headline=True),
    Metric("innodb_redo_flushed_lsn_bytes", "gauge", "bytes", "LSN up to which the REDO log is flushed to disk.",
           series=one(
               status("Innodb_lsn_flushed", MARIADB_PERCONA),
               status("Innodb_redo_log_flushed_to_disk_lsn", MYSQL_8030),
               text("LOG 'Log flushed up to'", ALL_FLAVORS, _lsn(lambda l: l.flushed_lsn)),
               counter("log_lsn_last_flush", ALL_FLAVORS + OFF),
           ), headline=True),
    Metric("innodb_redo_checkpoint_lsn_bytes", "gauge", "bytes", "LSN of the last checkpoint.",
           series=one(
               status("Innodb_lsn_last_checkpoint", MARIADB_PERCONA),
               status("Innodb_redo_log_checkpoint_lsn", MYSQL_8030),
               text("LOG 'Last checkpoint at'", ALL_FLAVORS, _lsn(lambda l: l.last_checkpoint_lsn)),
               counter("log_lsn_last_checkpoint", ALL_FLAVORS + OFF),
           ), headline=True),
    Metric("innodb_redo_pages_flushed_lsn_bytes", "gauge", "bytes",
           "LSN of the oldest page modification not yet flushed ('Pages flushed up to').",
           series=one(
               text("LOG 'Pages flushed up to'", ALL_FLAVORS, _lsn(lambda l: l.pages_flushed_lsn)),
               counter("log_lsn_buf_pool_oldest", "MySQL 5.7, MariaDB" + OFF),
           )),
    Metric("innodb_redo_modified_age_bytes", "gauge", "bytes",
           "Current LSN minus the oldest unflushed modification: the age the async and sync flush points apply to.",
           series=one(
               text("LOG 'Modified age'", "Percona Server 5.7, XtraDB", _lsn(lambda l: l.modified_age)),
               text("LOG 'Log sequence number' − 'Pages flushed up to'", ALL_FLAVORS,
                    _lsn(lambda l: l.lsn - l.pages_flushed_lsn)),
           )),
    Metric("innodb_redo_written_bytes_total", "counter", "bytes", "Bytes written to the REDO log.",
           series=one(status("Innodb_os_log_written", ALL_FLAVORS),
                      counter("os_log_bytes_written", ALL_FLAVORS)), headline=True),
    Metric("innodb_redo_writes_total", "counter", "", "Physical writes to the REDO log.",
           series=one(status("Innodb_log_writes", ALL_FLAVORS), counter("log_writes", ALL_FLAVORS)), headline=True),
    Metric("innodb_redo_fsyncs_total", "counter", "",
           "fsync() calls on the REDO log. MariaDB 10.8+ counts them only inside Innodb_data_fsyncs.",
           series=one(
               status("Innodb_os_log_fsyncs", "MySQL, Percona Server, MariaDB before 10.8"),
               counter("os_log_fsyncs", "MySQL, MariaDB before 10.8"),
               field_of("perf_schema_redo_file", "redo_file", "fsyncs (COUNT_MISC of innodb_log_file)",
                        "MySQL with performance_schema"),
           ), headline=True),
    Metric("innodb_redo_fsync_seconds_total", "counter", "seconds",
           "Time spent in REDO fsync: rate(this) / rate(innodb_redo_fsyncs_total) is the average fsync latency.",
           series=one(
               field_of("perf_schema_redo_file", "redo_file", "fsync_seconds (SUM_TIMER_MISC of innodb_log_file)",
                        "MySQL, Percona Server with performance_schema; MariaDB 10.8+ does not instrument its REDO"),
           ), headline=True),
    Metric("innodb_redo_fsync_latency_seconds", "gauge", "seconds",
           "InnoDB's own REDO flush time over its last averaging window: average and maximum per fsync.",
           ("stat",), series=(
               (("avg",), (counter("log_flush_avg_time", "MySQL 8.0+" + OFF, 1e6),)),
               (("max",), (counter("log_flush_max_time", "MySQL 8.0+" + OFF, 1e6),)),
           ), headline=True),
    Metric("innodb_redo_log_waits_total", "counter", "", "Waits because the log buffer was too small and had to be flushed.",
           series=one(status("Innodb_log_waits", ALL_FLAVORS), counter("log_waits", ALL_FLAVORS)), headline=True),

    # --- flushing ------------------------------------------------------------------------------
    Metric("innodb_buffer_pool_pages_flushed_total", "counter", "", "Pages flushed from the buffer pool, all kinds.",
           series=one(status("Innodb_buffer_pool_pages_flushed", ALL_FLAVORS)), headline=True),
    Metric("innodb_flush_pages_total", "counter", "", "Pages flushed, by kind of flushing.", ("kind",), series=(
        (("adaptive",), (counter("buffer_flush_adaptive_total_pages", ALL_FLAVORS + OFF),)),
        (("background",), (counter("buffer_flush_background_total_pages", ALL_FLAVORS + OFF),)),
        (("sync",), (counter("buffer_flush_sync_total_pages", ALL_FLAVORS + OFF),)),
        (("lru",), (status("Innodb_buffer_pool_pages_LRU_flushed", MARIADB),
                    counter("buffer_LRU_batch_flush_total_pages", "MySQL" + OFF + "; MariaDB 10.6+ on"))),
        (("neighbor",), (counter("buffer_flush_neighbor_total_pages", ALL_FLAVORS + OFF),)),
        # Each single page flush call flushes at most one page, from a user thread.
        (("single_page",), (counter("buffer_LRU_single_flush_num_scan", "MySQL" + OFF),)),
    ), headline=True),
    Metric("innodb_flush_target_pages", "gauge", "",
           "Pages adaptive flushing was asked to flush in its last iteration: all requested, and those for REDO age.",
           ("reason",), series=(
               (("requested",), (counter("buffer_flush_n_to_flush_requested", ALL_FLAVORS + OFF),)),
               (("by_age",), (counter("buffer_flush_n_to_flush_by_age", ALL_FLAVORS + OFF),)),
           ), headline=True),
    Metric("innodb_flush_io_capacity_ratio", "gauge", "",
           "Share of innodb_io_capacity adaptive flushing asks for, because of dirty pages or REDO age "
           "(buffer_flush_pct_for_dirty / _lsn ÷ 100; can exceed 1). On MariaDB 'dirty_pages' is the larger of both.",
           ("reason",), series=(
               (("dirty_pages",), (counter("buffer_flush_pct_for_dirty", ALL_FLAVORS + OFF, 100),)),
               (("redo",), (counter("buffer_flush_pct_for_lsn", ALL_FLAVORS + OFF, 100),)),
           )),
    Metric("innodb_flush_avg_seconds", "gauge", "seconds",
           "Average time of one flushing pass over InnoDB's last averaging window (innodb_flushing_avg_loops); "
           "healthy below 1 s.", ("kind",), series=(
               (("page_cleaner",), (counter("buffer_flush_avg_time", "MySQL" + OFF, 1e3),)),
               (("adaptive",), (counter("buffer_flush_adaptive_avg_time_est", "MySQL" + OFF, 1e3),
                                counter("buffer_flush_adaptive_avg_time", "MariaDB" + OFF, 1e3))),
               (("lru",), (counter("buffer_LRU_batch_flush_avg_time_est", "MySQL" + OFF, 1e3),)),
           )),
    Metric("innodb_flush_sync_waits_total", "counter", "",
           "Times a thread waited for a synchronous flush to free REDO space (buffer_flush_sync_waits).",
           series=one(counter("buffer_flush_sync_waits", ALL_FLAVORS + OFF))),

    # --- free pages and LRU --------------------------------------------------------------------
    Metric("innodb_free_page_waits_total", "counter", "",
           "Rounds in which a user thread found no free page and had to wait or retry (Innodb_buffer_pool_wait_free).",
           series=one(status("Innodb_buffer_pool_wait_free", ALL_FLAVORS),
                      counter("buffer_pool_wait_free", ALL_FLAVORS)), headline=True),
    Metric("innodb_lru_get_free_search_total", "counter", "", "Requests for a free page (buffer_LRU_get_free_search).",
           series=one(counter("buffer_LRU_get_free_search", ALL_FLAVORS + OFF)), headline=True),
    Metric("innodb_lru_get_free_loops_total", "counter", "",
           "Retries of a free page request because the free list was empty (buffer_LRU_get_free_loops).",
           series=one(counter("buffer_LRU_get_free_loops", ALL_FLAVORS + OFF)), headline=True),
    Metric("innodb_lru_get_free_waits_total", "counter", "",
           "Free page requests that slept waiting for a free page (buffer_LRU_get_free_waits).",
           series=one(counter("buffer_LRU_get_free_waits", "MySQL, MariaDB before 10.11" + OFF)), headline=True),
    Metric("innodb_buffer_pool_pages", "gauge", "", "Buffer pool pages by state (dirty pages are part of data).",
           ("state",), series=tuple(
               ((state,), (status(f"Innodb_buffer_pool_pages_{state}", ALL_FLAVORS), fallback))
               for state, fallback in (
                   ("free", text("BUFFER POOL 'Free buffers'", ALL_FLAVORS, lambda st: st.buffer_pool.free)),
                   ("data", text("BUFFER POOL 'Database pages'", ALL_FLAVORS, lambda st: st.buffer_pool.database_pages)),
                   ("dirty", text("BUFFER POOL 'Modified db pages'", ALL_FLAVORS, lambda st: st.buffer_pool.modified_pages)),
                   ("misc", text("BUFFER POOL size − free − data", ALL_FLAVORS, _pool_misc)),
                   ("total", text("BUFFER POOL 'Buffer pool size'", ALL_FLAVORS, lambda st: st.buffer_pool.size)),
               )), headline=True),
    Metric("innodb_buffer_pool_pending_reads", "gauge", "", "Buffer pool reads waiting for I/O ('Pending reads').",
           series=one(text("BUFFER POOL 'Pending reads'", ALL_FLAVORS, lambda st: st.buffer_pool.pending_reads)),
           headline=True),
    Metric("innodb_buffer_pool_pending_writes", "gauge", "", "Buffer pool writes waiting for I/O, by kind ('Pending writes').",
           ("kind",), series=(
               (("lru",), (text("BUFFER POOL 'Pending writes: LRU'", ALL_FLAVORS,
                                lambda st: st.buffer_pool.pending_writes_lru),)),
               (("flush_list",), (text("BUFFER POOL 'Pending writes: flush list'", ALL_FLAVORS,
                                       lambda st: st.buffer_pool.pending_writes_flush_list),)),
               (("single_page",), (text("BUFFER POOL 'Pending writes: single page'", "MySQL, MariaDB before 10.5",
                                        lambda st: st.buffer_pool.pending_writes_single_page),)),
           ), headline=True),
    Metric("innodb_buffer_pool_hit_ratio", "gauge", "",
           "Buffer pool hit rate since the previous status printout ('Buffer pool hit rate N / 1000').",
           series=one(text("BUFFER POOL 'Buffer pool hit rate'", ALL_FLAVORS, lambda st: st.buffer_pool.hit_rate))),
    Metric("innodb_buffer_pool_instance_pages", "gauge", "", "Pages by state in each buffer pool instance.",
           ("pool", "state"), build=_instance_pages, build_doc="INDIVIDUAL BUFFER POOL INFO (with 2+ instances)"),
    Metric("innodb_buffer_pool_instance_pending_reads", "gauge", "", "Pending reads in each buffer pool instance.",
           ("pool",), build=_instance_pending_reads, build_doc="INDIVIDUAL BUFFER POOL INFO (with 2+ instances)"),
    Metric("innodb_buffer_pool_instance_pending_writes", "gauge", "", "Pending writes in each buffer pool instance.",
           ("pool", "kind"), build=_instance_pending_writes, build_doc="INDIVIDUAL BUFFER POOL INFO (with 2+ instances)"),

    # --- purge and transactions ----------------------------------------------------------------
    Metric("innodb_history_list_length", "gauge", "",
           "Undo log records not yet purged (purge lag). Should not grow constantly.",
           series=one(
               status("Innodb_history_list_length", MARIADB_PERCONA),
               counter("trx_rseg_history_len", ALL_FLAVORS),
               text("TRANSACTIONS 'History list length'", ALL_FLAVORS,
                    lambda st: st.transactions.history_list_length),
           ), headline=True),
    Metric("innodb_purge_lag_transactions", "gauge", "",
           "Transaction id counter minus the id purge is done for: transactions whose undo is not purged yet.",
           series=one(text("TRANSACTIONS 'Trx id counter' − 'Purge done for'", ALL_FLAVORS,
                           lambda st: st.transactions.trx_id_counter - st.transactions.purge_done_for)), headline=True),
    Metric("innodb_purge_dml_delay_seconds", "gauge", "seconds",
           "Current delay imposed on each DML row operation because of purge lag (innodb_max_purge_lag).",
           series=one(
               PURGE_DELAY_MARIADB,
               counter("purge_dml_delay_usec", "MySQL" + OFF + "; stale while innodb_max_purge_lag is 0 before 9.x",
                       1e6),
           ), headline=True),
    Metric("innodb_purge_undo_log_pages_total", "counter", "", "Undo log pages purged (purge progress).",
           series=one(counter("purge_undo_log_pages", ALL_FLAVORS + OFF)), headline=True),
    Metric("innodb_active_transactions", "gauge", "", "Transactions open in InnoDB now.",
           series=one(field_of("innodb_trx", "trx", "active (COUNT(*))", ALL_FLAVORS),
                      text("TRANSACTIONS: ---TRANSACTION entries that are ACTIVE", ALL_FLAVORS,
                           lambda st: st.transactions.active)), headline=True),
    Metric("innodb_oldest_transaction_seconds", "gauge", "seconds",
           "Age of the oldest open transaction: what holds purge back.",
           series=one(field_of("innodb_trx", "trx", "oldest_seconds (MAX(NOW() − trx_started))", ALL_FLAVORS),
                      text("TRANSACTIONS: largest 'ACTIVE N sec'", ALL_FLAVORS,
                           lambda st: st.transactions.oldest_active_seconds)), headline=True),
    Metric("innodb_lock_waiting_transactions", "gauge", "", "Transactions waiting for a row lock now.",
           series=one(field_of("innodb_trx", "trx", "lock_waits (trx_state = 'LOCK WAIT')", ALL_FLAVORS),
                      text("TRANSACTIONS: 'LOCK WAIT' entries", ALL_FLAVORS, lambda st: st.transactions.lock_waits))),

    # --- contention ----------------------------------------------------------------------------
    Metric("innodb_semaphore_waiting_threads", "gauge", "",
           "Threads waiting for a latch now, per latch: its name where the server prints one, else where it was "
           "created (file:line); top N plus 'other'.", ("latch",), build=_semaphore_waiting,
           build_doc="SEMAPHORES '--Thread … has waited at …' entries", headline=True),
    Metric("innodb_semaphore_longest_wait_seconds", "gauge", "seconds",
           "Longest current semaphore wait (InnoDB aborts the server when one reaches 600 s).",
           build=_semaphore_longest, build_doc="SEMAPHORES '… for N seconds the semaphore'", headline=True),
    Metric("innodb_semaphore_os_wait_reservations_total", "counter", "", "OS wait array reservations (SEMAPHORES).",
           series=one(text("SEMAPHORES 'reservation count'", "MySQL, MariaDB before 10.6",
                           lambda st: st.semaphores.reservation_count))),
    Metric("innodb_semaphore_os_wait_signals_total", "counter", "", "OS wait array signals (SEMAPHORES).",
           series=one(text("SEMAPHORES 'signal count'", "MySQL, MariaDB before 10.6",
                           lambda st: st.semaphores.signal_count))),
    Metric("innodb_semaphore_spin_waits_total", "counter", "", "Spin waits by lock mode (SEMAPHORES).", ("mode",),
           build=_spin("spins"), build_doc="SEMAPHORES 'RW-shared spins N' lines (MySQL, MariaDB before 10.6)"),
    Metric("innodb_semaphore_spin_rounds_total", "counter", "", "Spin rounds by lock mode (SEMAPHORES).", ("mode",),
           build=_spin("rounds"), build_doc="SEMAPHORES 'rounds N' (MySQL, MariaDB before 10.6)"),
    Metric("innodb_semaphore_os_waits_total", "counter", "", "Waits that went to the OS, by lock mode (SEMAPHORES).",
           ("mode",), build=_spin("os_waits"), build_doc="SEMAPHORES 'OS waits N' (MySQL, MariaDB before 10.6)"),
    Metric("innodb_latch_waits_total", "counter", "",
           "performance_schema waits per InnoDB latch instrument; top N by time plus 'other'.", ("kind", "name"),
           build=_latch_series("waits"),
           build_doc="events_waits_summary_global_by_event_name COUNT_STAR (instruments wait/synch/%/innodb/%)",
           headline=True),
    Metric("innodb_latch_wait_seconds_total", "counter", "seconds",
           "performance_schema time waited per InnoDB latch instrument; top N by time plus 'other'.", ("kind", "name"),
           build=_latch_series("seconds"),
           build_doc="events_waits_summary_global_by_event_name SUM_TIMER_WAIT", headline=True),
    Metric("innodb_mutex_waits_total", "counter", "",
           "Waits per latch from SHOW ENGINE INNODB MUTEX ('waits', or 'os_waits' before 5.7); top N plus 'other'.",
           ("name",), build=_mutex_waits,
           build_doc="SHOW ENGINE INNODB MUTEX (MySQL, Percona Server; MariaDB 10.6+ returns no rows)", headline=True),

    # --- row operations and change buffer ------------------------------------------------------
    Metric("innodb_queries_inside", "gauge", "", "Queries inside InnoDB (ROW OPERATIONS).",
           series=one(text("ROW OPERATIONS 'queries inside InnoDB'", "MySQL, MariaDB before 10.6",
                           lambda st: st.row_operations.queries_inside)), headline=True),
    Metric("innodb_queries_queued", "gauge", "", "Queries waiting to enter InnoDB (innodb_thread_concurrency).",
           series=one(text("ROW OPERATIONS 'queries in queue'", "MySQL, MariaDB before 10.6",
                           lambda st: st.row_operations.queries_queued)), headline=True),
    Metric("innodb_read_views_open", "gauge", "", "Read views open inside InnoDB.",
           series=one(text("ROW OPERATIONS 'read views open inside InnoDB'", ALL_FLAVORS,
                           lambda st: st.row_operations.read_views)), headline=True),
    Metric("innodb_change_buffer_size_pages", "gauge", "", "Change (insert) buffer size in pages; < 10000 is fine.",
           series=one(text("INSERT BUFFER 'Ibuf: size'", "MySQL, MariaDB before 11.0",
                           lambda st: st.insert_buffer.size),
                      counter("ibuf_size", "MySQL, MariaDB before 11.0")), headline=True),
    Metric("innodb_change_buffer_free_list_pages", "gauge", "", "Change buffer free list length in pages.",
           series=one(text("INSERT BUFFER 'free list len'", "MySQL, MariaDB before 11.0",
                           lambda st: st.insert_buffer.free_list_len))),
    Metric("innodb_change_buffer_segment_pages", "gauge", "", "Change buffer segment size in pages.",
           series=one(text("INSERT BUFFER 'seg size'", "MySQL, MariaDB before 11.0",
                           lambda st: st.insert_buffer.seg_size))),
    Metric("innodb_change_buffer_merges_total", "counter", "", "Change buffer merges.",
           series=one(text("INSERT BUFFER 'merges'", "MySQL, MariaDB before 11.0", lambda st: st.insert_buffer.merges))),
    Metric("innodb_change_buffer_operations_total", "counter", "",
           "Operations the change buffer merged into pages, or discarded, by kind of operation.",
           ("action", "operation"), build=_change_buffer_operations,
           build_doc="INSERT BUFFER 'merged operations' / 'discarded operations' (MySQL, MariaDB before 11.0)"),

    # --- file I/O (FILE I/O section) -----------------------------------------------------------
    Metric("innodb_io_pending_aio", "gauge", "", "Asynchronous I/O requests pending, by kind (FILE I/O).", ("kind",),
           series=tuple(((kind,), (text(f"FILE I/O '{label}'", "MySQL, MariaDB before 10.5", fn),))
                        for kind, label, fn in (
                            ("normal_read", "Pending normal aio reads", lambda st: st.file_io.pending_normal_reads),
                            ("normal_write", "aio writes", lambda st: st.file_io.pending_normal_writes),
                            ("ibuf_read", "ibuf aio reads", lambda st: st.file_io.pending_ibuf_reads),
                            ("log", "log i/o's", lambda st: st.file_io.pending_log_ios),
                            ("sync", "sync i/o's", lambda st: st.file_io.pending_sync_ios)))),
    Metric("innodb_io_pending_fsyncs", "gauge", "",
           "fsyncs pending, for the log and the buffer pool (MySQL), or all of them (MariaDB 10.5+).", ("kind",),
           series=(
               (("log",), (text("FILE I/O 'Pending flushes (fsync) log'", "MySQL", lambda st: st.file_io.pending_fsyncs_log),)),
               (("buffer_pool",), (text("FILE I/O 'buffer pool'", "MySQL", lambda st: st.file_io.pending_fsyncs_buffer_pool),)),
               (("all",), (text("FILE I/O 'Pending flushes (fsync)'", MARIADB, lambda st: st.file_io.pending_fsyncs),)),
           )),
    Metric("innodb_os_file_operations_total", "counter", "", "InnoDB file reads, writes and fsyncs (FILE I/O).",
           ("operation",), series=(
               (("read",), (text("FILE I/O 'OS file reads'", ALL_FLAVORS, lambda st: st.file_io.os_reads),)),
               (("write",), (text("FILE I/O 'OS file writes'", ALL_FLAVORS, lambda st: st.file_io.os_writes),)),
               (("fsync",), (text("FILE I/O 'OS fsyncs'", ALL_FLAVORS, lambda st: st.file_io.os_fsyncs),)),
           )),
)

BY_NAME = {m.name: m for m in CATALOGUE}


def _providers():
    for metric in CATALOGUE:
        for _, providers in metric.series:
            yield from providers


# What the sources must fetch, derived from the table so that it never drifts from it.
STATUS_NAMES = tuple(sorted({n for p in _providers() for n in p.status_names}))
VARIABLE_NAMES = tuple(sorted({n for p in _providers() for n in p.variable_names}))
NEEDED_COUNTERS = tuple(sorted({n for p in _providers() for n in p.counter_names}))


def evaluate(snapshot: Snapshot, top: int = 20) -> list[tuple[Metric, list[tuple[tuple[str, ...], float]]]]:
    """The model's metrics for one snapshot, each with its (label values, value) samples."""
    out = []
    for metric in CATALOGUE:
        if metric.produced_by != "model":
            continue
        samples: list[tuple[tuple[str, ...], float]] = []
        if metric.build is not None:
            samples.extend(metric.build(snapshot, top))
        for labels, providers in metric.series:
            for provider in providers:
                value = provider.get(snapshot)
                if value is not None:
                    samples.append((labels, float(value)))
                    break
        if samples:
            out.append((metric, samples))
    return out
