"""Recording and alerting rules for InnoDB, mixin style: every threshold is set once, in CONFIG.

    python alerts/mixin.py                       # writes alerts/rules/*.yml (committed; CI checks they are current)
    python alerts/mixin.py --set history_high=500 --set history_for=30s --out /tmp/rules

``--set`` overrides a CONFIG entry for one build: the tests use it to lower thresholds without
touching a rule. One file per group; runbooks are in docs/runbooks.md, one section per alert.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

import yaml

# Each threshold with when to change it. Durations are Prometheus durations.
CONFIG = {
    # Which job carries the InnoDB exporter's metrics (prometheus.yml names it so).
    "innodb_selector": 'job="innodb"',
    # Where the runbooks are read; %s is the alert name in lower case (the Markdown anchor).
    # Point it at your copy of docs/runbooks.md on your Git host.
    "runbook_url": "docs/runbooks.md#%s",
    # Checkpoint age as a share of the max checkpoint age. Document 004 asks for a margin below the
    # limit: 0.75 warns with room to act, 0.90 pages before writers stall. Lower them if your storage
    # cannot absorb a flushing storm; raise them only for a REDO log that is large for its load.
    "checkpoint_age_warning_ratio": 0.75,
    "checkpoint_age_critical_ratio": 0.90,
    "checkpoint_age_for": "5m",
    "checkpoint_age_critical_for": "2m",
    # How long checkpoint age may stay past the async flush point (flushing turns aggressive) before
    # an info alert, and past the sync point (user threads flush) before a warning.
    "async_point_for": "15m",
    "sync_point_for": "1m",
    # Adaptive flushing should finish each pass within 1 s (document 004); more means the page
    # cleaners cannot keep up. Keep at 1 s unless InnoDB's averaging window (innodb_flushing_avg_loops) is changed.
    "flush_seconds_max": 1.0,
    "flush_slow_for": "10m",
    # Threads that waited for a synchronous flush, or for a free page: any is too many, so the
    # thresholds are 0 and only the durations say how long it must last.
    "sync_flush_waits_for": "5m",
    "free_page_waits_for": "5m",
    # Free page requests that looped (retried) per second: InnoDB is short of free pages; an early sign.
    "lru_loops_per_second": 0,
    "lru_loops_for": "15m",
    # History list length above which purge lag matters (document 003: < 100000 is no problem), the
    # window over which it must stay high and grow, and the window in which purge must progress.
    "history_high": 100000,
    "history_window": "1h",
    "history_for": "15m",
    "purge_window": "15m",
    "purge_for": "15m",
    # DML throttled for purge lag (innodb_max_purge_lag): any delay, for this long.
    "purge_delay_for": "5m",
    # Average REDO fsync latency: it is the transaction response time floor (document 004). 10 ms is
    # slow for SSDs; raise it for spinning disks or network storage.
    "redo_fsync_seconds": 0.010,
    "redo_fsync_for": "10m",
    # Pending reads or flush-list/LRU writes above 10 on average mean IO bound (document 003).
    "pending_io_high": 10,
    "pending_io_window": "5m",
    "pending_io_for": "10m",
    # Oldest open transaction: it holds purge back. 10 minutes suits OLTP; raise it for reporting jobs.
    "long_transaction_seconds": 600,
    "long_transaction_for": "2m",
    # Longest semaphore wait: InnoDB aborts the server when one reaches 600 s.
    "semaphore_wait_warning_seconds": 60,
    "semaphore_wait_critical_seconds": 300,
    "semaphore_wait_for": "1m",
    # Server or exporter unreachable.
    "down_for": "1m",
    # Counters the alerts need that stay disabled.
    "counter_disabled_for": "1h",
}

INNODB = "{{ $labels.instance }}"


def _alert(name, expr, for_, severity, summary, description, cfg):
    return {"alert": name, "expr": expr, "for": for_, "labels": {"severity": severity},
            "annotations": {"summary": summary, "description": description,
                            "runbook_url": cfg["runbook_url"] % name.lower()}}


def recording_rules(cfg):
    s = cfg["innodb_selector"]
    rules = [
        ("instance:innodb_checkpoint_age:ratio", f"innodb_checkpoint_age_bytes{{{s}}} / innodb_checkpoint_age_max_bytes{{{s}}}"),
        ("instance:innodb_checkpoint_age_async:ratio", f"innodb_checkpoint_age_bytes{{{s}}} / innodb_checkpoint_age_async_bytes{{{s}}}"),
        ("instance:innodb_checkpoint_age_sync:ratio", f"innodb_checkpoint_age_bytes{{{s}}} / innodb_checkpoint_age_sync_bytes{{{s}}}"),
        ("instance:innodb_redo_written_bytes:rate1m", f"rate(innodb_redo_written_bytes_total{{{s}}}[1m])"),
        ("instance:innodb_buffer_pool_pages_flushed:rate1m", f"rate(innodb_buffer_pool_pages_flushed_total{{{s}}}[1m])"),
        ("instance_kind:innodb_flush_pages:rate1m", f"rate(innodb_flush_pages_total{{{s}}}[1m])"),
        ("instance:innodb_free_page_waits:rate5m", f"rate(innodb_free_page_waits_total{{{s}}}[5m])"),
        ("instance:innodb_lru_get_free_loops:rate5m", f"rate(innodb_lru_get_free_loops_total{{{s}}}[5m])"),
        ("instance:innodb_purge_undo_log_pages:rate5m", f"rate(innodb_purge_undo_log_pages_total{{{s}}}[5m])"),
        ("instance:innodb_buffer_pool_dirty_pages:ratio",
         f'innodb_buffer_pool_pages{{{s},state="dirty"}} / ignoring(state) innodb_buffer_pool_pages{{{s},state="total"}}'),
        # Average REDO fsync latency: from performance_schema's timer where the server measures it,
        # else InnoDB's own average (MySQL 8 log_flush_avg_time).
        ("instance:innodb_redo_fsync_latency_seconds:avg5m",
         f"rate(innodb_redo_fsync_seconds_total{{{s}}}[5m]) / rate(innodb_redo_fsyncs_total{{{s}}}[5m])"
         f' or max without (stat) (avg_over_time(innodb_redo_fsync_latency_seconds{{{s},stat="avg"}}[5m]))'),
    ]
    return [{"name": "innodb.recording", "rules": [{"record": r, "expr": e} for r, e in rules]}]


def alerting_groups(cfg):
    s = cfg["innodb_selector"]
    a = functools.partial(_alert, cfg=cfg)
    groups = {}
    groups["innodb.availability"] = [
        a("InnoDBServerDown", f"innodb_up{{{s}}} == 0", cfg["down_for"], "critical",
          "The InnoDB exporter cannot read the server.",
          f"{INNODB} has not answered the exporter for {cfg['down_for']}: the server is down, unreachable, or refuses "
          "the exporter's login. The other InnoDB alerts of this instance are silenced meanwhile."),
        a("InnoDBExporterDown", f"up{{{s}}} == 0", cfg["down_for"], "critical",
          "Prometheus cannot scrape the InnoDB exporter.",
          f"The InnoDB exporter for {INNODB} has not answered Prometheus for {cfg['down_for']}; nothing inside InnoDB is "
          "watched meanwhile, and the other InnoDB alerts of this instance are silenced."),
        a("InnoDBCounterDisabled", f"innodb_exporter_counter_disabled{{{s}}} == 1", cfg["counter_disabled_for"], "info",
          "An INNODB_METRICS counter that alerts and dashboards use is disabled.",
          f"Counter {{{{ $labels.counter }}}} is disabled on {INNODB}, so the panels and alerts built on it have no data. "
          "Enable it with SET GLOBAL innodb_monitor_enable or innodb_monitor_enable in my.cnf."),
    ]
    groups["innodb.checkpoint"] = [
        a("InnoDBCheckpointAgeHigh", f"instance:innodb_checkpoint_age:ratio > {cfg['checkpoint_age_warning_ratio']}",
          cfg["checkpoint_age_for"], "warning", "Checkpoint age is close to the max checkpoint age.",
          f"Checkpoint age on {INNODB} is {{{{ $value | humanizePercentage }}}} of the max checkpoint age (warning above "
          f"{cfg['checkpoint_age_warning_ratio']:.0%}). Flushing is not keeping up with REDO; writers stall at 100%."),
        a("InnoDBCheckpointAgeHigh", f"instance:innodb_checkpoint_age:ratio > {cfg['checkpoint_age_critical_ratio']}",
          cfg["checkpoint_age_critical_for"], "critical", "Checkpoint age is close to the max checkpoint age.",
          f"Checkpoint age on {INNODB} is {{{{ $value | humanizePercentage }}}} of the max checkpoint age (critical above "
          f"{cfg['checkpoint_age_critical_ratio']:.0%}). Writers stall at 100% until enough pages are flushed."),
        a("InnoDBCheckpointAgePastSyncPoint", "instance:innodb_checkpoint_age_sync:ratio > 1", cfg["sync_point_for"],
          "warning", "Checkpoint age is past the sync flush point.",
          f"Checkpoint age on {INNODB} is {{{{ $value | humanize }}}} times the sync flush point: user threads flush "
          "pages synchronously and transactions slow down."),
        a("InnoDBCheckpointAgePastAsyncPoint", "instance:innodb_checkpoint_age_async:ratio > 1", cfg["async_point_for"],
          "info", "Checkpoint age is past the async flush point.",
          f"Checkpoint age on {INNODB} has been past the async flush point for {cfg['async_point_for']} "
          "({{ $value | humanize }} times it): adaptive flushing runs at its most aggressive."),
    ]
    groups["innodb.flushing"] = [
        a("InnoDBFlushingSlow", f"max without (kind) (innodb_flush_avg_seconds{{{s}}}) > {cfg['flush_seconds_max']}",
          cfg["flush_slow_for"], "warning", "InnoDB flushing passes take longer than a second.",
          f"A flushing pass on {INNODB} takes {{{{ $value | humanizeDuration }}}} on average (target under "
          f"{cfg['flush_seconds_max']} s): the page cleaners do not keep up with the required flush rate."),
        a("InnoDBSyncFlushWaits", f"increase(innodb_flush_sync_waits_total{{{s}}}[5m]) > 0", cfg["sync_flush_waits_for"],
          "warning", "Threads are waiting for synchronous flushes.",
          f"{{{{ $value | humanize }}}} waits for a synchronous flush in 5 minutes on {INNODB}: REDO space ran out "
          "faster than pages were flushed."),
    ]
    groups["innodb.free-pages"] = [
        a("InnoDBFreePageWaits", "instance:innodb_free_page_waits:rate5m > 0", cfg["free_page_waits_for"], "warning",
          "User threads are waiting for free buffer pool pages.",
          f"{{{{ $value | humanize }}}} free page waits per second on {INNODB}: reads stall until a page is freed."),
        a("InnoDBLRUGetFreeLoops", f"instance:innodb_lru_get_free_loops:rate5m > {cfg['lru_loops_per_second']}",
          cfg["lru_loops_for"], "info", "Free page requests are retrying.",
          f"{{{{ $value | humanize }}}} free page requests per second on {INNODB} found the free list empty and "
          "looped: LRU flushing does not follow the free page demand."),
    ]
    groups["innodb.purge"] = [
        a("InnoDBHistoryListGrowing",
          f"min_over_time(innodb_history_list_length{{{s}}}[{cfg['history_window']}]) > {cfg['history_high']}"
          f" and deriv(innodb_history_list_length{{{s}}}[{cfg['history_window']}]) > 0",
          cfg["history_for"], "warning", "The history list is long and still growing.",
          f"History list length on {INNODB} has not dropped below {{{{ $value | humanize }}}} in {cfg['history_window']} "
          f"(threshold {cfg['history_high']}) and keeps growing: purge is falling behind."),
        a("InnoDBPurgeStalled",
          f"min_over_time(innodb_history_list_length{{{s}}}[{cfg['purge_window']}]) > {cfg['history_high']}"
          f" and increase(innodb_purge_undo_log_pages_total{{{s}}}[{cfg['purge_window']}]) == 0",
          cfg["purge_for"], "warning", "Purge makes no progress while the history list is long.",
          f"No undo log page was purged on {INNODB} in {cfg['purge_window']} while the history list is "
          f"{{{{ $value | humanize }}}} long (above {cfg['history_high']})."),
        a("InnoDBPurgeDMLDelay", f"innodb_purge_dml_delay_seconds{{{s}}} > 0", cfg["purge_delay_for"], "warning",
          "DML is being delayed for purge lag.",
          f"Every DML row operation on {INNODB} is delayed by {{{{ $value | humanizeDuration }}}} because the history "
          "list is past innodb_max_purge_lag."),
    ]
    groups["innodb.redo"] = [
        a("InnoDBRedoFsyncSlow", f"instance:innodb_redo_fsync_latency_seconds:avg5m > {cfg['redo_fsync_seconds']}",
          cfg["redo_fsync_for"], "warning", "REDO log fsyncs are slow.",
          f"REDO fsyncs on {INNODB} take {{{{ $value | humanizeDuration }}}} on average (threshold "
          f"{cfg['redo_fsync_seconds'] * 1000:g} ms): every commit waits at least this long."),
    ]
    w = cfg["pending_io_window"]
    groups["innodb.io"] = [
        a("InnoDBPendingReadsHigh",
          f"avg_over_time(innodb_buffer_pool_pending_reads{{{s}}}[{w}]) > {cfg['pending_io_high']}",
          cfg["pending_io_for"], "warning", "InnoDB is read IO bound.",
          f"{{{{ $value | humanize }}}} buffer pool reads pending on average over {w} on {INNODB} (above "
          f"{cfg['pending_io_high']}): reads wait for storage."),
        a("InnoDBPendingWritesHigh",
          f'avg_over_time(innodb_buffer_pool_pending_writes{{{s},kind=~"flush_list|lru"}}[{w}]) > {cfg["pending_io_high"]}',
          cfg["pending_io_for"], "warning", "InnoDB is write IO bound.",
          f"{{{{ $value | humanize }}}} {{{{ $labels.kind }}}} writes pending on average over {w} on {INNODB} (above "
          f"{cfg['pending_io_high']}): flushing waits for storage."),
    ]
    groups["innodb.transactions"] = [
        a("InnoDBLongTransaction", f"innodb_oldest_transaction_seconds{{{s}}} > {cfg['long_transaction_seconds']}",
          cfg["long_transaction_for"], "warning", "A transaction has been open for a long time.",
          f"The oldest transaction on {INNODB} has been open for {{{{ $value | humanizeDuration }}}}; it holds purge "
          "back and the history list grows behind it."),
    ]
    groups["innodb.semaphores"] = [
        a("InnoDBSemaphoreWaitLong",
          f"innodb_semaphore_longest_wait_seconds{{{s}}} > {cfg['semaphore_wait_warning_seconds']}",
          cfg["semaphore_wait_for"], "warning", "A thread has waited long for an InnoDB latch.",
          f"A thread on {INNODB} has waited {{{{ $value | humanizeDuration }}}} for a latch; InnoDB aborts the server "
          "at 600 s."),
        a("InnoDBSemaphoreWaitLong",
          f"innodb_semaphore_longest_wait_seconds{{{s}}} > {cfg['semaphore_wait_critical_seconds']}",
          cfg["semaphore_wait_for"], "critical", "A thread has waited long for an InnoDB latch.",
          f"A thread on {INNODB} has waited {{{{ $value | humanizeDuration }}}} for a latch; InnoDB aborts the server "
          "at 600 s."),
    ]
    return [{"name": name, "rules": rules} for name, rules in groups.items()]


def build(cfg) -> dict[str, dict]:
    """File name -> rule file content; one file per group."""
    files = {}
    for group in recording_rules(cfg) + alerting_groups(cfg):
        files[group["name"].replace("innodb.", "").replace("-", "_") + ".yml"] = {"groups": [group]}
    return files


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Write the InnoDB recording and alerting rules.")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a CONFIG entry")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules"))
    args = p.parse_args(argv)
    cfg = dict(CONFIG)
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or key not in CONFIG:
            print(f"--set {item!r}: expected KEY=VALUE with KEY one of {', '.join(CONFIG)}", file=sys.stderr)
            return 2
        cfg[key] = _value(value)
    os.makedirs(args.out, exist_ok=True)
    for name, content in build(cfg).items():
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write("# Generated by alerts/mixin.py; change CONFIG there, not this file.\n")
            yaml.safe_dump(content, f, sort_keys=False, width=120, allow_unicode=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
