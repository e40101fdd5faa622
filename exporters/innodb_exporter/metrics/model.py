"""The metric contract: every metric derived from what a scrape read, and where each value comes from.

A metric is one ``Family`` declaration and one builder. Most metrics have fixed series, each with its
providers in order of preference: the first that has a value in this scrape wins (``Series``). A
provider names the source it reads and the flavours that have it, so this table is also the metrics
reference (docs/metrics.md is generated from it). Version differences live here as data: a provider
simply has no value on a server that lacks its status variable, counter or text line. Metrics whose
label values come from the data (latches, buffer pool instances) have a function instead (``Derived``).

The exporter's own metrics (up, per-source health, what is disabled) are declared in scraping/health.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

from ..sources import (EngineInnodbStatus, GlobalStatus, GlobalVariables, InnodbMetrics, InnodbTrx, PerfSchemaRedoFile,
                       Source)
from . import redo, settings
from .families import Family, Sample
from .snapshot import Snapshot


@dataclass(frozen=True)
class Provider:
    source: str  # the source it reads (its name)
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
    key = name.lower()  # the source keeps names lower-cased
    return Provider(GlobalStatus.name, f"`{name}`", flavors,
                    lambda s: _number((s.status or {}).get(key)), status_names=(name,))


def status_diff(a: str, b: str, flavors: str) -> Provider:
    key_a, key_b = a.lower(), b.lower()

    def get(s: Snapshot):
        status = s.status or {}
        x, y = _number(status.get(key_a)), _number(status.get(key_b))
        return None if x is None or y is None else x - y

    return Provider(GlobalStatus.name, f"`{a}` − `{b}`", flavors, get, status_names=(a, b))


def counter(name: str, flavors: str, divisor: float = 1) -> Provider:
    """An INNODB_METRICS counter, when it exists and is enabled; divided into base units (µs -> s)."""

    def get(s: Snapshot):
        row = (s.counters or {}).get(name)
        return row.count / divisor if row is not None and row.enabled else None

    return Provider(InnodbMetrics.name, f"`{name}`", flavors, get, counter_names=(name,))


def flush_point(name: str, flavors: str) -> Provider:
    """A flush point the server reports in INNODB_METRICS, as the age at which it acts (redo.point_to_age):
    MySQL 8.0+ compares an age plus its free-check margin (log_concurrency_margin) with the raw point."""

    def get(s: Snapshot):
        counters = s.counters or {}
        row, margin = counters.get(name), counters.get(MARGIN_COUNTER)
        if row is None or not row.enabled or s.server is None:
            return None
        margin_sn = margin.count if margin is not None and margin.enabled else None
        return redo.point_to_age(row.count, margin_sn, s.server.flavor, s.server.version, s.limits())

    return Provider(InnodbMetrics.name, f"`{name}` less the free-check margin (`{MARGIN_COUNTER}`, MySQL 8.0+)",
                    flavors, get, counter_names=(name, MARGIN_COUNTER), variable_names=redo.VARIABLES,
                    status_names=redo.STATUS)


MARGIN_COUNTER = "log_concurrency_margin"


def text(section: str, fields: tuple[str, ...], what: str, flavors: str,
         combine: Callable[..., float] | None = None) -> Provider:
    """Fields of one section of the parsed SHOW ENGINE INNODB STATUS, combined when there are several.

    A section or field the text lacks is None in the parse, and the provider then has no value; a
    misspelt field name raises, so that tests catch it.
    """

    def get(s: Snapshot):
        part = getattr(s.innodb_status, section) if s.innodb_status is not None else None
        if part is None:
            return None
        values = [getattr(part, name) for name in fields]
        if any(v is None for v in values):
            return None
        return combine(*values) if combine else values[0]

    return Provider(EngineInnodbStatus.name, what, flavors, get)


def value_of(source: type[Source], attribute: str, what: str, flavors: str) -> Provider:
    """An attribute of a source's typed value (INNODB_TRX, the REDO file summary)."""

    def get(s: Snapshot):
        value = getattr(s, source.field)
        return None if value is None else getattr(value, attribute)

    return Provider(source.name, f"{attribute} ({what})", flavors, get)


def computed(what: str, flavors: str, limit: str) -> Provider:
    """A REDO limit computed from the settings with the flavour's formula (redo.py)."""
    return Provider(GlobalVariables.name, what, flavors, lambda s: getattr(s.limits(), limit),
                    variable_names=redo.VARIABLES, status_names=redo.STATUS)


def variable(name: str, flavors: str) -> Provider:
    return Provider(GlobalVariables.name, f"`{name}`", flavors,
                    lambda s: _number((s.variables or {}).get(name)), variable_names=(name,))


def variable_product(a: str, b: str, flavors: str) -> Provider:
    def get(s: Snapshot):
        x = _number((s.variables or {}).get(a))
        y = _number((s.variables or {}).get(b))
        return None if x is None else x * (y if y is not None else 1)

    return Provider(GlobalVariables.name, f"`{a}` × `{b}`", flavors, get, variable_names=(a, b))


