"""Buffer pool and LRU: is there a free page when a read needs one?"""

from __future__ import annotations

from .common import ALERTS, INNODB, MYSQLD, ORANGE, RATE, RED, Signal, dashboard, panel, q

UID = "innodb-buffer-pool"

FREE_PAGE_DEMAND = Signal(
    "Free page requests, loops and waits",
    (q(f"rate(innodb_lru_get_free_search_total{{{INNODB}}}[{RATE}]{{off}})", "free page requests"),
     q(f"rate(innodb_lru_get_free_loops_total{{{INNODB}}}[{RATE}]{{off}})", "loops (free list empty)"),
     q(f"rate(innodb_lru_get_free_waits_total{{{INNODB}}}[{RATE}]{{off}})", "waits (slept)",
       "MariaDB 10.11+ has no buffer_LRU_get_free_waits counter; 'free page waits' still counts the stalls."),
     q(f"rate(innodb_free_page_waits_total{{{INNODB}}}[{RATE}]{{off}})", "free page waits (user threads)")),
    "ops",
    "Free page requests per second, and how many found the free list empty (loops) or had to wait. Healthy: "
    "loops and waits at zero (document 004: 'any waits / loops? => no'); waits stall transactions. "
    "Alerts: InnoDBFreePageWaits, InnoDBLRUGetFreeLoops.",
    min=0,
)
LRU_DEPTH = Signal(
    "Free page requests per instance against innodb_lru_scan_depth",
    (q(f"rate(innodb_lru_get_free_search_total{{{INNODB}}}[{RATE}]{{off}})"
       f" / on (instance) group_left () max by (instance) (mysql_global_variables_innodb_buffer_pool_instances{{{MYSQLD}}}{{off}})"
       f" or rate(innodb_lru_get_free_search_total{{{INNODB}}}[{RATE}]{{off}})", "free page requests/s per instance"),
     q(f"mysql_global_variables_innodb_lru_scan_depth{{{MYSQLD}}}{{off}}", "innodb_lru_scan_depth")),
    "short",
    "Document 004's sizing rule: innodb_lru_scan_depth >= free page requests per second / buffer pool "
    "instances. Healthy: the request line stays under the setting. (MariaDB 10.5+ has one buffer pool.)",
    min=0,
)
LRU_FLUSHING = Signal(
    "LRU flushing and single page flushes",
    (q(f'rate(innodb_flush_pages_total{{{INNODB},kind=~"lru|single_page"}}[{RATE}]{{off}})', "{{kind}}"),
     q(f"rate(innodb_lru_get_free_search_total{{{INNODB}}}[{RATE}]{{off}})", "free page demand")),
    "pps",
    "Pages flushed from the LRU tail per second, against the free page demand. Healthy: LRU flushing follows "
    "the demand and there are no single page flushes (a user thread flushing a page itself, MySQL only).",
    min=0,
)
PAGES = Signal(
    "Buffer pool pages by state",
    (q(f'innodb_buffer_pool_pages{{{INNODB},state=~"free|data|misc"}}{{off}}', "{{state}}"),),
    "short",
    "Free, data and misc pages (dirty pages are part of data). Healthy for an in-memory workload: free pages "
    "do not run down to nothing under load (document 004: 'why is the amount of free pages going down?').",
    min=0, stacked=True,
)
DIRTY = Signal(
    "Dirty pages",
    (q(f'innodb_buffer_pool_pages{{{INNODB},state="dirty"}}{{off}}', "dirty pages"),),
    "short",
    "Modified pages not yet flushed. Healthy: steady; a steady climb means flushing lags the writes.",
    min=0,
)
PENDING = Signal(
    "Pending reads and writes",
    (q(f"innodb_buffer_pool_pending_reads{{{INNODB}}}{{off}}", "reads"),
     q(f"innodb_buffer_pool_pending_writes{{{INNODB}}}{{off}}", "writes: {{kind}}")),
    "short",
    f"IO requests waiting for storage, sampled at each scrape. Healthy: averages under {ALERTS['pending_io_high']} "
    "(document 003: above 10 on average means IO bound). Alerts: InnoDBPendingReadsHigh, InnoDBPendingWritesHigh.",
    steps=((ALERTS["pending_io_high"], ORANGE),), min=0,
)
HIT_RATIO = Signal(
    "Buffer pool hit ratio",
    (q(f"innodb_buffer_pool_hit_ratio{{{INNODB}}}{{off}}", "hit ratio (since the last status printout)"),
     q(f"1 - rate(mysql_global_status_innodb_buffer_pool_reads{{{MYSQLD}}}[{RATE}]{{off}})"
       f" / rate(mysql_global_status_innodb_buffer_pool_read_requests{{{MYSQLD}}}[{RATE}]{{off}})", "hit ratio")),
    "percentunit",
    "Page requests served from memory. Healthy: 100% for an in-memory workload (document 004); document 003 "
    "grew the buffer pool at 87.2%.",
    steps=((0.0, RED), (0.95, ORANGE), (0.99, "green")), max=1,
)
INSTANCES = Signal(
    "Pages per buffer pool instance",
    (q(f'innodb_buffer_pool_instance_pages{{{INNODB},state=~"free|dirty"}}{{off}}', "pool {{pool}} {{state}}"),),
    "short",
    "Free and dirty pages of each buffer pool instance. Healthy: the instances look alike; one running out of "
    "free pages alone points to a hot spot.",
    min=0, no_data_on_mariadb="MariaDB 10.5+ has a single buffer pool, and prints no per-instance section.",
)

SIGNALS = (FREE_PAGE_DEMAND, LRU_DEPTH, LRU_FLUSHING, PAGES, DIRTY, PENDING, HIT_RATIO, INSTANCES)


def build():
    d = dashboard(UID, "InnoDB / Buffer pool and LRU", "Free page demand, LRU flushing, pending IO (document 004).")
    d = d.with_panel(panel(FREE_PAGE_DEMAND)).with_panel(panel(LRU_DEPTH))
    d = d.with_panel(panel(LRU_FLUSHING)).with_panel(panel(PENDING))
    d = d.with_panel(panel(PAGES, 8)).with_panel(panel(DIRTY, 8)).with_panel(panel(HIT_RATIO, 8))
    d = d.with_panel(panel(INSTANCES, 24))
    return d
