"""The bundle format and export's chunking, without servers."""

from __future__ import annotations

import json
import math
import os
import zipfile

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from innodb_bundle.bundle import BundleError, BundleReader, BundleWriter, Manifest, series_key
from innodb_bundle.openmetrics import ChunkChecker, openmetrics_chunk
from innodb_replay import export as export_module
from innodb_replay.endpoints import Endpoint
from innodb_replay.export import ExportError, parse_time


def test_chunk_is_openmetrics_with_original_timestamps_and_escaped_labels():
    series = {series_key("innodb_up", {"instance": 'db"1', "job": "innodb"}): [(1700000000123, "1"), (1700000000005, "0")],
              series_key("weird", {"l": "a\\b\nc"}): [(1700000000000, "NaN"), (1700000001000, "+Inf")]}
    text = openmetrics_chunk(series).decode()
    assert text.endswith("# EOF\n")
    parsed = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            parsed.setdefault((s.name, tuple(sorted(s.labels.items()))), []).append(
                (s.timestamp.sec * 1000 + s.timestamp.nsec // 1_000_000, s.value))
    assert parsed[("innodb_up", (("instance", 'db"1'), ("job", "innodb")))] == [(1700000000005, 0.0), (1700000000123, 1.0)]
    weird = parsed[("weird", (("l", "a\\b\nc"),))]
    assert math.isnan(weird[0][1]) and weird[1][1] == math.inf
    # What the writer writes, the import's checker takes, whatever the blocks it arrives in.
    seen, instances = set(), set()
    checker = ChunkChecker("chunk", 1700000000000, 1700000001000, -1, seen, instances)
    data = openmetrics_chunk(series)
    for i in range(0, len(data), 7):
        checker.feed(data[i:i + 7])
    assert checker.close() == (2, 4) and len(seen) == 2 and instances == {'db"1'}


def test_written_bundle_verifies_and_reads_back(tmp_path):
    path = str(tmp_path / "b.zip")
    writer = BundleWriter(path, Manifest("export", "http://p:9090", 1000, 5000))
    writer.add_chunk({series_key("a", {"x": "1"}): [(1000, "1"), (2000, "2")]}, 1000, 3000)
    writer.add_chunk({series_key("a", {"x": "1"}): [(4000, "4")]}, 3000, 5000)
    writer.add_metadata({"a": {"type": "gauge", "help": "A.", "unit": ""}, "absent": {"type": "counter"}})
    writer.add_text("t.txt", "hello")
    manifest = writer.close()
    assert not os.path.exists(path + ".partial")
    reader = BundleReader(path)
    contents = reader.verify()
    assert (contents.samples, contents.series, contents.chunks, contents.texts) == (3, 1, 2, 1)
    assert manifest.series == 1 and manifest.samples == 3
    assert reader.metadata() == {"a": {"type": "gauge", "help": "A.", "unit": ""}}
    assert reader.texts() == [("texts/t.txt", "hello")]


def test_the_writer_leaves_out_what_import_would_refuse(tmp_path):
    path = str(tmp_path / "b.zip")
    writer = BundleWriter(path, Manifest("record", ["innodb=http://h:9207/metrics"], 1000, 2000))
    writer.add_chunk({series_key("a", {"x": "1"}): [(1000, "1")],
                      series_key("long", {"x": "y" * 20_000}): [(1000, "1")],
                      series_key("many", {f"l{i}": "v" for i in range(100)}): [(1000, "1")],
                      series_key("reserved", {"__x": "v"}): [(1000, "1")]}, 1000, 2000)
    writer.close()
    assert len(writer.left_out) == 3
    contents = BundleReader(path).verify()
    assert (contents.series, contents.samples) == (1, 1)


def test_unfinished_or_foreign_files_are_refused(tmp_path):
    writer = BundleWriter(str(tmp_path / "b.zip"), Manifest("export", "x", 0, 1))
    writer.add_chunk({series_key("a", {}): [(0, "1")]}, 0, 1)
    writer._zip.close()  # as if the process died before close(): no manifest, still .partial
    with pytest.raises(BundleError, match="no manifest"):
        BundleReader(str(tmp_path / "b.zip.partial"))
    foreign = tmp_path / "f.zip"
    with zipfile.ZipFile(foreign, "w") as z:
        z.writestr("manifest.json", '{"format": "something-else"}')
    with pytest.raises(BundleError, match="unknown bundle format"):
        BundleReader(str(foreign))
    with pytest.raises(BundleError, match="no such file"):
        BundleReader(str(tmp_path / "missing.zip"))


class FailingPrometheus:
    """Answers the first chunk, then fails, as a Prometheus going away in the middle of an export."""

    def __init__(self, url, timeout=120):
        self.url, self.calls = url, 0

    def metadata(self):
        return {}

    def raw(self, selector, start_ms, end_ms):
        self.calls += 1
        if self.calls > 1:
            raise ExportError("cannot reach Prometheus at x: connection reset")
        return [{"metric": {"__name__": "a", "job": "innodb"}, "values": [[start_ms / 1000, "1"]]}]


def test_an_export_failing_midway_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(export_module, "Prometheus", FailingPrometheus)
    out = str(tmp_path / "b.zip")
    with pytest.raises(ExportError, match="connection reset"):
        export_module.export("http://x", 0, 3_600_000, out, chunk_samples=1, progress=False)
    assert os.listdir(tmp_path) == []


class ScrapedPrometheus:
    """A hundred series scraped every 15 s and one every second, as a big and a small job; nothing in ``gap``."""

    gap = (0, 0)

    def __init__(self, url, timeout=120):
        self.url = url

    def metadata(self):
        return {}

    def raw(self, selector, start_ms, end_ms):
        def values(interval_ms):
            first = -(-start_ms // interval_ms) * interval_ms
            return [[ts / 1000, "1"] for ts in range(first, end_ms + 1, interval_ms)
                    if not self.gap[0] <= ts < self.gap[1]]
        big = [{"metric": {"__name__": "big", "n": str(n)}, "values": values(15_000)} for n in range(100)]
        return big + [{"metric": {"__name__": "small"}, "values": values(1000)}]


def test_export_chunks_stay_near_the_asked_size_when_a_chunk_falls_between_scrapes(tmp_path, monkeypatch):
    monkeypatch.setattr(export_module, "Prometheus", ScrapedPrometheus)
    out = str(tmp_path / "b.zip")
    # About 13 s a chunk: shorter than the big job's interval, so some chunks hold only the small job.
    result = export_module.export("http://x", 0, 1_800_000, out, chunk_samples=100, progress=False)
    chunks = result.manifest.chunks
    assert any(c.samples < 20 for c in chunks), "no chunk fell between two scrapes"
    assert max(c.samples for c in chunks[1:]) <= 2 * 100
    assert result.manifest.samples == 100 * (1_800_000 // 15_000 + 1) + 1_800_000 // 1000 + 1


def test_export_chunks_come_back_to_the_asked_size_after_a_gap(tmp_path, monkeypatch):
    monkeypatch.setattr(export_module, "Prometheus", ScrapedPrometheus)
    monkeypatch.setattr(ScrapedPrometheus, "gap", (1_800_000, 12_600_000))  # Prometheus down for three hours
    result = export_module.export("http://x", 0, 14_400_000, str(tmp_path / "b.zip"), chunk_samples=1000,
                                  progress=False)
    after = [c.samples for c in result.manifest.chunks if c.start_ms >= 12_600_000]
    assert len(after) > 5 and max(after[1:]) <= 2 * 1000, after  # the first may span the gap's end


def test_times():
    assert parse_time("now", now=1000.0) == 1_000_000
    assert parse_time("now-30m", now=10_000.0) == 8_200_000
    assert parse_time("1700000000.5") == 1_700_000_000_500
    assert parse_time("2026-11-21T06:40:00Z") == 1_795_243_200_000
    with pytest.raises(ExportError, match="no time zone"):
        parse_time("2026-11-21T06:40:00")
    with pytest.raises(ExportError, match="cannot read the time"):
        parse_time("yesterday")
    for absurd in ("inf", "nan", "-1", "1e400"):  # inf raised OverflowError, a traceback
        with pytest.raises(ExportError, match="is not a time"):
            parse_time(absurd)


def test_an_out_that_cannot_take_the_bundle_is_refused_before_any_work_or_keeps_the_bundle(tmp_path):
    """A directory as --out lost a whole recording at the final rename."""
    with pytest.raises(BundleError, match="is a directory"):
        BundleWriter(str(tmp_path), Manifest("record", ["innodb=http://h:9207/metrics"], 1000, 2000))
    with pytest.raises(BundleError, match="cannot write"):
        BundleWriter(str(tmp_path / "no" / "b.zip"), Manifest("record", ["innodb=http://h:9207/metrics"], 1000, 2000))
    # The target turned into a directory while recording: the sealed bundle stays in .partial.
    path = tmp_path / "b.zip"
    writer = BundleWriter(str(path), Manifest("record", ["innodb=http://h:9207/metrics"], 1000, 2000))
    writer.add_chunk({series_key("a", {"x": "1"}): [(1000, "1")]}, 1000, 2000)
    path.mkdir()
    (path / "occupied").write_text("")
    with pytest.raises(BundleError, match="it is complete in"):
        writer.close()
    writer.abort()
    assert BundleReader(str(path) + ".partial").verify().samples == 1


class CaptureListing:
    """An HTTP server answering /api/captures with a given body, and 404 for every capture's file."""

    def __init__(self, body: bytes):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                status, data = (200, body) if self.path == "/api/captures" else (404, b"gone")
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def listing(capture_id="20261120T140501.123Z-db1_3306", files=("1-engine-innodb-status.txt",)) -> bytes:
    return json.dumps({"captures": [{"id": capture_id, "started": "2026-11-20T14:05:01+00:00",
                                     "snapshots": [{"number": 1, "files": list(files)}]}]}).encode()


WINDOW = (1795183200000, 1795186800000)  # 2026-11-20 14:00 to 15:00 UTC


@pytest.mark.parametrize("body, reason", [
    (b"<html>not JSON</html>", "answered no JSON"),
    (b'{"nothing": 1}', "not the exporter's list of captures"),
    (listing(capture_id="../../../../tmp/pwned"), "whose id or file names no exporter gives"),
    (listing(files=("../../etc/passwd",)), "whose id or file names no exporter gives"),
    (json.dumps({"captures": [{"started": "2026-11-20T14:05:01+00:00", "snapshots": []}]}).encode(),
     "whose id or file names no exporter gives"),
])
@pytest.mark.slow
def test_a_captures_listing_no_exporter_gives_is_refused_before_any_sample(body, reason):
    server = CaptureListing(body)
    try:
        with pytest.raises(ExportError, match=f"--captures {server.url}: .*{reason}"):
            export_module.list_captures(Endpoint.parse(server.url), *WINDOW)
    finally:
        server.close()


@pytest.mark.slow
def test_a_capture_removed_since_the_listing_is_left_out_not_the_export(tmp_path):
    server = CaptureListing(listing())
    try:
        chosen = export_module.list_captures(Endpoint.parse(server.url), *WINDOW)
        assert chosen == [("20261120T140501.123Z-db1_3306", ["1-engine-innodb-status.txt", "capture.json"])]
        writer = BundleWriter(str(tmp_path / "b.zip"), Manifest("export", "http://p:9090", *WINDOW))
        assert export_module.add_captures(writer, Endpoint.parse(server.url), chosen) == (0, 1)
        writer.abort()
    finally:
        server.close()


def test_a_text_name_a_bundle_cannot_hold_is_refused_when_written(tmp_path):
    writer = BundleWriter(str(tmp_path / "b.zip"), Manifest("export", "http://p:9090", 1000, 2000))
    with pytest.raises(BundleError, match="cannot hold"):
        writer.add_text("../../../../tmp/pwned-capture.json", "x")
    writer.abort()
