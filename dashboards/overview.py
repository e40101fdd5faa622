"""Overview: what limits the server now and over the window (the next bottleneck), then the headline
signals at a glance, each coloured by the threshold of its alert."""

from __future__ import annotations

from signals import bottleneck as b
from signals import innodb as s
from signals.promql import avg_over_time, count, count_by, max_without, series, vector

from . import buffer_pool, checkpoint, contention, host, purge, redo
from .common import CONFIG, FIRING, GREEN, ORANGE, RED, Link, Mapping, Query, View, dashboard, panel

UID = "innodb-overview"
TITLE = "InnoDB / Overview"


def stat(title, expr, unit, description, steps=(), **kw) -> View:
    return View(title, (Query(expr, title),), unit, description, kind="stat", steps=steps, **kw)


UP = stat("Server answers", s.SERVER_UP, "none",
          "1 when the exporter read the server in its last scrape. Healthy: 1. Alerts: InnoDBServerDown, "
          "InnoDBExporterDown.",
          base=RED, steps=((1, GREEN),))
ALERTS_FIRING = stat("Alerts firing", count(count_by(("alertname",), FIRING)) | vector(0), "none",
                     "Alerts of warning or critical severity firing for this server now, an alert whose warning "
                     "and critical levels both fire counted once (Alertmanager has the details, and the info "
                     "alerts). Healthy: 0.",
                     steps=((1, ORANGE),))
CHECKPOINT = stat("Checkpoint age / max", s.CHECKPOINT_AGE_RATIO, "percentunit",
                  "Checkpoint age as a share of its limit. Healthy: under "
                  f"{CONFIG['checkpoint_age_warning_ratio']:.0%} (InnoDBCheckpointAgeHigh).",
                  steps=((CONFIG["checkpoint_age_warning_ratio"], ORANGE),
                         (CONFIG["checkpoint_age_critical_ratio"], RED)))
HISTORY = stat("History list length", s.HISTORY_LENGTH, "short",
               f"Undo records not yet purged. Healthy: under {CONFIG['history_high']} and not growing "
               "(InnoDBHistoryListGrowing).", steps=((CONFIG["history_high"], ORANGE),))
OLDEST = stat("Oldest transaction", s.OLDEST_TRANSACTION, "s",
              f"Age of the oldest open transaction. Healthy: under {CONFIG['long_transaction_seconds']} s "
              "(InnoDBLongTransaction).", steps=((CONFIG["long_transaction_seconds"], ORANGE),))
FREE_WAITS = stat("Free page waits", s.FREE_PAGE_WAITS, "ops",
                  "User threads waiting for a free page, per second. Healthy: 0 (InnoDBFreePageWaits).",
                  steps=((1e-9, RED),))
PENDING = stat("Pending reads", avg_over_time(s.PENDING_READS.series), "short",
               f"Buffer pool reads waiting for storage. Healthy: under {CONFIG['pending_io_high']} on average "
               "(InnoDBPendingReadsHigh).", steps=((CONFIG["pending_io_high"], ORANGE),))
SEMAPHORE = stat("Longest semaphore wait", s.SEMAPHORE_LONGEST_WAIT, "s",
                 "Longest current latch wait. Healthy: 0 (InnoDBSemaphoreWaitLong; InnoDB aborts at 600 s).",
                 steps=((CONFIG["semaphore_wait_warning_seconds"], ORANGE),
                        (CONFIG["semaphore_wait_critical_seconds"], RED)),
                 no_data_on_mariadb=contention.NO_SYNC_ARRAY)
QPS = stat("Queries per second", s.QUERIES, s.QUERIES.unit,
           "Statements per second (mysqld_exporter): the load the other signals respond to. Healthy: steady "
           "for a steady workload; a drop with the other signals red is the stall they explain. No alert: a "
           "neutral colour.")
DIRTY = stat("Dirty pages", s.DIRTY_PAGES_RATIO, "percentunit",
             "Share of the buffer pool modified and not yet flushed. Healthy: steady, under "
             "innodb_max_dirty_pages_pct. No alert: a neutral colour.")

# --- the next bottleneck (signals/bottleneck.py) --------------------------------------------------
# Where each class's evidence is drawn: the dashboards a click on it opens, in this order.
EVIDENCE = {"redo": (checkpoint, redo), "write_io": (checkpoint, buffer_pool), "free_pages": (buffer_pool,),
            "read_io": (buffer_pool, host), "latch": (contention,), "transactions": (purge,), "purge": (purge,),
            "host": (host,)}
COLORS = {"redo": "#C4162A", "write_io": "#FF780A", "free_pages": "#E0B400", "read_io": "#1F60C4",
          "latch": "#8F3BB8", "transactions": "#0A8C8C", "purge": "#D683CE", "host": "#8C5A2B"}