@dataclass(frozen=True)
class Series:
    """Fixed series: label values -> providers in order of preference."""

    chains: tuple[tuple[tuple[str, ...], tuple[Provider, ...]], ...]

    def samples(self, s: Snapshot) -> list[Sample]:
        out = []
        for labels, providers in self.chains:
            for provider in providers:
                value = provider.get(s)
                if value is not None:
                    out.append((labels, float(value)))
                    break
        return out

    def providers(self) -> Iterable[Provider]:
        for _, providers in self.chains:
            yield from providers

    def doc(self) -> str:
        parts = []
        for labels, providers in self.chains:
            chain = "; else ".join(f"{p.what} ({p.flavors})" for p in providers)
            parts.append((f"`{','.join(labels)}`: " if labels else "") + chain)
        return "<br>".join(parts)


@dataclass(frozen=True)
class Derived:
    """Series whose label values come from the data: ``fn`` returns (label values, value) pairs."""

    fn: Callable[[Snapshot], list[Sample]]
    what: str  # for the reference: where it comes from

    def samples(self, s: Snapshot) -> list[Sample]:
        return self.fn(s)

    def providers(self) -> Iterable[Provider]:
        return ()

    def doc(self) -> str:
        return self.what


@dataclass(frozen=True)
class Metric:
    family: Family
    builder: Series | Derived
    headline: bool = False  # part of the metric contract (docs/design.md)
    ceiling: float | None = None  # the largest possible value (ratios)

    @property
    def name(self) -> str:
        return self.family.name

    def samples(self, s: Snapshot) -> list[Sample]:
        """The metric's samples; a value no server can mean (negative, infinite, past the ceiling) is dropped."""
        return [(labels, v) for labels, v in self.builder.samples(s)
                if math.isfinite(v) and v >= 0 and (self.ceiling is None or v <= self.ceiling)]


def one(*providers: Provider) -> Series:
    return Series((((), providers),))


def by(**chains: tuple[Provider, ...] | Provider) -> Series:
    """One series per label value: ``by(free=(p1, p2), data=p3)``."""
    return Series(tuple(((value,), chain if isinstance(chain, tuple) else (chain,))
                        for value, chain in chains.items()))


def gauge(name, unit, help_, builder, labels=(), **kw) -> Metric:
    return Metric(Family(name, "gauge", unit, help_, labels), builder, **kw)


def counter_metric(name, unit, help_, builder, labels=(), **kw) -> Metric:
    return Metric(Family(name, "counter", unit, help_, labels), builder, **kw)


ALL_FLAVORS = "all"
MARIADB = "MariaDB 10.5+"
MARIADB_PERCONA = "MariaDB 10.5+, Percona Server"
MYSQL_8030 = "MySQL 8.0.30+ (8.4, 9.x)"
OFF = "; off by default"
NO_SYNC_ARRAY = "MySQL, MariaDB before 10.6"
CHANGE_BUFFER = "MySQL, MariaDB before 11.0"


# --- data-driven series ---------------------------------------------------------------------------

def _semaphores(s: Snapshot):
    return s.innodb_status.semaphores if s.innodb_status is not None else None


def _semaphores_whole(s: Snapshot):
    """SEMAPHORES when the text holds all of it. Where the text breaks off in it the waits are unknown:
    more threads may wait, and longer, than the lines before the cut show."""
    sem = _semaphores(s)
    return sem if sem is not None and sem.whole else None


def _semaphore_waiting(s: Snapshot) -> list[Sample]:
    sem = _semaphores_whole(s)
    if sem is None:
        return []
    counts: dict[str, int] = {}
    for wait in sem.waits:
        counts[wait.latch] = counts.get(wait.latch, 0) + 1
    return [((latch,), float(n)) for latch, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def _semaphore_longest(s: Snapshot) -> float | None:
    """None where the server keeps no sync array (MariaDB 10.6+ prints an empty SEMAPHORES section): a 0
    there would read as "no long wait" where nothing is measured, and the alert on it could never fire."""
    sem = _semaphores_whole(s)
    if sem is None or (sem.reservation_count is None and not sem.waits):
        return None
    return max((w.seconds for w in sem.waits), default=0.0)


def _spin(attribute: str):
    def build(s: Snapshot) -> list[Sample]:
        sem = _semaphores(s)
        if sem is None:
            return []
        return [((mode,), float(getattr(stats, attribute))) for mode, stats in sem.spin.items()
                if getattr(stats, attribute) is not None]

    return build


def _latch_waits(s: Snapshot) -> list[Sample]:
    return [((latch.kind, latch.name), float(latch.waits)) for latch in s.latches or () if latch.enabled]


def _latch_seconds(s: Snapshot) -> list[Sample]:
    return [((latch.kind, latch.name), latch.seconds) for latch in s.latches or () if latch.enabled and latch.timed]


def _mutex_waits(s: Snapshot) -> list[Sample]:
    if s.mutexes is None:
        return []
    return [((m.name,), float(m.waits)) for m in sorted(s.mutexes.latches, key=lambda m: m.name)
            if m.waits is not None]


def _instances(s: Snapshot):
    return sorted(s.innodb_status.buffer_pool_instances.items()) if s.innodb_status is not None else []


def _instance_fields(fields: tuple[tuple[str, str], ...]):
    def build(s: Snapshot) -> list[Sample]:
        return [((str(pool), label), float(getattr(bp, attribute)))
                for pool, bp in _instances(s) for label, attribute in fields if getattr(bp, attribute) is not None]

    return build


def _instance_pending_reads(s: Snapshot) -> list[Sample]:
    return [((str(pool),), float(bp.pending_reads)) for pool, bp in _instances(s) if bp.pending_reads is not None]


def _change_buffer_operations(s: Snapshot) -> list[Sample]:
    ib = s.innodb_status.insert_buffer if s.innodb_status is not None else None
    if ib is None:
        return []
    return [((action, operation), float(value))
            for action, counts in (("merged", ib.merged), ("discarded", ib.discarded))
            for operation, value in counts.items()]


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
    GlobalVariables.name, "`innodb_max_purge_lag`, `innodb_max_purge_lag_delay` and the history length, by "
    "MariaDB's formula", MARIADB, _purge_delay_mariadb,
    status_names=("Innodb_history_list_length",),
    variable_names=("innodb_max_purge_lag", "innodb_max_purge_lag_delay"))

