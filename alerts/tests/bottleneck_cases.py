"""alerts/tests/bottleneck_test.yml, the promtool unit test of the bottleneck rules, case by case; written
by ``./innodb-stack generate`` (tools/generate.py).

Every case is one instance: a healthy baseline (every class measured and clear) with the few series it
changes, and the states it must give. Each measure is tried just below and just above its threshold
(taken from signals/config.py, as the rules take it), flavours lacking a measure give "not decidable"
(-1), and cases where two classes hold show which one wins. Expected values are written out, never
computed from the rules.
"""

from __future__ import annotations

import os

import yaml

from signals import CONFIG

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bottleneck_test.yml")
STEP = 15  # seconds between samples, as the stack's rules evaluate
SAMPLES = 12  # three minutes of samples
EVAL = "2m"  # two full windows of bottleneck_window (1m) behind it

C = CONFIG


def counter(per_second: float) -> str:
    return f"0+{per_second * STEP:g}x{SAMPLES}"


def gauge(value: float) -> str:
    return f"{value:g}x{SAMPLES}"


def growing(start: float, per_second: float) -> str:
    return f"{start:g}{per_second * STEP:+g}x{SAMPLES}"


# The healthy baseline: (metric, labels) -> values. Two CPUs, half idle; REDO fsyncs of 1 ms; a latch
# with 0.1 threads waiting; four open transactions, none waiting; a short history that purge keeps short.
BASE = {
    ("innodb_up", ""): gauge(1),
    ("innodb_checkpoint_age_bytes", ""): gauge(10),
    ("innodb_redo_flush_age_bytes", ""): gauge(8),  # the age compared with the flush points (modified age)
    ("innodb_redo_modified_age_bytes", ""): gauge(8),
    ("innodb_checkpoint_age_max_bytes", ""): gauge(100),
    ("innodb_checkpoint_age_async_bytes", ""): gauge(80),
    ("innodb_redo_log_waits_total", ""): counter(0),
    ("innodb_redo_file_misc_operations_total", ""): counter(10),
    ("innodb_redo_file_misc_seconds_total", ""): counter(0.01),
    ("innodb_buffer_pool_pending_writes", 'kind="lru"'): gauge(0),
    ("innodb_buffer_pool_pending_writes", 'kind="flush_list"'): gauge(0),
    ("innodb_flush_sync_waits_total", ""): counter(0),
    ("innodb_free_page_waits_total", ""): counter(0),
    ("innodb_lru_get_free_search_total", ""): counter(100),
    ("innodb_lru_get_free_loops_total", ""): counter(0),
    ("innodb_buffer_pool_pending_reads", ""): gauge(0),
    ("innodb_latch_wait_seconds_total", 'kind="mutex",name="buf_pool_mutex"'): counter(0.1),
    ("innodb_oldest_transaction_seconds", ""): gauge(1),
    ("innodb_lock_waiting_transactions", ""): gauge(0),
    ("innodb_active_transactions", ""): gauge(4),
    ("innodb_history_list_length", ""): gauge(100),
    ("innodb_purge_undo_log_pages_total", ""): counter(1),
    ("innodb_purge_dml_delay_seconds", ""): gauge(0),
    ("node_cpu_seconds_total", 'cpu="0",mode="idle"'): counter(0.5),
    ("node_cpu_seconds_total", 'cpu="1",mode="idle"'): counter(0.5),
    ("node_cpu_seconds_total", 'cpu="0",mode="iowait"'): counter(0),
    ("node_cpu_seconds_total", 'cpu="1",mode="iowait"'): counter(0),
}
CLASSES = ("redo", "write_io", "free_pages", "read_io", "latch", "transactions", "purge", "host")
NO_SERVER_FSYNC = {("innodb_redo_file_misc_operations_total", ""): None,
                   ("innodb_redo_file_misc_seconds_total", ""): None}
