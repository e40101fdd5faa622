"""The vendor-neutral REDO model: capacity, max checkpoint age, async and sync flush points.

Servers expose these limits unevenly: MariaDB 10.5+ and Percona Server print the max checkpoint age
(``Innodb_checkpoint_max_age``), MySQL prints none of them, and the async/sync points are only in
INNODB_METRICS counters that are off by default. Where the server does not say, the limit is computed
from the settings with the server's own formula, chosen from ``RULES`` by flavour and version.
docs/redo-model.md gives each formula with the source lines it comes from.

Every limit is the age at which the server acts. MySQL 8.0+ adds its free-check margin to an age before
it compares the age with its async and sync points (``log_sync_flush_lsn``; the page cleaner's
``limit_for_dirty_page_age``) and with its soft capacity (``log_free_check``), so the age at which it
acts is each of those less the margin, and they come in the order the server acts: async, sync, max.

All functions here are pure: settings in, bytes out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

BLOCK = 512  # OS_FILE_LOG_BLOCK_SIZE: LSN limits are aligned to log blocks
BLOCK_DATA = 496  # bytes of payload per 512-byte log block (MySQL 8.0 "sn" units)
LOG_FILE_HDR_SIZE = 2048

# The settings the formulas read (SHOW GLOBAL VARIABLES) and the status they prefer (SHOW GLOBAL STATUS).
VARIABLES = (
    "innodb_redo_log_capacity",
    "innodb_log_file_size",
    "innodb_log_files_in_group",
    "innodb_page_size",
    "innodb_thread_concurrency",
)
STATUS = ("Innodb_redo_log_capacity_resized",)


@dataclass(frozen=True)
class Settings:
    """What the formulas need, in bytes and counts."""

    log_file_size: int | None = None
    log_files_in_group: int = 1
    redo_log_capacity: int | None = None  # MySQL 8.0.30+
    page_size: int = 16384
    thread_concurrency: int = 0

    @classmethod
    def from_variables(cls, variables: dict[str, str], status: dict[str, str] | None = None) -> Settings:
        def num(name, default=None):
            value = variables.get(name)
            return int(value) if value not in (None, "") and str(value).isdigit() else default

        capacity = num("innodb_redo_log_capacity")
        # During an online resize the capacity in use differs from the setting; the server reports it.
        resized = (status or {}).get("innodb_redo_log_capacity_resized")
        if capacity is not None and resized and resized.isdigit() and int(resized) > 0:
            capacity = int(resized)
        return cls(
            log_file_size=num("innodb_log_file_size"),
            log_files_in_group=num("innodb_log_files_in_group", 1),
            redo_log_capacity=capacity,
            page_size=num("innodb_page_size", 16384),
            thread_concurrency=num("innodb_thread_concurrency", 0),
        )


@dataclass(frozen=True)
class Limits:
    capacity: int | None = None  # total REDO bytes on disk
    max_checkpoint_age: int | None = None  # writers stall above this checkpoint age
    async_age: int | None = None  # adaptive flushing turns aggressive (async preflush)
    sync_age: int | None = None  # synchronous flushing
    # MySQL 8.0+: the free-check margin, in LSN bytes, that the server adds to an age before comparing it
    # with its raw points (the log_max_modified_age_* counters); already taken off the three ages above.
    margin: int = 0


def _down(value: float, align: int = BLOCK) -> int:
    return int(value) // align * align


def _up(value: float, align: int = BLOCK) -> int:
    return -(-int(value) // align) * align


def sn_to_lsn(sn: int) -> int:
    """MySQL 8.0 counts some margins in "sn" (payload bytes); LSNs also count block headers."""
    return sn // BLOCK_DATA * BLOCK + sn % BLOCK_DATA + 12


def files_capacity(s: Settings) -> int | None:
    """``innodb_redo_log_capacity``, else ``innodb_log_file_size × innodb_log_files_in_group``."""
    if s.redo_log_capacity:
        return s.redo_log_capacity
    if s.log_file_size:
        return s.log_file_size * s.log_files_in_group
    return None


def mysql57(s: Settings) -> Limits:
    """MySQL 5.7 ``log_calc_max_ages()`` (log0log.cc); also MariaDB 10.0-10.4."""
    capacity = files_capacity(s)
    if not capacity:
        return Limits()
    smallest = s.log_files_in_group * (s.log_file_size - LOG_FILE_HDR_SIZE)
    smallest -= smallest // 10
    free = 4 * s.page_size * (10 + s.thread_concurrency) + 8 * s.page_size
    margin = smallest - free
    margin -= margin // 10
    return Limits(capacity, margin, margin - margin // 8, margin - margin // 16)


def mysql80(s: Settings) -> Limits:
    """MySQL 8.0.0-8.0.29 ``log_calc_max_ages()`` and ``log_calc_concurrency_margin()`` (log0chkp.cc)."""
    capacity = files_capacity(s)
    if not capacity:
        return Limits()
    real = s.log_files_in_group * s.log_file_size - LOG_FILE_HDR_SIZE * s.log_files_in_group
    safety = min(int(0.1 * real), 256 * 4 * s.page_size)
    for_writer = _down(real - safety)
    for_free_check = for_writer - _down(for_writer * 0.05)
    margin = 4 * s.page_size * (10 + s.thread_concurrency) + 8 * s.page_size + _down(0.05 * for_writer)
    margin = sn_to_lsn(min(margin, _up(for_writer / 2)))
    return Limits(
        capacity,
        max_checkpoint_age=_down(for_free_check - margin),
        async_age=_up(for_free_check - for_free_check // 8) - margin,
        sync_age=_up(for_free_check - for_free_check // 16) - margin,
        margin=margin,
    )


def mysql8030(s: Settings) -> Limits:
    """MySQL 8.0.30+, 8.4, 9.x: ``Log_files_capacity`` (log0files_capacity.cc) and the free-check margin.

    For the default 100 MiB this gives 87417344, the "Max checkpoint age" Percona Server prints; the raw
    points (async + margin, sync + margin) are what the log_max_modified_age_* counters report.
    """
    physical = s.redo_log_capacity
    if not physical:
        return Limits()
    n_files = 32
    overhead = (n_files - 1) * LOG_FILE_HDR_SIZE + 2 * 65536
    lsn_capacity = int(physical * (n_files - 2) / n_files) - overhead
    next_file_size = _down(physical / n_files, s.page_size)
    hard = _down(lsn_capacity - _up(math.ceil(0.1 * next_file_size)))
    soft = _down(math.floor(hard * 0.95))
    margin = 4 * s.page_size * (s.thread_concurrency + 10) + 4096 + _down(0.05 * soft)
    margin = sn_to_lsn(min(margin, int(soft * 0.55)))
    return Limits(
        physical,
        max_checkpoint_age=_down(soft - margin),
        async_age=_down(soft - soft // 8) - margin,
        sync_age=_down(math.floor(soft * (1 - 1 / 16))) - margin,
        margin=margin,
    )


def _mariadb(header: int) -> Callable[[Settings], Limits]:
    def limits(s: Settings) -> Limits:
        if not s.log_file_size:
            return Limits()
        smallest = s.log_file_size - header
        smallest -= smallest // 10
        margin = smallest - 48 * s.page_size
        margin -= margin // 10
        # MariaDB has no separate sync point: above max_checkpoint_age it flushes synchronously
        # ("furious" flushing) and writers wait, so that one limit is its sync point too.
        return Limits(s.log_file_size, margin, margin - margin // 8, margin)

    limits.__doc__ = f"MariaDB ``log_t::set_capacity()`` with a {header}-byte log header."
    return limits


mariadb105 = _mariadb(LOG_FILE_HDR_SIZE)  # 10.5-10.7, log0log.cc log_set_capacity()
mariadb108 = _mariadb(12288)  # 10.8+: log_t::START_OFFSET


@dataclass(frozen=True)
class Rule:
    flavor: str  # "mysql" (also Percona Server) or "mariadb"
    since: tuple[int, ...]
    formula: Callable[[Settings], Limits]


# First match wins; Percona Server follows MySQL's formulas.
RULES = (
    Rule("mysql", (8, 0, 30), mysql8030),
    Rule("mysql", (8, 0, 0), mysql80),
    Rule("mysql", (5, 7, 0), mysql57),
    Rule("mariadb", (10, 8, 0), mariadb108),
    Rule("mariadb", (10, 5, 0), mariadb105),
    Rule("mariadb", (10, 0, 0), mysql57),
)


def rule_for(flavor: str, version: tuple[int, ...]) -> Rule | None:
    family = "mariadb" if flavor == "mariadb" else "mysql"
    for rule in RULES:
        if rule.flavor == family and tuple(version) >= rule.since:
            return rule
    return None


def point_to_age(raw: float, margin_sn: float | None, flavor: str, version: tuple[int, ...],
                 limits: Limits) -> float | None:
    """A raw point the server reports (log_max_modified_age_async/_sync) as the age at which it acts: less
    the free-check margin on MySQL 8.0+, from the log_concurrency_margin counter (payload bytes) where it is
    read, else computed from the settings (None when neither is known). MariaDB and MySQL 5.7 act at the
    raw point."""
    rule = rule_for(flavor, version)
    if rule is None or rule.formula not in (mysql80, mysql8030):
        return raw
    if margin_sn is not None:
        return raw - sn_to_lsn(int(margin_sn))
    return raw - limits.margin if limits.margin else None


def flush_points_apply_to_checkpoint_age(flavor: str, version: tuple[int, ...]) -> bool:
    """Whether the server compares checkpoint age with the async and sync points: MariaDB with its own log
    (10.5+, log_close() in mtr0mtr.cc); the others compare the modified age."""
    rule = rule_for(flavor, version)
    return rule is not None and rule.formula in (mariadb105, mariadb108)


def limits(flavor: str, version: tuple[int, ...], settings: Settings) -> Limits:
    rule = rule_for(flavor, version)
    return rule.formula(settings) if rule else Limits(capacity=files_capacity(settings))