_PURGE_DELAY_COUNTER = counter("purge_dml_delay_usec", "MySQL" + OFF, 1e6)


def _purge_delay_mysql(s: Snapshot):
    """MySQL sets purge_dml_delay_usec only while innodb_max_purge_lag is set (trx0purge.cc), and keeps the
    last delay after it is set back to 0, when no DML is delayed."""
    delay = _PURGE_DELAY_COUNTER.get(s)
    if delay and _number((s.variables or {}).get("innodb_max_purge_lag")) == 0:
        return 0.0
    return delay


PURGE_DELAY_MYSQL = Provider(
    InnodbMetrics.name, "`purge_dml_delay_usec`, 0 while `innodb_max_purge_lag` is 0", "MySQL" + OFF,
    _purge_delay_mysql, variable_names=("innodb_max_purge_lag",), counter_names=("purge_dml_delay_usec",))

SEMAPHORE_WAITS = "SEMAPHORES '--Thread … has waited at …' entries"
INSTANCES = "INDIVIDUAL BUFFER POOL INFO (with 2+ instances)"
REDO_COMPUTED = "computed from the REDO settings (docs/redo-model.md)"
TRAILING = f"{MYSQL_8030}, refreshed in the background: trails the log"
PERF_REDO = "MySQL, Percona Server with performance_schema; MariaDB 10.5+ does not instrument its REDO"


def _lsn(field: str, what: str, flavors: str = ALL_FLAVORS) -> Provider:
    return text("log", (field,), f"LOG '{what}'", flavors)


def _pool(field: str, what: str, flavors: str = ALL_FLAVORS) -> Provider:
    return text("buffer_pool", (field,), f"BUFFER POOL '{what}'", flavors)


def _minus(a, b):
    return a - b


# The LSNs and checkpoint age come from a source that says "now": the status variables MariaDB and Percona
# compute when read, INNODB_METRICS's log_lsn_* (read live, when on), the status text. MySQL 8.0.30+'s
# Innodb_redo_log_*_lsn are copies refreshed by a background thread (log_update_exported_variables, about
# every 10 ms and at checkpoints) and trail the log under load: the last resort.
CHECKPOINT_AGE = one(status("Innodb_checkpoint_age", MARIADB_PERCONA),
                     counter("log_lsn_checkpoint_age", ALL_FLAVORS + OFF),
                     text("log", ("checkpoint_age",), "LOG 'Checkpoint age'", "Percona Server, XtraDB"),
                     text("log", ("lsn", "last_checkpoint_lsn"), "LOG 'Log sequence number' − 'Last checkpoint at'",
                          ALL_FLAVORS, _minus),
                     status_diff("Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn", TRAILING))
MODIFIED_AGE = one(text("log", ("modified_age",), "LOG 'Modified age'", "Percona Server 5.7, XtraDB"),
                   text("log", ("lsn", "pages_flushed_lsn"), "LOG 'Log sequence number' − 'Pages flushed up to'",
                        ALL_FLAVORS, _minus))


def _flush_age(s: Snapshot) -> float | None:
    """The age InnoDB compares with the async and sync flush points. MariaDB 10.5+ compares checkpoint age
    (mtr_t's log_close); MySQL, Percona Server and older MariaDB the modified age, LSN minus the oldest
    unflushed change (log_checkpoint_margin, the page cleaner's flush recommendation), which is smaller."""
    if s.server is None:
        return None
    checkpoint = redo.flush_points_apply_to_checkpoint_age(s.server.flavor, s.server.version)
    samples = (CHECKPOINT_AGE if checkpoint else MODIFIED_AGE).samples(s)
    return samples[0][1] if samples else None


FLUSH_AGE = Provider(
    EngineInnodbStatus.name, "checkpoint age (MariaDB 10.5+) or modified age (else), as above", ALL_FLAVORS,
    _flush_age, status_names=tuple(n for p in CHECKPOINT_AGE.providers() for n in p.status_names),
    counter_names=tuple(n for p in CHECKPOINT_AGE.providers() for n in p.counter_names))

