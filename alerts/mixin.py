"""Recording and alerting rules for InnoDB, mixin style, built from the signals (signals/) that the
dashboards draw, with the thresholds of signals/config.py.

    python alerts/mixin.py --set history_high=500 --set history_for=30s --out /tmp/rules
    python alerts/mixin.py --out /etc/prometheus/rules \\
        --set runbook_base_url=https://git.example.com/dba/innodb-stack/-/blob/main/docs/runbooks.md

``--set`` overrides a configuration entry for one build: the tests use it to lower thresholds without
touching a rule. The committed alerts/rules/*.yml are written by ``./innodb-stack generate``
(tools/generate.py). One file per group; runbooks are in docs/runbooks.md, one section per alert.
"""

from __future__ import annotations

import argparse
import os
import sys

import yaml

if __package__ in (None, ""):  # run as a script: the repository holds signals/, exporters/ innodb_tuning
    _ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:0] = [_ROOT, os.path.join(_ROOT, "exporters")]

from signals import CONFIG, rule_context
from signals import bottleneck as b
from signals import innodb as s
from signals.promql import avg_over_time, changes, deriv, increase, max_without, min_over_time

INNODB = "{{ $labels.instance }}"
FLUSH_AGE_IS = "the modified age; on MariaDB 10.5+ the checkpoint age"
RECORDED = (s.CHECKPOINT_AGE_RATIO, s.CHECKPOINT_ASYNC_RATIO, s.CHECKPOINT_SYNC_RATIO, s.REDO_WRITTEN,
            s.PAGES_FLUSHED, s.FLUSH_PAGES, s.FREE_PAGE_WAITS, s.LRU_GET_FREE_LOOPS, s.PURGE_PAGES,
            s.DIRTY_PAGES_RATIO, s.REDO_FSYNC_LATENCY)
_UNITS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


def in_words(duration: str) -> str:
    """'5m' -> '5 minutes', for descriptions."""
    number, unit = int(duration[:-1]), _UNITS[duration[-1]]
    return f"{number} {unit}" + ("" if number == 1 else "s")


def runbook_url(cfg, name: str) -> str:
    return f"{cfg['runbook_base_url']}#{name.lower()}"


def alert(cfg, name, expr, for_, severity, summary, description, window=None):
    """One alerting rule; ``expr`` renders with the job selectors and ``window`` (default: the alert rate window)."""
    return {"alert": name, "expr": expr.render(rule_context(cfg, window)), "for": for_,
            "labels": {"severity": severity},
            "annotations": {"summary": summary, "description": description, "runbook_url": runbook_url(cfg, name)}}


def warning_and_critical(cfg, name, signal_expr, threshold_keys, for_keys, summary, description):
    """The two levels of one alert: the same expression over two thresholds, each with its own `for`.
    ``description(severity, threshold)`` writes each level's text."""
    return [alert(cfg, name, signal_expr > cfg[threshold_key], cfg[for_key], severity, summary,
                  description(severity, cfg[threshold_key]))
            for severity, threshold_key, for_key in zip(("warning", "critical"), threshold_keys, for_keys)]


def recording_rules(cfg):
    rules = [{"record": signal.record_name(cfg), "expr": signal.render(rule_context(cfg, signal.rule_window(cfg)))}
             for signal in RECORDED]
    return [{"name": "innodb.recording", "rules": rules}]


def bottleneck_rules(cfg):
    """The next bottleneck (signals/bottleneck.py): each class's state, then the winner and healthy, which
    read the states of the same evaluation (rules of a group run in order)."""
    ctx = rule_context(cfg, cfg["bottleneck_window"])
    rules = [{"record": b.STATE, "expr": expr.render(ctx), "labels": {"class": key}}
             for key, expr in b.states(cfg).items()]
    rules.append({"record": b.WINNER, "expr": b.winner().render(ctx)})
    rules.append({"record": b.STATE, "expr": b.healthy().render(ctx), "labels": {"class": b.HEALTHY_CLASS.key}})
    return [{"name": "innodb.bottleneck", "rules": rules}]