NO_LATCH_TIMING = {("innodb_latch_wait_seconds_total", 'kind="mutex",name="buf_pool_mutex"'): None}
SYNC_ARRAY = {("innodb_semaphore_os_wait_reservations_total", ""): counter(1)}


def cpus(idle: float, iowait: float) -> dict:
    """Both CPUs with these shares of their time idle and in iowait."""
    return {("node_cpu_seconds_total", f'cpu="{n}",mode="{mode}"'): counter(share)
            for n in (0, 1) for mode, share in (("idle", idle), ("iowait", iowait))}


def host_flushes(latency: float) -> dict:
    """The data device's flushes (the stack labels the node target with it) at this average latency."""
    return {("up", 'redo_device="vda"'): gauge(1),
            ("node_disk_flush_requests_total", 'device="vda"'): counter(10),
            ("node_disk_flush_requests_time_seconds_total", 'device="vda"'): counter(10 * latency)}


ratio, pending, fsync_s = C["checkpoint_age_warning_ratio"], C["pending_io_high"], C["redo_fsync_seconds"]
latch, share = C["latch_waiting_threads"], C["lock_wait_share"]
loops, history, oldest = C["lru_loops_share"], C["history_high"], C["long_transaction_seconds"]
busy, iowait = C["host_cpu_busy_ratio"], C["host_iowait_ratio"]
waits = C["free_page_waits_per_second"]