METRICS: tuple[Metric, ...] = (
    # --- REDO and checkpoint age ---------------------------------------------------------------
    gauge("innodb_checkpoint_age_bytes", "bytes",
          "Current LSN minus the last checkpoint LSN: REDO that crash recovery would have to apply.",
          CHECKPOINT_AGE, headline=True),
    gauge("innodb_checkpoint_age_max_bytes", "bytes",
          "The server's hard limit for checkpoint age: above it user threads wait for a checkpoint (MySQL 8.0+: "
          "the soft capacity less the free-check margin; MariaDB: max_checkpoint_age).",
          one(status("Innodb_checkpoint_max_age", MARIADB_PERCONA),
              text("log", ("max_checkpoint_age",), "LOG 'Max checkpoint age'", "Percona Server, XtraDB"),
              computed(REDO_COMPUTED, "MySQL 5.7+, MariaDB 10.0+", "max_checkpoint_age")), headline=True),
    gauge("innodb_checkpoint_age_async_bytes", "bytes",
          "Age at which adaptive flushing turns aggressive (async preflush point, max_modified_age_async; on MySQL "
          "8.0+ less the free-check margin the server adds to the age).",
          one(flush_point("log_max_modified_age_async", ALL_FLAVORS + OFF),
              computed(REDO_COMPUTED, "MySQL 5.7+, MariaDB 10.0+", "async_age")), headline=True),
    gauge("innodb_checkpoint_age_sync_bytes", "bytes",
          "Age at which InnoDB flushes synchronously (max_modified_age_sync; on MySQL 8.0+ less the free-check "
          "margin). On MariaDB 10.5+ that is the max checkpoint age, where it flushes furiously.",
          one(flush_point("log_max_modified_age_sync", "MySQL" + OFF),
              computed(REDO_COMPUTED, "MySQL 5.7+, MariaDB 10.0+ (10.5+: the max checkpoint age)", "sync_age")),
          headline=True),
    gauge("innodb_redo_capacity_bytes", "bytes",
          "Total REDO log capacity: innodb_redo_log_capacity, or innodb_log_file_size × innodb_log_files_in_group.",
          one(variable("innodb_redo_log_capacity", MYSQL_8030),
              variable_product("innodb_log_file_size", "innodb_log_files_in_group",
                               "MySQL before 8.0.30, MariaDB (one file since 10.5)")), headline=True),
    gauge("innodb_redo_lsn_bytes", "bytes", "Current log sequence number (bytes of REDO ever written).",
          one(status("Innodb_lsn_current", MARIADB_PERCONA),
              counter("log_lsn_current", ALL_FLAVORS + OFF),
              _lsn("lsn", "Log sequence number"),
              status("Innodb_redo_log_current_lsn", TRAILING)), headline=True),
    gauge("innodb_redo_flushed_lsn_bytes", "bytes", "LSN up to which the REDO log is flushed to disk.",
          one(status("Innodb_lsn_flushed", MARIADB_PERCONA),
              counter("log_lsn_last_flush", ALL_FLAVORS + OFF),
              _lsn("flushed_lsn", "Log flushed up to"),
              status("Innodb_redo_log_flushed_to_disk_lsn", TRAILING)), headline=True),
    gauge("innodb_redo_checkpoint_lsn_bytes", "bytes", "LSN of the last checkpoint.",
          one(status("Innodb_lsn_last_checkpoint", MARIADB_PERCONA),
              counter("log_lsn_last_checkpoint", ALL_FLAVORS + OFF),
              _lsn("last_checkpoint_lsn", "Last checkpoint at"),
              status("Innodb_redo_log_checkpoint_lsn", TRAILING)), headline=True),
    gauge("innodb_redo_pages_flushed_lsn_bytes", "bytes",
          "LSN of the oldest page modification not yet flushed ('Pages flushed up to').",
          one(_lsn("pages_flushed_lsn", "Pages flushed up to"),
              counter("log_lsn_buf_pool_oldest", "MySQL 5.7, MariaDB" + OFF))),
    gauge("innodb_redo_modified_age_bytes", "bytes",
          "Current LSN minus the oldest unflushed modification: the age MySQL compares with the async and sync "
          "flush points.", MODIFIED_AGE),
    gauge("innodb_redo_flush_age_bytes", "bytes",
          "The age InnoDB compares with the async and sync flush points: the modified age on MySQL, Percona "
          "Server and MariaDB before 10.5, the checkpoint age on MariaDB 10.5+.", one(FLUSH_AGE), headline=True),
    counter_metric("innodb_redo_written_bytes_total", "bytes", "Bytes written to the REDO log.",
                   one(status("Innodb_os_log_written", ALL_FLAVORS), counter("os_log_bytes_written", ALL_FLAVORS)),
                   headline=True),
    counter_metric("innodb_redo_writes_total", "", "Physical writes to the REDO log.",
                   one(status("Innodb_log_writes", ALL_FLAVORS), counter("log_writes", ALL_FLAVORS)), headline=True),
    counter_metric("innodb_redo_fsyncs_total", "",
                   "fsync() calls on the REDO log. MariaDB 10.8+ counts them only inside Innodb_data_fsyncs.",
                   one(status("Innodb_os_log_fsyncs", "MySQL, Percona Server, MariaDB before 10.8"),
                       counter("os_log_fsyncs", "MySQL, MariaDB before 10.8")), headline=True),
    counter_metric("innodb_redo_file_misc_operations_total", "",
                   "Timed operations on the REDO log files other than reads and writes: the fsyncs, and the opens, "
                   "closes and creates of file rotation, which are few (performance_schema COUNT_MISC).",
                   one(value_of(PerfSchemaRedoFile, "misc_operations", "COUNT_MISC of innodb_log_file", PERF_REDO)),
                   headline=True),
    counter_metric("innodb_redo_file_misc_seconds_total", "seconds",
                   "Time of those operations (performance_schema SUM_TIMER_MISC): rate(this) / "
                   "rate(innodb_redo_file_misc_operations_total) is the REDO fsync latency, to within the few "
                   "rotation operations.",
                   one(value_of(PerfSchemaRedoFile, "misc_seconds", "SUM_TIMER_MISC of innodb_log_file", PERF_REDO)),
                   headline=True),
    gauge("innodb_redo_fsync_latency_seconds", "seconds",
          "InnoDB's own REDO flush time over its last averaging window: average and maximum per fsync.",
          by(avg=counter("log_flush_avg_time", "MySQL 8.0+" + OFF, 1e6),
             max=counter("log_flush_max_time", "MySQL 8.0+" + OFF, 1e6)), ("stat",), headline=True),
    counter_metric("innodb_redo_log_waits_total", "", "Waits because the log buffer was too small and had to be flushed.",
                   one(status("Innodb_log_waits", ALL_FLAVORS), counter("log_waits", ALL_FLAVORS)), headline=True),

    # --- flushing ------------------------------------------------------------------------------
    counter_metric("innodb_buffer_pool_pages_flushed_total", "", "Pages flushed from the buffer pool, all kinds.",
                   one(status("Innodb_buffer_pool_pages_flushed", ALL_FLAVORS)), headline=True),
    counter_metric("innodb_flush_pages_total", "", "Pages flushed, by kind of flushing.", by(
        adaptive=counter("buffer_flush_adaptive_total_pages", ALL_FLAVORS + OFF),
        background=counter("buffer_flush_background_total_pages", ALL_FLAVORS + OFF),
        sync=counter("buffer_flush_sync_total_pages", ALL_FLAVORS + OFF),
        lru=(status("Innodb_buffer_pool_pages_LRU_flushed", MARIADB),
             counter("buffer_LRU_batch_flush_total_pages", "MySQL" + OFF + "; MariaDB 10.6+ on")),
        neighbor=counter("buffer_flush_neighbor_total_pages", ALL_FLAVORS + OFF),
        # Each single page flush call flushes at most one page, from a user thread.
        single_page=counter("buffer_LRU_single_flush_num_scan", "MySQL" + OFF),
    ), ("kind",), headline=True),
    gauge("innodb_flush_target_pages", "",
          "Pages adaptive flushing was asked to flush in its last iteration: all requested, and those for REDO age.",
          by(requested=counter("buffer_flush_n_to_flush_requested", ALL_FLAVORS + OFF),
             by_age=counter("buffer_flush_n_to_flush_by_age", ALL_FLAVORS + OFF)), ("reason",), headline=True),
    gauge("innodb_flush_io_capacity_ratio", "",
          "Share of innodb_io_capacity adaptive flushing asks for, because of dirty pages or REDO age "
          "(buffer_flush_pct_for_dirty / _lsn ÷ 100; can exceed 1). On MariaDB 'dirty_pages' is the larger of both.",
          by(dirty_pages=counter("buffer_flush_pct_for_dirty", ALL_FLAVORS + OFF, 100),
             redo=counter("buffer_flush_pct_for_lsn", ALL_FLAVORS + OFF, 100)), ("reason",)),
    gauge("innodb_flush_avg_seconds", "seconds",
          "Average time of one flushing pass over InnoDB's last averaging window (innodb_flushing_avg_loops); "
          "healthy below 1 s.",
          by(page_cleaner=counter("buffer_flush_avg_time", "MySQL" + OFF, 1e3),
             adaptive=(counter("buffer_flush_adaptive_avg_time_est", "MySQL" + OFF, 1e3),
                       counter("buffer_flush_adaptive_avg_time", "MariaDB" + OFF, 1e3)),
             lru=counter("buffer_LRU_batch_flush_avg_time_est", "MySQL" + OFF, 1e3)), ("kind",)),
    counter_metric("innodb_flush_sync_waits_total", "",
                   "Times a thread waited for a synchronous flush to free REDO space (buffer_flush_sync_waits).",
                   one(counter("buffer_flush_sync_waits", ALL_FLAVORS + OFF))),

    # --- free pages and LRU --------------------------------------------------------------------
    counter_metric("innodb_free_page_waits_total", "",
                   "Rounds in which a user thread found no free page and had to wait or retry "
                   "(Innodb_buffer_pool_wait_free).",
                   one(status("Innodb_buffer_pool_wait_free", ALL_FLAVORS), counter("buffer_pool_wait_free", ALL_FLAVORS)),
                   headline=True),
    counter_metric("innodb_lru_get_free_search_total", "", "Requests for a free page (buffer_LRU_get_free_search).",
                   one(counter("buffer_LRU_get_free_search", ALL_FLAVORS + OFF)), headline=True),
    counter_metric("innodb_lru_get_free_loops_total", "",
                   "Retries of a free page request because the free list was empty (buffer_LRU_get_free_loops).",
                   one(counter("buffer_LRU_get_free_loops", ALL_FLAVORS + OFF)), headline=True),
    counter_metric("innodb_lru_get_free_waits_total", "",
                   "Free page requests that slept waiting for a free page (buffer_LRU_get_free_waits).",
                   one(counter("buffer_LRU_get_free_waits", "MySQL, MariaDB before 10.11" + OFF)), headline=True),
    gauge("innodb_buffer_pool_pages", "", "Buffer pool pages by state (dirty pages are part of data).", by(
        free=(status("Innodb_buffer_pool_pages_free", ALL_FLAVORS), _pool("free", "Free buffers")),
        data=(status("Innodb_buffer_pool_pages_data", ALL_FLAVORS), _pool("database_pages", "Database pages")),
        dirty=(status("Innodb_buffer_pool_pages_dirty", ALL_FLAVORS), _pool("modified_pages", "Modified db pages")),
        misc=(status("Innodb_buffer_pool_pages_misc", ALL_FLAVORS),
              text("buffer_pool", ("size", "free", "database_pages"), "BUFFER POOL size − free − data", ALL_FLAVORS,
                   lambda size, free, data: size - free - data)),
        total=(status("Innodb_buffer_pool_pages_total", ALL_FLAVORS), _pool("size", "Buffer pool size")),
    ), ("state",), headline=True),
    gauge("innodb_buffer_pool_pending_reads", "", "Buffer pool reads waiting for I/O ('Pending reads').",
          one(_pool("pending_reads", "Pending reads")), headline=True),
    gauge("innodb_buffer_pool_pending_writes", "", "Buffer pool writes waiting for I/O, by kind ('Pending writes').",
          by(lru=_pool("pending_writes_lru", "Pending writes: LRU"),
             flush_list=_pool("pending_writes_flush_list", "Pending writes: flush list"),
             single_page=_pool("pending_writes_single_page", "Pending writes: single page",
                               "MySQL, MariaDB before 10.5")), ("kind",), headline=True),
    gauge("innodb_buffer_pool_hit_ratio", "",
          "Buffer pool hit rate since the previous status printout ('Buffer pool hit rate N / 1000').",
          one(_pool("hit_rate", "Buffer pool hit rate")), ceiling=1.0),
    gauge("innodb_buffer_pool_instance_pages", "", "Pages by state in each buffer pool instance.",
          Derived(_instance_fields((("total", "size"), ("free", "free"), ("data", "database_pages"),
                                    ("dirty", "modified_pages"))), INSTANCES), ("pool", "state")),
    gauge("innodb_buffer_pool_instance_pending_reads", "", "Pending reads in each buffer pool instance.",
          Derived(_instance_pending_reads, INSTANCES), ("pool",)),
    gauge("innodb_buffer_pool_instance_pending_writes", "", "Pending writes in each buffer pool instance.",
          Derived(_instance_fields((("lru", "pending_writes_lru"), ("flush_list", "pending_writes_flush_list"),
                                    ("single_page", "pending_writes_single_page"))), INSTANCES), ("pool", "kind")),

    # --- purge and transactions ----------------------------------------------------------------
    gauge("innodb_history_list_length", "", "Undo log records not yet purged (purge lag). Should not grow constantly.",
          one(status("Innodb_history_list_length", MARIADB_PERCONA),
              counter("trx_rseg_history_len", ALL_FLAVORS),
              text("transactions", ("history_list_length",), "TRANSACTIONS 'History list length'", ALL_FLAVORS)),
          headline=True),
    gauge("innodb_purge_lag_transactions", "",
          "Transaction id counter minus the id purge is done for: transactions whose undo is not purged yet.",
          one(text("transactions", ("trx_id_counter", "purge_done_for"),
                   "TRANSACTIONS 'Trx id counter' − 'Purge done for'", ALL_FLAVORS, _minus)), headline=True),
    gauge("innodb_purge_dml_delay_seconds", "seconds",
          "Current delay imposed on each DML row operation because of purge lag (innodb_max_purge_lag).",
          one(PURGE_DELAY_MARIADB, PURGE_DELAY_MYSQL),
          headline=True),
    counter_metric("innodb_purge_undo_log_pages_total", "", "Undo log pages purged (purge progress).",
                   one(counter("purge_undo_log_pages", ALL_FLAVORS + OFF)), headline=True),
    gauge("innodb_active_transactions", "", "Transactions open in InnoDB now.",
          one(value_of(InnodbTrx, "active", "COUNT(*)", ALL_FLAVORS),
              text("transactions", ("active",), "TRANSACTIONS: ---TRANSACTION entries that are ACTIVE", ALL_FLAVORS)),
          headline=True),
    gauge("innodb_oldest_transaction_seconds", "seconds", "Age of the oldest open transaction: what holds purge back.",
          one(value_of(InnodbTrx, "oldest_seconds", "MAX(NOW() − trx_started)", ALL_FLAVORS),
              text("transactions", ("oldest_active_seconds",), "TRANSACTIONS: largest 'ACTIVE N sec'", ALL_FLAVORS)),
          headline=True),
    gauge("innodb_lock_waiting_transactions", "", "Transactions waiting for a row lock now.",
          one(value_of(InnodbTrx, "lock_waits", "trx_state = 'LOCK WAIT'", ALL_FLAVORS),
              text("transactions", ("lock_waits",), "TRANSACTIONS: 'LOCK WAIT' entries", ALL_FLAVORS))),

    # --- contention ----------------------------------------------------------------------------
    gauge("innodb_semaphore_waiting_threads", "",
          "Threads waiting for a latch now, per latch: its name where the server prints one, else where it was "
          "created (file:line).", Derived(_semaphore_waiting, SEMAPHORE_WAITS), ("latch",), headline=True),
    gauge("innodb_semaphore_longest_wait_seconds", "seconds",
          "Longest current semaphore wait (InnoDB aborts the server when one reaches 600 s).",
          one(Provider(EngineInnodbStatus.name, "SEMAPHORES '… for N seconds the semaphore'", NO_SYNC_ARRAY,
                       _semaphore_longest)), headline=True),
    counter_metric("innodb_semaphore_os_wait_reservations_total", "", "OS wait array reservations (SEMAPHORES).",
                   one(text("semaphores", ("reservation_count",), "SEMAPHORES 'reservation count'", NO_SYNC_ARRAY))),
    counter_metric("innodb_semaphore_os_wait_signals_total", "", "OS wait array signals (SEMAPHORES).",
                   one(text("semaphores", ("signal_count",), "SEMAPHORES 'signal count'", NO_SYNC_ARRAY))),
    counter_metric("innodb_semaphore_spin_waits_total", "", "Spin waits by lock mode (SEMAPHORES).",
                   Derived(_spin("spins"), "SEMAPHORES 'RW-shared spins N' lines (MySQL, MariaDB before 10.6)"),
                   ("mode",)),
    counter_metric("innodb_semaphore_spin_rounds_total", "", "Spin rounds by lock mode (SEMAPHORES).",
                   Derived(_spin("rounds"), "SEMAPHORES 'rounds N' (MySQL, MariaDB before 10.6)"), ("mode",)),
    counter_metric("innodb_semaphore_os_waits_total", "", "Waits that went to the OS, by lock mode (SEMAPHORES).",
                   Derived(_spin("os_waits"), "SEMAPHORES 'OS waits N' (MySQL, MariaDB before 10.6)"), ("mode",)),
    counter_metric("innodb_latch_waits_total", "",
                   "performance_schema waits per InnoDB latch instrument, for every instrument that is enabled.",
                   Derived(_latch_waits, "events_waits_summary_global_by_event_name COUNT_STAR of the enabled "
                                         "wait/synch/%/innodb/% instruments"), ("kind", "name"), headline=True),
    counter_metric("innodb_latch_wait_seconds_total", "seconds",
                   "performance_schema time waited per InnoDB latch instrument, for every instrument that is timed.",
                   Derived(_latch_seconds, "events_waits_summary_global_by_event_name SUM_TIMER_WAIT of the enabled "
                                           "and timed instruments"), ("kind", "name"), headline=True),
    counter_metric("innodb_mutex_waits_total", "",
                   "Waits per latch from SHOW ENGINE INNODB MUTEX ('waits', or 'os_waits' before 5.7).",
                   Derived(_mutex_waits, "SHOW ENGINE INNODB MUTEX (MySQL, Percona Server, MariaDB before 10.6)"),
                   ("name",), headline=True),

    # --- row operations and change buffer ------------------------------------------------------
    gauge("innodb_queries_inside", "", "Queries inside InnoDB (ROW OPERATIONS).",
          one(text("row_operations", ("queries_inside",), "ROW OPERATIONS 'queries inside InnoDB'", NO_SYNC_ARRAY)),
          headline=True),
    gauge("innodb_queries_queued", "", "Queries waiting to enter InnoDB (innodb_thread_concurrency).",
          one(text("row_operations", ("queries_queued",), "ROW OPERATIONS 'queries in queue'", NO_SYNC_ARRAY)),
          headline=True),
    gauge("innodb_read_views_open", "", "Read views open inside InnoDB.",
          one(text("row_operations", ("read_views",), "ROW OPERATIONS 'read views open inside InnoDB'", ALL_FLAVORS)),
          headline=True),
    gauge("innodb_change_buffer_size_pages", "", "Change (insert) buffer size in pages; < 10000 is fine.",
          one(text("insert_buffer", ("size",), "INSERT BUFFER 'Ibuf: size'", CHANGE_BUFFER),
              counter("ibuf_size", CHANGE_BUFFER)), headline=True),
    gauge("innodb_change_buffer_free_list_pages", "", "Change buffer free list length in pages.",
          one(text("insert_buffer", ("free_list_len",), "INSERT BUFFER 'free list len'", CHANGE_BUFFER))),
    gauge("innodb_change_buffer_segment_pages", "", "Change buffer segment size in pages.",
          one(text("insert_buffer", ("seg_size",), "INSERT BUFFER 'seg size'", CHANGE_BUFFER))),
    counter_metric("innodb_change_buffer_merges_total", "", "Change buffer merges.",
                   one(text("insert_buffer", ("merges",), "INSERT BUFFER 'merges'", CHANGE_BUFFER))),
    counter_metric("innodb_change_buffer_operations_total", "",
                   "Operations the change buffer merged into pages, or discarded, by kind of operation.",
                   Derived(_change_buffer_operations, "INSERT BUFFER 'merged operations' / 'discarded operations' "
                                                      "(MySQL, MariaDB before 11.0)"), ("action", "operation")),

    # --- file I/O (FILE I/O section) -----------------------------------------------------------
    gauge("innodb_io_pending_aio", "", "Asynchronous I/O requests pending, by kind (FILE I/O).", Series(tuple(
        ((kind,), (text("file_io", (field,), f"FILE I/O '{label}'", "MySQL, MariaDB before 10.5"),))
        for kind, label, field in (
            ("normal_read", "Pending normal aio reads", "pending_normal_reads"),
            ("normal_write", "aio writes", "pending_normal_writes"),
            ("ibuf_read", "ibuf aio reads", "pending_ibuf_reads"),
            ("log", "log i/o's", "pending_log_ios"),
            ("sync", "sync i/o's", "pending_sync_ios")))), ("kind",)),
    gauge("innodb_io_pending_fsyncs", "",
          "fsyncs pending, for the log and the buffer pool (MySQL), or all of them (MariaDB 10.5+).",
          by(log=text("file_io", ("pending_fsyncs_log",), "FILE I/O 'Pending flushes (fsync) log'", "MySQL"),
             buffer_pool=text("file_io", ("pending_fsyncs_buffer_pool",), "FILE I/O 'buffer pool'", "MySQL"),
             all=text("file_io", ("pending_fsyncs",), "FILE I/O 'Pending flushes (fsync)'", MARIADB)), ("kind",)),
    counter_metric("innodb_os_file_operations_total", "", "InnoDB file reads, writes and fsyncs (FILE I/O).",
                   by(read=text("file_io", ("os_reads",), "FILE I/O 'OS file reads'", ALL_FLAVORS),
                      write=text("file_io", ("os_writes",), "FILE I/O 'OS file writes'", ALL_FLAVORS),
                      fsync=text("file_io", ("os_fsyncs",), "FILE I/O 'OS fsyncs'", ALL_FLAVORS)), ("operation",)),
)