def bottleneck_header(cfg) -> str:
    """The head of bottleneck.yml: what the values mean, the order of precedence and each class's evidence."""
    measures = b.evidence(cfg)
    lines = [f"{b.STATE}{{class}}: 1 holds, 0 clear (its required evidence measured), -1 not decidable.",
             f"{b.WINNER}: the code of the first class that holds; 0 healthy, -1 none holds and some not decidable.",
             f"Every class averages and takes rates over {cfg['bottleneck_window']} (bottleneck_window).",
             "Order of precedence (signals/bottleneck.py; docs/runbooks.md, 'Bottlenecks'):"]
    for c in b.CLASSES:
        lines.append(f"  {c.code}. {c.name} ({c.key}): {c.why}.")
        evidence = [f"{m.what}{'' if m.required else ' (where measured)'}" for m in measures.get(c.key, ())]
        if c.key == "latch":
            evidence = [f"one latch with {cfg['latch_waiting_threads']:g} or more threads waiting on average "
                        "(performance_schema's time waited, else the sync array's waiting threads)"]
        lines.append(f"     holds on: {'; '.join(evidence)}.")
    wrapped = []
    for line in lines:
        while len(line) > 118:
            cut = line.rfind(" ", 0, 118)
            wrapped.append(line[:cut])
            line = "       " + line[cut + 1:]
        wrapped.append(line)
    return "".join(f"# {line}\n" for line in wrapped)