# name -> (what the case is, series changed (None drops one), expected states; unnamed classes 0,
# winner and healthy always written out).
CASES = {
    "healthy": ("every class measured and clear", {}, {"winner": 0, "healthy": 1}),
    # --- REDO bound
    "redo_age_below": (f"checkpoint age at {ratio - 0.001:g} of the max",
                       {("innodb_checkpoint_age_bytes", ""): gauge((ratio - 0.001) * 100)},
                       {"winner": 0, "healthy": 1}),
    "redo_age_above": (f"checkpoint age at {ratio + 0.001:g} of the max (below the async point)",
                       {("innodb_checkpoint_age_bytes", ""): gauge((ratio + 0.001) * 100),
                        ("innodb_checkpoint_age_async_bytes", ""): gauge(95)},
                       {"redo": 1, "winner": 1, "healthy": 0}),
    "redo_log_waits": ("one log buffer wait a minute", {("innodb_redo_log_waits_total", ""): counter(1 / 60)},
                       {"redo": 1, "winner": 1, "healthy": 0}),
    "redo_fsync_below": (f"REDO fsyncs of {fsync_s * 0.99 * 1000:g} ms",
                         {("innodb_redo_file_misc_seconds_total", ""): counter(10 * fsync_s * 0.99)},
                         {"winner": 0, "healthy": 1}),
    "redo_fsync_above": (f"REDO fsyncs of {fsync_s * 1.01 * 1000:g} ms",
                         {("innodb_redo_file_misc_seconds_total", ""): counter(10 * fsync_s * 1.01)},
                         {"redo": 1, "winner": 1, "healthy": 0}),
    "redo_device_below": ("no server fsync timing (MariaDB 10.8+): the data device's flushes just fast enough",
                          {**NO_SERVER_FSYNC, **host_flushes(fsync_s * 0.99)}, {"winner": 0, "healthy": 1}),
    "redo_device_above": ("no server fsync timing: the data device's flushes just too slow",
                          {**NO_SERVER_FSYNC, **host_flushes(fsync_s * 1.01)},
                          {"redo": 1, "winner": 1, "healthy": 0}),
    "redo_fsync_unmeasured": ("no fsync timing anywhere: REDO cannot be cleared",
                              NO_SERVER_FSYNC, {"redo": -1, "winner": -1, "healthy": -1}),
    "redo_fsync_unmeasured_age_above": ("no fsync timing, but checkpoint age holds: REDO bound all the same",
                                        {**NO_SERVER_FSYNC, ("innodb_checkpoint_age_bytes", ""): gauge(78),
                                         ("innodb_checkpoint_age_async_bytes", ""): gauge(95)},
                                        {"redo": 1, "winner": 1, "healthy": 0}),
    # --- IO bound on writes
    "writes_pending_below": (f"{pending:g} flush-list writes pending (not above {pending:g})",
                             {("innodb_buffer_pool_pending_writes", 'kind="flush_list"'): gauge(pending)},
                             {"winner": 0, "healthy": 1}),
    "writes_pending_above": (f"{pending + 0.1:g} LRU writes pending",
                             {("innodb_buffer_pool_pending_writes", 'kind="lru"'): gauge(pending + 0.1)},
                             {"write_io": 1, "winner": 2, "healthy": 0}),
    "writes_async_below": ("the flush age just under the async point (and far from the max)",
                           {("innodb_redo_flush_age_bytes", ""): gauge(99),
                            ("innodb_checkpoint_age_async_bytes", ""): gauge(100),
                            ("innodb_checkpoint_age_max_bytes", ""): gauge(200)}, {"winner": 0, "healthy": 1}),
    "writes_async_above": ("the flush age just past the async point (and far from the max)",
                           {("innodb_redo_flush_age_bytes", ""): gauge(101),
                            ("innodb_checkpoint_age_async_bytes", ""): gauge(100),
                            ("innodb_checkpoint_age_max_bytes", ""): gauge(200)},
                           {"write_io": 1, "winner": 2, "healthy": 0}),
    "writes_checkpoint_age_past_async": ("checkpoint age past the async point, the modified age MySQL compares "
                                         "under it: not write bound",
                                         {("innodb_checkpoint_age_bytes", ""): gauge(130),
                                          ("innodb_redo_flush_age_bytes", ""): gauge(90),
                                          ("innodb_checkpoint_age_async_bytes", ""): gauge(100),
                                          ("innodb_checkpoint_age_max_bytes", ""): gauge(200)},
                                         {"winner": 0, "healthy": 1}),
    "writes_async_above_older_exporter": ("no flush age (an exporter before it): the modified age past the async "
                                          "point stands in",
                                          {("innodb_redo_flush_age_bytes", ""): None,
                                           ("innodb_redo_modified_age_bytes", ""): gauge(101),
                                           ("innodb_checkpoint_age_async_bytes", ""): gauge(100),
                                           ("innodb_checkpoint_age_max_bytes", ""): gauge(200)},
                                          {"write_io": 1, "winner": 2, "healthy": 0}),
    "writes_sync_waits": ("a thread waited for a sync flush", {("innodb_flush_sync_waits_total", ""): counter(1 / 60)},
                          {"write_io": 1, "winner": 2, "healthy": 0}),
    # --- free-page bound
    "free_page_waits_below": (f"{waits * 0.99:g} free page waits a second",
                              {("innodb_free_page_waits_total", ""): counter(waits * 0.99)}, {"winner": 0, "healthy": 1}),
    "free_page_waits_above": (f"{waits * 1.01:g} free page waits a second",
                              {("innodb_free_page_waits_total", ""): counter(waits * 1.01)},
                              {"free_pages": 1, "winner": 3, "healthy": 0}),
    "free_loops_below": (f"{loops - 0.001:g} of free page requests looped",
                         {("innodb_lru_get_free_loops_total", ""): counter(100 * (loops - 0.001))},
                         {"winner": 0, "healthy": 1}),
    "free_loops_above": (f"{loops + 0.001:g} of free page requests looped",
                         {("innodb_lru_get_free_loops_total", ""): counter(100 * (loops + 0.001))},
                         {"free_pages": 1, "winner": 3, "healthy": 0}),
    # --- IO bound on reads
    "reads_below": (f"{pending:g} reads pending", {("innodb_buffer_pool_pending_reads", ""): gauge(pending)},
                    {"winner": 0, "healthy": 1}),
    "reads_above": (f"{pending + 0.1:g} reads pending", {("innodb_buffer_pool_pending_reads", ""): gauge(pending + 0.1)},
                    {"read_io": 1, "winner": 4, "healthy": 0}),
    # --- latch contention
    "latch_timed_below": (f"{latch * 0.99:g} threads waiting for one latch (performance_schema)",
                          {("innodb_latch_wait_seconds_total", 'kind="mutex",name="buf_pool_mutex"'):
                           counter(latch * 0.99)}, {"winner": 0, "healthy": 1}),
    "latch_timed_above": (f"{latch * 1.01:g} threads waiting for lock_latch, less for another: the top one is named",
                          {("innodb_latch_wait_seconds_total", 'kind="rwlock",name="lock_latch"'): counter(latch * 1.01)},
                          {"latch": (1, "lock_latch"), "winner": 5, "healthy": 0}),
    "latch_sync_array_at": (f"no latch timing; the sync array lists exactly {latch:g} thread for BUF_POOL on average",
                            {**NO_LATCH_TIMING, **SYNC_ARRAY, ("innodb_semaphore_waiting_threads", 'latch="BUF_POOL"'): gauge(latch)},
                            {"latch": (1, "BUF_POOL"), "winner": 5, "healthy": 0}),
    "latch_sync_array_below": (f"no latch timing; the sync array lists {latch * 0.9:g} threads for BUF_POOL on average",
                               {**NO_LATCH_TIMING, **SYNC_ARRAY,
                                ("innodb_semaphore_waiting_threads", 'latch="BUF_POOL"'): gauge(latch * 0.9)},
                               {"winner": 0, "healthy": 1}),
    "latch_sync_array_above": (f"no latch timing; the sync array lists {latch * 1.1:g} threads for BUF_POOL on average",
                               {**NO_LATCH_TIMING, **SYNC_ARRAY,
                                ("innodb_semaphore_waiting_threads", 'latch="BUF_POOL"'): gauge(latch * 1.1)},
                               {"latch": (1, "BUF_POOL"), "winner": 5, "healthy": 0}),
    "latch_sync_array_rare": ("3 threads in one scrape of six: averaged over the scrapes, not over the samples",
                              {**NO_LATCH_TIMING, **SYNC_ARRAY,
                               ("innodb_semaphore_waiting_threads", 'latch="BUF_POOL"'): "3 _ _ _ _ _ 3 _ _ 3 _ _"},
                              {"winner": 0, "healthy": 1}),
    "latch_unmeasured": ("no latch timing and no sync array (stock MariaDB 10.6+)", NO_LATCH_TIMING,
                         {"latch": -1, "winner": -1, "healthy": -1}),
    # --- transaction bound
    "trx_oldest_below": (f"oldest transaction open {oldest} s",
                         {("innodb_oldest_transaction_seconds", ""): gauge(oldest)}, {"winner": 0, "healthy": 1}),
    "trx_oldest_above": (f"oldest transaction open {oldest + 1} s",
                         {("innodb_oldest_transaction_seconds", ""): gauge(oldest + 1)},
                         {"transactions": 1, "winner": 6, "healthy": 0}),
    "trx_lock_waits_below": (f"{share * 0.99:.2%} of the open transactions wait for a row lock",
                             {("innodb_lock_waiting_transactions", ""): gauge(4 * share * 0.99)},
                             {"winner": 0, "healthy": 1}),
    "trx_lock_waits_above": (f"{share:.0%} of the open transactions wait for a row lock",
                             {("innodb_lock_waiting_transactions", ""): gauge(4 * share)},
                             {"transactions": 1, "winner": 6, "healthy": 0}),
    # --- purge bound
    "purge_history_below": (f"history growing, still under {history}",
                            {("innodb_history_list_length", ""): growing(history - 200, 1)}, {"winner": 0, "healthy": 1}),
    "purge_history_above": (f"history above {history} and growing",
                            {("innodb_history_list_length", ""): growing(history + 1, 1)},
                            {"purge": 1, "winner": 7, "healthy": 0}),
    "purge_history_shrinking": (f"history above {history}, shrinking as purge works",
                                {("innodb_history_list_length", ""): growing(history * 2, -10)},
                                {"winner": 0, "healthy": 1}),
    "purge_stalled": (f"history above {history}, flat, nothing purged",
                      {("innodb_history_list_length", ""): gauge(history * 2),
                       ("innodb_purge_undo_log_pages_total", ""): counter(0)},
                      {"purge": 1, "winner": 7, "healthy": 0}),
    "purge_dml_delay": ("DML delayed 10 µs for purge lag", {("innodb_purge_dml_delay_seconds", ""): gauge(0.00001)},
                        {"purge": 1, "winner": 7, "healthy": 0}),
    # --- host bound
    "host_busy_below": (f"CPUs {busy - 0.01:.0%} busy", cpus(1 - busy + 0.01, 0), {"winner": 0, "healthy": 1}),
    "host_busy_above": (f"CPUs {busy + 0.01:.0%} busy", cpus(1 - busy - 0.01, 0),
                        {"host": 1, "winner": 8, "healthy": 0}),
    "host_iowait_below": (f"{iowait - 0.01:.0%} of CPU time in iowait", cpus(0.5, iowait - 0.01),
                          {"winner": 0, "healthy": 1}),
    "host_iowait_above": (f"{iowait + 0.01:.0%} of CPU time in iowait", cpus(0.5, iowait + 0.01),
                          {"host": 1, "winner": 8, "healthy": 0}),
    # --- optional measures, missing flavours, the server down
    "stock_counters_off": ("the INNODB_METRICS counters off (sync waits, LRU loops, purge progress, DML delay): "
                           "those are optional, the classes are still decided",
                           {("innodb_flush_sync_waits_total", ""): None, ("innodb_lru_get_free_loops_total", ""): None,
                            ("innodb_lru_get_free_search_total", ""): None,
                            ("innodb_purge_undo_log_pages_total", ""): None,
                            ("innodb_purge_dml_delay_seconds", ""): None},
                           {"winner": 0, "healthy": 1}),
    "no_host": ("no node_exporter for this server", {k: None for k in cpus(0, 0)},
                {"host": -1, "winner": -1, "healthy": -1}),
    "server_down": ("the exporter reads nothing from the server (innodb_up 0)",
                    {**{k: None for k in BASE if k[0].startswith("innodb_") and k[0] != "innodb_up"},
                     ("innodb_up", ""): gauge(0)},
                    {**{c: -1 for c in CLASSES if c != "host"}, "winner": -1, "healthy": -1}),
    # --- precedence: the first class that holds wins
    "redo_over_write_io_and_host": ("checkpoint age near the max (past the async point), writes pending, CPUs busy",
                                    {("innodb_checkpoint_age_bytes", ""): gauge(95),
                                     ("innodb_buffer_pool_pending_writes", 'kind="flush_list"'): gauge(30),
                                     **cpus(0.02, 0)},
                                    {"redo": 1, "write_io": 1, "host": 1, "winner": 1, "healthy": 0}),
    "write_io_over_free_pages": ("LRU writes pending and threads waiting for free pages",
                                 {("innodb_buffer_pool_pending_writes", 'kind="lru"'): gauge(20),
                                  ("innodb_free_page_waits_total", ""): counter(5)},
                                 {"write_io": 1, "free_pages": 1, "winner": 2, "healthy": 0}),
    "free_pages_over_reads_and_latch": ("free page waits, reads pending, a contended latch",
                                        {("innodb_free_page_waits_total", ""): counter(5),
                                         ("innodb_buffer_pool_pending_reads", ""): gauge(20),
                                         ("innodb_latch_wait_seconds_total", 'kind="mutex",name="buf_pool_mutex"'):
                                         counter(3)},
                                        {"free_pages": 1, "read_io": 1, "latch": (1, "buf_pool_mutex"), "winner": 3,
                                         "healthy": 0}),
    "read_io_over_latch": ("reads pending and a contended latch",
                           {("innodb_buffer_pool_pending_reads", ""): gauge(20),
                            ("innodb_latch_wait_seconds_total", 'kind="mutex",name="buf_pool_mutex"'): counter(3)},
                           {"read_io": 1, "latch": (1, "buf_pool_mutex"), "winner": 4, "healthy": 0}),
    "latch_over_transactions": ("a contended latch while a quarter of the transactions wait for row locks",
                                {("innodb_latch_wait_seconds_total", 'kind="mutex",name="buf_pool_mutex"'): counter(3),
                                 ("innodb_lock_waiting_transactions", ""): gauge(2)},
                                {"latch": (1, "buf_pool_mutex"), "transactions": 1, "winner": 5, "healthy": 0}),
    "latch_over_host": ("a contended latch on busy CPUs",
                        {("innodb_latch_wait_seconds_total", 'kind="mutex",name="buf_pool_mutex"'): counter(3),
                         **cpus(0.02, 0)},
                        {"latch": (1, "buf_pool_mutex"), "host": 1, "winner": 5, "healthy": 0}),
    "transactions_over_purge": ("a transaction open for an hour, and the history it holds growing",
                                {("innodb_oldest_transaction_seconds", ""): gauge(3600),
                                 ("innodb_history_list_length", ""): growing(history * 3, 50)},
                                {"transactions": 1, "purge": 1, "winner": 6, "healthy": 0}),
    "purge_over_host": ("the history growing on busy CPUs",
                        {("innodb_history_list_length", ""): growing(history * 3, 50), **cpus(0.02, 0)},
                        {"purge": 1, "host": 1, "winner": 7, "healthy": 0}),
    "holds_over_not_decidable": ("a class holds while another cannot be decided: the winner is the class",
                                 {**NO_LATCH_TIMING, ("innodb_buffer_pool_pending_reads", ""): gauge(20)},
                                 {"latch": -1, "read_io": 1, "winner": 4, "healthy": 0}),
}