BY_NAME = {m.name: m for m in METRICS}


def _providers() -> Iterable[Provider]:
    for metric in METRICS:
        yield from metric.builder.providers()


# What the sources must fetch, derived from the table so that it never drifts from it, and the settings a
# tuner changes (settings.py), read with them.
STATUS_NAMES = tuple(sorted({n for p in _providers() for n in p.status_names} | set(settings.STATUS_NAMES)))
VARIABLE_NAMES = tuple(sorted({n for p in _providers() for n in p.variable_names} | set(settings.NAMES)))
# The INNODB_METRICS counters the metrics read: what `innodb_monitor_enable` must list (the one list;
# provisioning/mysql/monitoring.cnf is generated from it).
NEEDED_COUNTERS = tuple(sorted({n for p in _providers() for n in p.counter_names}))


def evaluate(snapshot: Snapshot) -> list[tuple[Metric, list[Sample]]]:
    """The model's metrics for one snapshot, each with its samples; metrics without any are left out."""
    out = []
    for metric in METRICS:
        samples = metric.samples(snapshot)
        if samples:
            out.append((metric, samples))
    return out


# Why a metric with fixed series has no value, most actionable first (innodb_exporter_metric_absent).
ABSENT_REASONS = ("monitor_disabled", "source_failed", "source_disabled", "source_unsupported", "not_provided")


def absent(snapshot: Snapshot, source_states: dict[str, str], present: set[str]) -> list[tuple[str, str]]:
    """(metric, reason) for each fixed-series metric not in ``present`` (those with a value in this scrape).

    ``source_states`` maps a source's name to "read", "failed" or "unsupported"; a source not in it is disabled.
    """
    out = []
    for metric in METRICS:
        if metric.name in present or not isinstance(metric.builder, Series):
            continue
        reasons = {_why(p, snapshot, source_states) for p in metric.builder.providers()}
        out.append((metric.name, min(reasons, key=ABSENT_REASONS.index)))
    return out


def _why(provider: Provider, snapshot: Snapshot, source_states: dict[str, str]) -> str:
    state = source_states.get(provider.source, "disabled")
    if state != "read":
        return {"failed": "source_failed", "unsupported": "source_unsupported"}.get(state, "source_disabled")
    counters = snapshot.counters or {}
    if any(name in counters and not counters[name].enabled for name in provider.counter_names):
        return "monitor_disabled"
    return "not_provided"
