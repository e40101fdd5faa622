"""Golden files: the whole exposition for each verbatim fixture, committed beside them.

``./innodb-stack generate`` writes them (tools/generate.py) and ``--check`` says which are stale; review
the diff before committing one.
"""

from __future__ import annotations

import json
import os

from innodb_exporter import offline, sources
from innodb_exporter.metrics.snapshot import Snapshot
from innodb_exporter.scraping import exposition
from innodb_exporter.scraping.scrape import ScrapeResult, SourceResult, build_sources
from innodb_exporter.sources.server import ServerInfo

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(TESTS, "fixtures")
GOLDEN = os.path.join(TESTS, "golden")


def status_fixtures() -> list[str]:
    folder = os.path.join(FIXTURES, "innodb_status")
    return sorted(f for f in os.listdir(folder) if f.endswith(".txt"))


def server_captures() -> list[str]:
    folder = os.path.join(FIXTURES, "servers")
    return sorted(f for f in os.listdir(folder) if f.endswith(".json"))


def read_status(name: str) -> str:
    with open(os.path.join(FIXTURES, "innodb_status", name), encoding="utf-8", newline="") as f:
        return f.read()


def load_capture(name: str) -> tuple[ServerInfo, dict]:
    with open(os.path.join(FIXTURES, "servers", name), encoding="utf-8") as f:
        capture = json.load(f)
    s = capture["server"]
    server = ServerInfo(s["flavor"], tuple(s["version"]), s["performance_schema"], s["metrics_state_column"])
    return server, capture["sources"]


def snapshot_from_capture(name: str) -> tuple[Snapshot, dict[str, SourceResult]]:
    """Feed recorded rows through each source's from_rows, as a live scrape would (which does not ask a
    server for what it cannot answer)."""
    server, rows = load_capture(name)
    snapshot = Snapshot(server=server)
    results = {}
    for source in build_sources(sources.NAMES):
        if (reason := source.unsupported(server)) is not None:
            results[source.name] = SourceResult(source.name, "unsupported", "unsupported", reason)
            continue
        if source.name not in rows:
            results[source.name] = SourceResult(source.name, "unsupported", "unsupported", "not recorded")
            continue
        source_rows = rows[source.name]
        if source.name == sources.EngineInnodbStatus.name:
            source_rows = [[source_rows[0][0], source_rows[0][1], read_status(name[:-5] + ".txt")]]
        setattr(snapshot, source.field, source.from_rows(source_rows))
        results[source.name] = SourceResult(source.name, "read")
    return snapshot, results


def capture_exposition(name: str) -> str:
    snapshot, results = snapshot_from_capture(name)
    result = ScrapeResult(up=True, server=snapshot.server, sources=results, snapshot=snapshot)
    fams = [f for f in exposition.families(result)
            if f.name != "innodb_exporter_source_duration_seconds"]  # timings differ run to run
    return exposition.render(fams)[0].decode()


def status_exposition(name: str) -> str:
    return offline.render(offline.parse_text(read_status(name))).decode()


def golden_name(fixture: str) -> str:
    return os.path.splitext(fixture)[0] + ".prom"


def golden_path(kind: str, fixture: str) -> str:
    return os.path.join(GOLDEN, kind, golden_name(fixture))
