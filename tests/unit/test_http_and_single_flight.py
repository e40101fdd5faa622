"""The HTTP app with fake targets, and the single flight of scrapes, without a server."""

from __future__ import annotations

import gzip
import io
import threading
import time
from concurrent.futures import Future

import pytest
from prometheus_client.registry import CollectorRegistry

from innodb_exporter import cli, config
from innodb_exporter.app import make_app
from innodb_exporter.metrics.snapshot import Snapshot
from innodb_exporter.scraping import singleflight
from innodb_exporter.scraping.scrape import ScrapeResult, SourceResult
from innodb_exporter.scraping.target import Target
from innodb_exporter.scraping.targets import ProbeLimits, Targets, TooManyTargets
from support.servers import wait_for

# How long a test waits for something before it gives up: only so that a broken exporter fails the test instead
# of hanging it, never a measure.
HANG_GUARD = 30.0


class SlowTarget(Target):
    """A Target whose scrape takes ``seconds``, or until ``release`` is set, and counts how often it really
    ran and how many runs are going on now."""

    def __init__(self, seconds=0.3):
        super().__init__(config.ConnectionSettings(user="u"))
        self.seconds, self.runs, self.running, self.max_running = seconds, 0, 0, 0
        self.release = threading.Event()
        self._count = threading.Lock()

    def _collect(self, deadline):
        with self._count:
            self.runs += 1
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        self.release.wait(self.seconds)
        with self._count:
            self.running -= 1
        sources = {s.name: SourceResult(s.name, "read") for s in self.sources}
        return ScrapeResult(True, None, sources, Snapshot())


@pytest.fixture
def waits(monkeypatch) -> list:
    """The timeout of each wait of a caller of SingleFlight for the run it shares, in order."""
    waits = []

    class Recorded(Future):
        def result(self, timeout=None):
            waits.append(timeout)
            return super().result(timeout)

    monkeypatch.setattr(singleflight, "Future", Recorded)
    return waits


def test_concurrent_scrapes_share_one_run(waits):
    target = SlowTarget(seconds=HANG_GUARD)  # a run that lasts until the test releases it
    results = []
    threads = [threading.Thread(target=lambda: results.append(target.scrape(HANG_GUARD))) for _ in range(20)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: len(waits) == 20, HANG_GUARD, interval=0.01, what="20 scrapes waiting")
    finally:
        target.release.set()
        for t in threads:
            t.join(HANG_GUARD)
    assert target.runs == 1 and target.max_running == 1
    assert len(results) == 20 and all(r.up for r in results)


def test_a_scrape_past_its_deadline_answers_down_while_its_run_goes_on_and_sends_nothing_more(waits):
    target = SlowTarget(seconds=HANG_GUARD)  # a run that lasts until the test releases it
    try:
        result = target.scrape(0.2)
        # Answered at its deadline, with the run it started still going: not when that run ends.
        assert target.running == 1
        assert not result.up and {r.kind for r in result.sources.values()} == {"timeout"}
        assert target.scrape(0.2).up is False  # joins the run still in flight ...
        assert target.runs == 1 and target.running == 1  # ... rather than sending the server a second one
    finally:
        target.release.set()
    # Each caller bounded its wait by what was left of its own 0.2 s, never by the run.
    assert len(waits) == 2 and all(w is not None and 0 <= w <= 0.2 for w in waits), waits
    wait_for(lambda: not target.flight.busy, HANG_GUARD, interval=0.01, what="the run to end")
    assert target.scrape(HANG_GUARD).up and target.runs == 2


def app_for(target, flags=()):
    args = cli.server_parser().parse_args(["--mysqld.username=u", *flags])
    args.disabled_sources = set()
    cfg, problems = config.load(args, {})
    assert problems == []
    targets = Targets(cfg.connection, cfg.options, cfg.limits)
    targets.default = target
    return make_app(cfg, targets, CollectorRegistry())


