"""Buffer pool and LRU: is there a free page when a read needs one?"""

from __future__ import annotations

from signals import innodb as s
from signals.promql import binary, innodb, max_by, mysqld, rate

from .colors import label_values
from .common import CONFIG, GREEN, ORANGE, RED, Query, View, dashboard, panel

UID = "innodb-buffer-pool"
TITLE = "InnoDB / Buffer pool and LRU"

FREE_SEARCH = rate(innodb("innodb_lru_get_free_search_total"))
INSTANCES_SETTING = max_by(("instance",), mysqld("mysql_global_variables_innodb_buffer_pool_instances"))

FREE_PAGE_DEMAND = View(
    "Free page requests, loops and waits",
    (Query(FREE_SEARCH, "free page requests"),
     Query(s.LRU_GET_FREE_LOOPS, "loops (free list empty)"),
     Query(rate(innodb("innodb_lru_get_free_waits_total")), "waits (slept)",
           "MariaDB 10.11+ has no buffer_LRU_get_free_waits counter; 'free page waits' still counts the stalls."),
     Query(s.FREE_PAGE_WAITS, "free page waits (user threads)")),
    "ops",
    "Free page requests per second, and how many found the free list empty (loops) or had to wait. Healthy: "
    "loops and waits at zero (Kravtchuk: 'any waits / loops? => no'); waits stall transactions. "
    "Alerts: InnoDBFreePageWaits, InnoDBLRUGetFreeLoops.",
    min=0,
)
# Kravtchuk's sizing rule, innodb_lru_scan_depth >= free page requests/s per instance, as one share:
# the rate and the setting differ by two orders of magnitude and flatten each other on one axis.
LRU_DEPTH = View(
    "Free page demand per instance, share of innodb_lru_scan_depth",
    (Query(binary(binary(FREE_SEARCH, "/", INSTANCES_SETTING, "on (instance) group_left ()") | FREE_SEARCH, "/",
                  max_by(("instance",), mysqld("mysql_global_variables_innodb_lru_scan_depth")),
                  "on (instance) group_left ()"),
           "free page requests/s per instance ÷ innodb_lru_scan_depth",
           dimension="ratio"),),  # the page cleaner scans innodb_lru_scan_depth pages a second per instance
    "percentunit",
    "Kravtchuk's sizing rule: innodb_lru_scan_depth >= free page requests per second / buffer pool "
    "instances. Healthy: under 100%; above it, the page cleaner scans too little of the LRU to keep up with "
    "the demand. (MariaDB 10.5+ has one buffer pool.)",
    steps=((1, ORANGE),), min=0, soft_max=1,
)
LRU_KINDS = ("lru", "single_page")
LRU_FLUSHING = View(
    "LRU flushing and single page flushes",
    (Query(rate(innodb("innodb_flush_pages_total", f'kind=~"{"|".join(LRU_KINDS)}"')), "{{kind}}", values=LRU_KINDS),
     Query(FREE_SEARCH, "free page requests")),
    s.PAGES_PER_SECOND,
    "Pages flushed from the LRU tail per second, against the free page demand. Healthy: LRU flushing follows "
    "the demand and there are no single page flushes (a user thread flushing a page itself, MySQL only).",
    min=0,
)
PARTS = ("free", "data", "misc")  # the pool's pages, whole (dirty pages are part of data)
PAGES = View(
    "Buffer pool pages by state",
    (Query(innodb("innodb_buffer_pool_pages", f'state=~"{"|".join(PARTS)}"'), "{{state}}", values=PARTS),),
    "short",
    "Free, data and misc pages, stacked to the pool's size (dirty pages are part of data). Healthy for an "
    "in-memory workload: free pages do not run down to nothing under load (Kravtchuk: 'why is the amount "
    "of free pages going down?').",
    min=0, stacked=True, decimals=0,
)
DIRTY = View(
    "Dirty pages",
    (Query(s.DIRTY_PAGES_RATIO, "dirty pages"),),
    s.DIRTY_PAGES_RATIO.unit,
    "Modified pages not yet flushed, as a share of the buffer pool (as on the Overview). Healthy: steady, under "
    "innodb_max_dirty_pages_pct; a steady climb means flushing lags the writes.",
    min=0,
)
PENDING = View(
    "Pending reads and writes",
    (Query(s.PENDING_READS, "reads"),
     Query(s.PENDING_WRITES, "writes: {{kind}}", values=label_values("innodb_buffer_pool_pending_writes"))),
    "short",
    f"IO requests waiting for storage, sampled at each scrape. Healthy: averages under {CONFIG['pending_io_high']} "
    "(Kinoshita 2010: above 10 on average means IO bound). Alerts: InnoDBPendingReadsHigh, InnoDBPendingWritesHigh.",
    steps=((CONFIG["pending_io_high"], ORANGE),), min=0, soft_max=CONFIG["pending_io_high"], decimals=0,
)
HIT_RATIO = View(
    "Buffer pool hit ratio",
    (Query(innodb("innodb_buffer_pool_hit_ratio"), "hit ratio (since the last status printout)"),
     Query(1 - rate(mysqld("mysql_global_status_innodb_buffer_pool_reads"))
           / rate(mysqld("mysql_global_status_innodb_buffer_pool_read_requests")), "hit ratio")),
    "percentunit",
    "Page requests served from memory. Healthy: 100% for an in-memory workload (Kravtchuk); Kinoshita 2010 "
    "grew the buffer pool at 87.2%. The axis starts at 90% unless the ratio falls below it.",
    base=RED, steps=((0.95, ORANGE), (0.99, GREEN)), max=1, soft_min=0.9, fill=0,
)
INSTANCES = View(
    "Pages per buffer pool instance",
    (Query(innodb("innodb_buffer_pool_instance_pages", 'state=~"free|dirty"'), "pool {{pool}} {{state}}",
           series=8),),  # free and dirty of up to 4 instances
    "short",
    "Free and dirty pages of each buffer pool instance. Healthy: the instances look alike; one running out of "
    "free pages alone points to a hot spot.",
    min=0, decimals=0,
    no_data_on_mariadb="MariaDB 10.5+ has a single buffer pool, and prints no per-instance section.",
    no_value="No data: a single buffer pool instance",
)

VIEWS = (FREE_PAGE_DEMAND, LRU_DEPTH, LRU_FLUSHING, PAGES, DIRTY, PENDING, HIT_RATIO, INSTANCES)


def build():
    d = dashboard(UID, TITLE, "Free page demand, LRU flushing, pending IO (Kravtchuk).")
    d = d.with_panel(panel(FREE_PAGE_DEMAND)).with_panel(panel(LRU_DEPTH))
    d = d.with_panel(panel(LRU_FLUSHING)).with_panel(panel(PENDING))
    d = d.with_panel(panel(PAGES)).with_panel(panel(DIRTY))
    d = d.with_panel(panel(HIT_RATIO)).with_panel(panel(INSTANCES))
    return d
