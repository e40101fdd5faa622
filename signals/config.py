"""The one configuration of rules and dashboards (node-mixin's ``_config``): job selectors, rate
windows, thresholds and the runbook address. ``alerts/mixin.py --set KEY=VALUE`` overrides an entry
for one build of the rules; the dashboards are built with these values.

Every threshold carries the sentence that says when to change it. Durations are Prometheus durations.
The values that ``innodb-exporter parse`` also judges a status text by are declared once, in
``innodb_tuning`` (below both the exporter and this file); the entries here take their defaults from there.
"""

from __future__ import annotations

from innodb_tuning import THRESHOLDS

CONFIG = {
    # Which scrape job carries which exporter's series (provisioning/prometheus/prometheus.yml names
    # them so). Rules select with these alone; panels add instance="$instance".
    "innodb_selector": 'job="innodb"',
    "mysqld_selector": 'job="mysqld"',
    "node_selector": 'job="node"',
    # Rate windows of the rules. Records of throughput (REDO bytes, pages flushed) use a short window
    # to keep bursts visible; the rates alerts compare with a threshold use a longer one so that one
    # late scrape does not fire them. Panels use Grafana's $__rate_interval instead.
    "record_rate_window": "1m",
    "alert_rate_window": "5m",
    # Where docs/runbooks.md is read: each alert's runbook_url is this plus '#' and the alert name in
    # lower case (the Markdown anchor of its section). The project has no public home yet, so the
    # default is a placeholder on a reserved domain (RFC 2606) that leaks nothing; point it at your
    # copy on your Git host, e.g. https://git.example.com/dba/innodb-stack/-/blob/main/docs/runbooks.md
    "runbook_base_url": "https://innodb-stack.example/docs/runbooks.md",
    # Checkpoint age as a share of the max checkpoint age. Kravtchuk asks for a margin below the
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
    # Adaptive flushing should finish each pass within 1 s (Kravtchuk); more means the page
    # cleaners cannot keep up. Keep at 1 s unless InnoDB's averaging window (innodb_flushing_avg_loops) is changed.
    # The server refreshes the average only while adaptive flushing runs (on MariaDB, while the REDO age
    # is above innodb_adaptive_flushing_lwm) and keeps it after: the alert also wants it refreshed
    # within the duration, so that it ends when the load that slowed flushing has gone.
    "flush_seconds_max": 1.0,
    "flush_slow_for": "10m",
    # Threads that waited for a synchronous flush, or for a free page: any is too many, so the
    # thresholds are 0. The alerts look back over the alert rate window, so that one stall stays visible
    # for that long; the duration is one evaluation more, not how long the waits must go on (with a
    # duration as long as the window, a single stall never fired).
    "sync_flush_waits_for": "1m",
    "free_page_waits_for": "1m",
    # Free page requests that looped (retried) per second: InnoDB is short of free pages; an early sign.
    "lru_loops_per_second": 0,
    "lru_loops_for": "15m",
    # History list length above which purge lag matters (Kinoshita 2010: < 100000 is no problem), the
    # window over which it must stay high and grow, and the window in which purge must progress.
    "history_high": THRESHOLDS.history,
    "history_window": "1h",
    "history_for": "15m",
    "purge_window": "15m",
    "purge_for": "15m",
    # DML throttled for purge lag (innodb_max_purge_lag): any delay, for this long.
    "purge_delay_for": "5m",
    # Average REDO fsync latency: it is the transaction response time floor (Kravtchuk). 10 ms is
    # slow for SSDs; raise it for spinning disks or network storage.
    "redo_fsync_seconds": 0.010,
    "redo_fsync_for": "10m",
    # Pending reads or flush-list/LRU writes above 10 on average mean IO bound (Kinoshita 2010).
    "pending_io_high": THRESHOLDS.pending_io,
    "pending_io_window": "5m",
    "pending_io_for": "10m",
    # Oldest open transaction: it holds purge back. 10 minutes suits OLTP; raise it for reporting jobs.
    "long_transaction_seconds": THRESHOLDS.long_transaction_seconds,
    "long_transaction_for": "2m",
    # Longest semaphore wait: InnoDB aborts the server when one reaches 600 s.
    "semaphore_wait_warning_seconds": 60,
    "semaphore_wait_critical_seconds": 300,
    "semaphore_wait_for": "1m",
    # --- the next bottleneck (signals/bottleneck.py; docs/runbooks.md, "The next bottleneck") ---
    # The classes reuse the alerts' thresholds above where they ask the same question (pending IO,
    # checkpoint age near the max, REDO fsync latency, history list length, oldest transaction); these
    # are the classes' own. The window over which every class averages gauges and takes rates (document
    # 003: "sampling several times and average"): twelve scrapes of the InnoDB job, so that one sample
    # of a saw-tooth does not flip the class, and short enough to name a new limit within two minutes.
    # Lengthen it for a steadier timeline on a server whose load swings by the minute.
    "bottleneck_window": "1m",
    # Log buffer waits per second above which REDO bound holds: any wait means commits queue for the
    # log buffer (innodb_log_buffer_size too small for the write rate).
    "redo_log_waits_per_second": 0,
    # User threads that stalled waiting for a free page, per second over the window (Kravtchuk: "real
    # stalls on free page waits.. (very bad)"). The alert fires on any wait; the class names free pages the
    # limit from one stall a second, so that a trickle of waits under another limit (a contended latch on a
    # tiny pool) does not hide it. Lower it for a server with few, long transactions.
    "free_page_waits_per_second": 1,
    # Free page requests that looped because the free list was empty, as a share of all free page
    # requests. Single loops under a burst are normal; one request in ten looping means LRU flushing does
    # not follow the free page demand (Kravtchuk: "loops in wait: not good").
    "lru_loops_share": 0.1,
    # Average threads waiting for one latch: performance_schema's time waited per second for an
    # instrument, or the threads the sync array lists for one latch (Kinoshita's count, over the
    # window's samples). Lower it to see contention earlier on a server with few connections.
    "latch_waiting_threads": THRESHOLDS.latch_waiting_threads,
    # Share of the open transactions that wait for a row lock, on average over the window: above it the
    # transactions queue on each other's rows (Kravtchuk: data contention; the application's, not
    # InnoDB's). Raise it for workloads that serialise on purpose (queues, counters).
    "lock_wait_share": THRESHOLDS.lock_wait_share,
    # The host (node_exporter): CPU busy (all modes but idle and iowait) as a share of all CPUs, and the
    # share of all CPU time idle waiting for storage (vmstat's us+sy and wa, which Kinoshita 2010 reads).
    # 90% busy leaves no room for a burst; a fifth in iowait means storage holds the CPUs back. Lower
    # the iowait share on hosts with many CPUs, where one saturated disk shows as little iowait.
    "host_cpu_busy_ratio": 0.9,
    "host_iowait_ratio": 0.2,
    # Server or exporter unreachable.
    "down_for": "1m",
    # Counters the alerts need that stay disabled.
    "counter_disabled_for": "1h",
}