def alerting_groups(cfg):
    groups = {}
    groups["innodb.availability"] = [
        alert(cfg, "InnoDBServerDown", s.SERVER_UP.expr.equals(0), cfg["down_for"], "critical",
              "The InnoDB exporter cannot read the server.",
              f"{INNODB} has not answered the exporter for {cfg['down_for']}: the server is down, unreachable, or "
              "refuses the exporter's login. The other InnoDB alerts of this instance are silenced meanwhile."),
        alert(cfg, "InnoDBExporterDown", s.EXPORTER_UP.expr.equals(0), cfg["down_for"], "critical",
              "Prometheus cannot scrape the InnoDB exporter.",
              f"The InnoDB exporter for {INNODB} has not answered Prometheus for {cfg['down_for']}; nothing inside "
              "InnoDB is watched meanwhile, and the other InnoDB alerts of this instance are silenced."),
        alert(cfg, "InnoDBCounterDisabled", s.MONITOR_DISABLED.expr.equals(1), cfg["counter_disabled_for"], "info",
              "An INNODB_METRICS counter that alerts and dashboards use is disabled.",
              f"Counter {{{{ $labels.counter }}}} is disabled on {INNODB}, so the panels and alerts built on it have no "
              "data. Enable it with SET GLOBAL innodb_monitor_enable or innodb_monitor_enable in my.cnf."),
    ]
    checkpoint_tail = {"warning": "Flushing is not keeping up with REDO; writers stall at 100%.",
                       "critical": "Writers stall at 100% until enough pages are flushed."}
    groups["innodb.checkpoint"] = [
        *warning_and_critical(
            cfg, "InnoDBCheckpointAgeHigh", s.CHECKPOINT_AGE_RATIO.recorded(cfg),
            ("checkpoint_age_warning_ratio", "checkpoint_age_critical_ratio"),
            ("checkpoint_age_for", "checkpoint_age_critical_for"), "Checkpoint age is close to the max checkpoint age.",
            lambda severity, threshold: (
                f"Checkpoint age on {INNODB} is {{{{ $value | humanizePercentage }}}} of the max checkpoint age "
                f"({severity} above {threshold:.0%}). {checkpoint_tail[severity]}")),
        # The names say checkpoint age, as operators know the points; the age compared is InnoDB's own.
        alert(cfg, "InnoDBCheckpointAgePastSyncPoint", s.CHECKPOINT_SYNC_RATIO.recorded(cfg) > 1, cfg["sync_point_for"],
              "warning", "The REDO age is past the sync flush point.",
              f"The REDO age InnoDB compares with the flush points ({FLUSH_AGE_IS}) on {INNODB} is "
              "{{ $value | humanize }} times the sync flush point: user threads flush pages synchronously and "
              "transactions slow down."),
        alert(cfg, "InnoDBCheckpointAgePastAsyncPoint", s.CHECKPOINT_ASYNC_RATIO.recorded(cfg) > 1,
              cfg["async_point_for"], "info", "The REDO age is past the async flush point.",
              f"The REDO age InnoDB compares with the flush points ({FLUSH_AGE_IS}) on {INNODB} has been past the "
              f"async flush point for {cfg['async_point_for']} ({{{{ $value | humanize }}}} times it): adaptive "
              "flushing runs at its most aggressive."),
    ]
    window = cfg["alert_rate_window"]
    groups["innodb.flushing"] = [
        alert(cfg, "InnoDBFlushingSlow",
              max_without(("kind",), (s.FLUSH_AVG_SECONDS.expr > cfg["flush_seconds_max"])
                          & (changes(s.FLUSH_AVG_SECONDS.expr, cfg["flush_slow_for"]) > 0)),
              cfg["flush_slow_for"], "warning", "InnoDB flushing passes take longer than a second.",
              f"A flushing pass on {INNODB} takes {{{{ $value | humanizeDuration }}}} on average (target under "
              f"{cfg['flush_seconds_max']} s): the page cleaners do not keep up with the required flush rate."),
        alert(cfg, "InnoDBSyncFlushWaits", increase(s.SYNC_FLUSH_WAITS.series) > 0, cfg["sync_flush_waits_for"],
              "warning", "Threads are waiting for synchronous flushes.",
              f"{{{{ $value | humanize }}}} waits for a synchronous flush in {in_words(window)} on {INNODB}: REDO space "
              "ran out faster than pages were flushed."),
    ]
    groups["innodb.free-pages"] = [
        alert(cfg, "InnoDBFreePageWaits", s.FREE_PAGE_WAITS.recorded(cfg) > 0, cfg["free_page_waits_for"], "warning",
              "User threads are waiting for free buffer pool pages.",
              f"{{{{ $value | humanize }}}} free page waits per second on {INNODB}: reads stall until a page is freed."),
        alert(cfg, "InnoDBLRUGetFreeLoops", s.LRU_GET_FREE_LOOPS.recorded(cfg) > cfg["lru_loops_per_second"],
              cfg["lru_loops_for"], "info", "Free page requests are retrying.",
              f"{{{{ $value | humanize }}}} free page requests per second on {INNODB} found the free list empty and "
              "looped: LRU flushing does not follow the free page demand."),
    ]
    history = s.HISTORY_LENGTH.series
    groups["innodb.purge"] = [
        alert(cfg, "InnoDBHistoryListGrowing", (min_over_time(history) > cfg["history_high"]) & (deriv(history) > 0),
              cfg["history_for"], "warning", "The history list is long and still growing.",
              f"History list length on {INNODB} has not dropped below {{{{ $value | humanize }}}} in "
              f"{cfg['history_window']} (threshold {cfg['history_high']}) and keeps growing: purge is falling behind.",
              window=cfg["history_window"]),
        alert(cfg, "InnoDBPurgeStalled",
              (min_over_time(history) > cfg["history_high"]) & increase(s.PURGE_PAGES.series).equals(0),
              cfg["purge_for"], "warning", "Purge makes no progress while the history list is long.",
              f"No undo log page was purged on {INNODB} in {cfg['purge_window']} while the history list is "
              f"{{{{ $value | humanize }}}} long (above {cfg['history_high']}).", window=cfg["purge_window"]),
        alert(cfg, "InnoDBPurgeDMLDelay", s.PURGE_DML_DELAY.expr > 0, cfg["purge_delay_for"], "warning",
              "DML is being delayed for purge lag.",
              f"Every DML row operation on {INNODB} is delayed by {{{{ $value | humanizeDuration }}}} because the "
              "history list is past innodb_max_purge_lag."),
    ]
    groups["innodb.redo"] = [
        alert(cfg, "InnoDBRedoFsyncSlow", s.REDO_FSYNC_LATENCY.recorded(cfg) > cfg["redo_fsync_seconds"],
              cfg["redo_fsync_for"], "warning", "REDO log fsyncs are slow.",
              f"REDO fsyncs on {INNODB} take {{{{ $value | humanizeDuration }}}} on average (threshold "
              f"{cfg['redo_fsync_seconds'] * 1000:g} ms): every commit waits at least this long."),
    ]
    pending = cfg["pending_io_window"]
    groups["innodb.io"] = [
        alert(cfg, "InnoDBPendingReadsHigh", avg_over_time(s.PENDING_READS.series) > cfg["pending_io_high"],
              cfg["pending_io_for"], "warning", "InnoDB is read IO bound.",
              f"{{{{ $value | humanize }}}} buffer pool reads pending on average over {pending} on {INNODB} (above "
              f"{cfg['pending_io_high']}): reads wait for storage.", window=pending),
        alert(cfg, "InnoDBPendingWritesHigh",
              avg_over_time(s.PENDING_WRITES.series.where('kind=~"flush_list|lru"')) > cfg["pending_io_high"],
              cfg["pending_io_for"], "warning", "InnoDB is write IO bound.",
              f"{{{{ $value | humanize }}}} {{{{ $labels.kind }}}} writes pending on average over {pending} on "
              f"{INNODB} (above {cfg['pending_io_high']}): flushing waits for storage.", window=pending),
    ]
    groups["innodb.transactions"] = [
        alert(cfg, "InnoDBLongTransaction", s.OLDEST_TRANSACTION.expr > cfg["long_transaction_seconds"],
              cfg["long_transaction_for"], "warning", "A transaction has been open for a long time.",
              f"The oldest transaction on {INNODB} has been open for {{{{ $value | humanizeDuration }}}}; it holds "
              "purge back and the history list grows behind it."),
    ]
    groups["innodb.semaphores"] = warning_and_critical(
        cfg, "InnoDBSemaphoreWaitLong", s.SEMAPHORE_LONGEST_WAIT.expr,
        ("semaphore_wait_warning_seconds", "semaphore_wait_critical_seconds"),
        ("semaphore_wait_for", "semaphore_wait_for"),
        "A thread has waited long for an InnoDB latch.",
        lambda severity, threshold: f"A thread on {INNODB} has waited {{{{ $value | humanizeDuration }}}} for a latch; "
                                    "InnoDB aborts the server at 600 s.")
    return [{"name": name, "rules": rules} for name, rules in groups.items()]