def call_raw(app, path, headers=None) -> tuple[str, dict, bytes]:
    environ = {"PATH_INFO": path.split("?")[0], "QUERY_STRING": path.partition("?")[2], "REQUEST_METHOD": "GET",
               "wsgi.input": io.BytesIO(), **(headers or {})}
    status = {}
    body = b"".join(app(environ, lambda s, h: status.update(status=s, headers=dict(h))))
    return status["status"], status["headers"], body


def call(app, path, headers=None):
    status, _, body = call_raw(app, path, headers)
    return status, body.decode()


def test_routes():
    app = app_for(SlowTarget(0))
    assert call(app, "/")[0].startswith("200")
    status, body = call(app, "/metrics")
    assert status.startswith("200") and "innodb_up 1.0" in body and "innodb_exporter_build_info" in body
    assert call(app, "/-/healthy")[0].startswith("200")
    assert call(app, "/nowhere")[0].startswith("404")
    assert call(app, "/probe")[0].startswith("400")
    assert call(app, "/probe?target=db:1&auth_module=other")[0].startswith("400")
    status, body = call(app, "/probe?target=evil.example:3306")
    assert status.startswith("403") and "not allowed" in body


@pytest.mark.parametrize("path", ["/metrics", "/probe?target=127.0.0.1:3306"])
def test_metrics_are_gzipped_when_the_scraper_asks(path):
    app = app_for(SlowTarget(0), ["--mysqld.address=127.0.0.1:3306"])
    status, headers, plain = call_raw(app, path)
    assert status.startswith("200") and "Content-Encoding" not in headers and b"innodb_up 1.0" in plain
    assert headers["Vary"] == "Accept-Encoding"
    for accepted in ("gzip", "br, gzip;q=0.5", "*"):  # what Prometheus sends, and others that take gzip
        status, headers, body = call_raw(app, path, {"HTTP_ACCEPT_ENCODING": accepted})
        assert status.startswith("200") and headers["Content-Encoding"] == "gzip"
        assert int(headers["Content-Length"]) == len(body) < len(plain) / 2
        assert gzip.decompress(body) == plain
    for refused in ("identity", "gzip;q=0", "gzip;q=0, *", "gzip;level=1;q=0", "deflate"):
        status, headers, body = call_raw(app, path, {"HTTP_ACCEPT_ENCODING": refused})
        assert "Content-Encoding" not in headers and body == plain, refused


def probe_targets(flags=(), **limits):
    args = cli.server_parser().parse_args(["--mysqld.address=127.0.0.1:3306", "--mysqld.username=u", *flags])
    args.disabled_sources = set()
    cfg, problems = config.load(args, {})
    assert problems == []
    return cfg, Targets(cfg.connection, cfg.options, ProbeLimits(**limits))


def test_every_spelling_of_one_server_is_one_target():
    cfg, targets = probe_targets(["--probe.allow=127.0.0.0/8", "--probe.allow=unix:///tmp/mysqld.sock"])
    spellings = ["127.0.0.1:3306", "127.1", "127.0.0.01:3306", "0x7f.0.0.1", "127.000.0.1:03306", "[::ffff:127.0.0.1]:3306"]
    seen = {id(targets.for_probe(config.probe_connection(cfg, t, None))) for t in spellings[:5]}
    assert seen == {id(targets.default)}  # the same server and credentials as /metrics
    sockets = {id(targets.for_probe(config.probe_connection(cfg, t, None)))
               for t in ("/tmp/mysqld.sock", "unix:///tmp//mysqld.sock", "unix:///tmp/./x/../mysqld.sock")}
    assert len(sockets) == 1