def _selector(metric: str, labels: str, instance: str) -> str:
    job = "node" if metric.startswith("node_") or metric == "up" else "innodb"
    return f'{metric}{{job="{job}",instance="{instance}"{"," + labels if labels else ""}}}'


def _state_sample(instance: str, klass: str, value) -> dict:
    value, latch = value if isinstance(value, tuple) else (value, None)
    labels = f'class="{klass}",instance="{instance}"' + (f',latch="{latch}"' if latch else "")
    return {"labels": f"instance_class:innodb_bottleneck:state{{{labels}}}", "value": value}


def build() -> dict:
    series, exprs = [], []
    for instance, (what, changes, expected) in CASES.items():
        for (metric, labels), values in {**BASE, **changes}.items():
            if values is not None:
                series.append({"series": _selector(metric, labels, instance), "values": values})
        states = [_state_sample(instance, c, expected.get(c, 0)) for c in CLASSES + ("healthy",)]
        exprs.append({"expr": f'instance_class:innodb_bottleneck:state{{instance="{instance}"}}', "eval_time": EVAL,
                      "exp_samples": sorted(states, key=lambda s: s["labels"])})
        exprs.append({"expr": f'instance:innodb_bottleneck:class{{instance="{instance}"}}', "eval_time": EVAL,
                      "exp_samples": [{"labels": f'instance:innodb_bottleneck:class{{instance="{instance}"}}',
                                       "value": expected["winner"]}]})
    return {"rule_files": ["../rules/bottleneck.yml"], "evaluation_interval": f"{STEP}s",
            "tests": [{"interval": f"{STEP}s", "input_series": series, "promql_expr_test": exprs}]}


def text() -> str:
    """The test file, as it is written."""
    lines = [f"#   {name}: {what}" for name, (what, _, _) in CASES.items()]
    return ("# Generated by alerts/tests/bottleneck_cases.py (./innodb-stack generate); change the cases there, "
            "not this file.\n"
            "# promtool test rules: each instance is a case, its states and winner after two windows.\n"
            + "\n".join(lines) + "\n" + yaml.safe_dump(build(), sort_keys=False, width=120, allow_unicode=True))