def build(cfg) -> dict[str, dict]:
    """File name -> rule file content; one file per group."""
    files = {}
    for group in recording_rules(cfg) + bottleneck_rules(cfg) + alerting_groups(cfg):
        files[group["name"].replace("innodb.", "").replace("-", "_") + ".yml"] = {"groups": [group]}
    return files


def files(cfg) -> dict[str, str]:
    """File name -> the text of that rule file, as it is written."""
    out = {}
    for name, content in build(cfg).items():
        head = "# Generated by alerts/mixin.py from signals/; change signals/config.py, not this file.\n"
        if name == "bottleneck.yml":
            head += bottleneck_header(cfg)
        out[name] = head + yaml.safe_dump(content, sort_keys=False, width=120, allow_unicode=True)
    return out


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Write the InnoDB recording and alerting rules.")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override an entry of signals/config.py for this build")
    p.add_argument("--out", required=True, help="the folder to write the rule files to (the committed "
                   "alerts/rules/ are ./innodb-stack generate's)")
    args = p.parse_args(argv)
    cfg = dict(CONFIG)
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or key not in CONFIG:
            print(f"--set {item!r}: expected KEY=VALUE with KEY one of {', '.join(CONFIG)}", file=sys.stderr)
            return 2
        cfg[key] = _value(value)
    os.makedirs(args.out, exist_ok=True)
    for name, text in files(cfg).items():
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