def test_connections_stay_bounded_under_500_spellings_and_ports():
    cfg, targets = probe_targets(["--probe.allow=127.0.0.0/8"], max_connections=20, max_connections_per_server=2)
    for i in range(500):
        try:
            targets.for_probe(config.probe_connection(cfg, f"127.0.{i // 250}.{i % 250 + 1}:{3306 + i % 7}", None))
        except TooManyTargets:
            pass
        assert len(targets.all()) <= 20
    per_server = {}
    for t in targets.all():
        per_server[t.settings.address] = per_server.get(t.settings.address, 0) + 1
    assert max(per_server.values()) <= 2


def test_a_busy_target_is_never_evicted_and_the_newcomer_is_refused():
    cfg, targets = probe_targets(["--probe.allow=10.0.0.0/8"], max_connections=2, max_connections_per_server=1)
    busy = targets.for_probe(config.probe_connection(cfg, "10.0.0.1", None))
    busy.flight._inflight = object()  # a scrape in flight
    try:
        with pytest.raises(TooManyTargets):
            targets.for_probe(config.probe_connection(cfg, "10.0.0.2", None))  # the default and busy fill it
    finally:
        busy.flight._inflight = None
    assert targets.for_probe(config.probe_connection(cfg, "10.0.0.2", None)) is not busy


def test_the_janitor_closes_idle_connections_and_forgets_idle_targets():
    cfg, targets = probe_targets(["--probe.allow=10.0.0.0/8"], idle_timeout=0.05)
    target = targets.for_probe(config.probe_connection(cfg, "10.0.0.1", None))

    class Conn:
        open = True
        closed = False

        def close(self):
            self.closed = True

    conn = target.session.conn = Conn()
    time.sleep(0.06)
    targets.sweep()
    assert conn.closed and not target.session.is_open
    time.sleep(0.11)
    targets.sweep()
    assert target not in targets.all()


def test_scrape_timeout_header_sets_the_deadline():
    timeouts = []

    class Recorded(SlowTarget):
        def scrape(self, timeout):
            timeouts.append(timeout)
            return super().scrape(timeout)

    target = Recorded(seconds=HANG_GUARD)  # a run that lasts until the test releases it
    app = app_for(target)
    try:
        status, body = call(app, "/metrics", {"HTTP_X_PROMETHEUS_SCRAPE_TIMEOUT_SECONDS": "0.5"})
        assert target.running == 1  # answered at the deadline, with the run still going
    finally:
        target.release.set()
    assert timeouts == [0.25]  # the header's 0.5 s less --timeout-offset (0.25 s)
    assert status.startswith("200") and "innodb_up 0.0" in body




def test_a_timeout_header_no_scrape_could_mean_gives_a_bounded_deadline():
    """Anyone who reaches the port can send the header: inf, nan or 1e400 answered 500 (time_t overflow)
    and made concurrent scrapes fail."""
    seen = []

    class Deadlines(SlowTarget):
        def _collect(self, deadline):
            seen.append(deadline - time.monotonic())
            return super()._collect(deadline)

    app = app_for(Deadlines(0.0))
    for header in ("inf", "-inf", "nan", "1e400", "1e12", "15"):
        status, body = call(app, "/metrics", {"HTTP_X_PROMETHEUS_SCRAPE_TIMEOUT_SECONDS": header})
        assert status.startswith("200") and "innodb_up 1.0" in body, header
    # The default (10 s) less the offset for what is no number, the cap for the huge, the header otherwise.
    assert [round(s) for s in seen] == [10, 10, 10, 10, 300, 15]


def test_durations_take_no_infinity_and_no_absurd_length():
    for flag in ("--scrape.timeout=inf", "--probe.idle-timeout=nan", "--capture.cooldown=-inf"):
        with pytest.raises(SystemExit):
            cli.server_parser().parse_args(["--mysqld.username=u", flag])
    args = cli.server_parser().parse_args(["--mysqld.username=u", "--scrape.timeout=1e10", "--capture.interval=1e12"])
    args.disabled_sources = set()
    _, problems = config.load(args, {})
    assert any("--scrape.timeout" in p and "at most 300" in p for p in problems), problems
    assert any("--capture.interval" in p for p in problems), problems