HEALTHY_COLOR, UNKNOWN_COLOR, CLEAR_COLOR = "#73BF69", "#9FA7B3", "#E4F2E1"
WINNER = (Mapping(b.UNKNOWN, b.UNKNOWN_CLASS.name, UNKNOWN_COLOR),
          Mapping(b.HEALTHY, b.HEALTHY_CLASS.name, HEALTHY_COLOR),
          *(Mapping(c.code, c.name, COLORS[c.key]) for c in b.CLASSES))
# Grafana's data link variables: the dashboard's time range and variables (server, data source) go along.
KEEP = "?${__url_time_range}&${__all_variables}"


def links(key: str) -> tuple[Link, ...]:
    """A class's evidence dashboards and its runbook section."""
    c = next(c for c in b.CLASSES + (b.HEALTHY_CLASS, b.UNKNOWN_CLASS) if c.key == key)
    dashboards = tuple(Link(f"{c.name}: {m.TITLE}", f"/d/{m.UID}{KEEP}") for m in EVIDENCE.get(key, ()))
    return dashboards + (Link(f"{c.name}: runbook", f"{CONFIG['runbook_base_url']}#{b.runbook_anchor(c)}"),)


def _row(c: b.Bottleneck) -> Query:
    """One class's row: holds in the class's colour, clear, or not measured."""
    state = series(b.STATE, f'class="{c.key}"')
    return Query(max_without(("latch",), state) if c.key == "latch" else state, c.name,
                 mappings=(Mapping(1, "holds", COLORS.get(c.key, HEALTHY_COLOR)), Mapping(0, "clear", CLEAR_COLOR),
                           Mapping(-1, "not measured", UNKNOWN_COLOR)),
                 links=links(c.key))


WINNER_QUERY = Query(series(b.WINNER), "Limited by")
LIMITS_NOW = View(
    "What limits this server now",
    (WINNER_QUERY,),
    "none",
    "The first class of the tuning procedure that holds now (Kinoshita (2010) and Kravtchuk, in their order of precedence: "
    + ", ".join(f"{c.code} {c.name}" for c in b.CLASSES) + "). Healthy: every class measured and clear. "
    "'Not decidable': no class holds, and the server does not measure some class's evidence (the timeline's grey "
    "rows say which; the runbook says how to turn it on). A click opens the dashboards with its evidence.",
    kind="stat", mappings=WINNER, no_value="No classification: are the bottleneck rules loaded?",
    value_links=tuple((c.code, links(c.key)) for c in b.CLASSES + (b.HEALTHY_CLASS, b.UNKNOWN_CLASS)),
)
LIMITS_TIMELINE = View(
    "What limited it over the window",
    (WINNER_QUERY, *(_row(c) for c in b.CLASSES),
     Query(series(b.STATE, 'class="latch",latch!=""').equals(1), "contended latch: {{latch}}",
           mappings=(Mapping(1, "contended", COLORS["latch"]),), links=links("latch"),
           only_while="a latch is the bottleneck")),
    "none",
    "The first row is the winner over time; below, each class: holds (its colour), clear, or not measured on this "
    "server; last, the latch that was contended, by name. Classes are decided over the last "
    f"{CONFIG['bottleneck_window']} at every rule evaluation (signals/bottleneck.py). Healthy: the first row "
    "green. A click on a row opens the dashboards with that class's evidence, or its runbook.",
    kind="state-timeline", mappings=WINNER, no_value="No classification: are the bottleneck rules loaded?",
)
BOTTLENECK = (LIMITS_NOW, LIMITS_TIMELINE)

STATS = (UP, ALERTS_FIRING, CHECKPOINT, HISTORY, OLDEST, FREE_WAITS, PENDING, SEMAPHORE, QPS, DIRTY)
GRAPHS = (checkpoint.AGE_LIMITS, checkpoint.FLUSH_RATE, purge.HISTORY, redo.BYTES, buffer_pool.FREE_PAGE_DEMAND,
          redo.FSYNC_LATENCY)
VIEWS = BOTTLENECK + STATS + GRAPHS
STAT_WIDTHS = (5, 5, 5, 5, 4)  # five to a row of 24 columns, no hole


def build():
    d = dashboard(UID, TITLE,
                  "Is the engine healthy, and if not, what is the next bottleneck? Each stat turns orange or red "
                  "where its alert fires; the dashboards linked above go into each question.")
    d = d.with_panel(panel(LIMITS_NOW, width=6, height=8)).with_panel(panel(LIMITS_TIMELINE, width=18, height=8))
    for number, view in enumerate(STATS):
        d = d.with_panel(panel(view, width=STAT_WIDTHS[number % len(STAT_WIDTHS)], height=4))
    for view in GRAPHS:
        d = d.with_panel(panel(view))
    return d
