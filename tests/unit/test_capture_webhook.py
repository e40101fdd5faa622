"""The capture webhook against hostile bodies: a clear 400 or a refusal per alert, and never a server whose
captures stop for good."""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from contextlib import contextmanager

import pytest
from prometheus_client.registry import CollectorRegistry

from innodb_exporter import cli, config
from innodb_exporter.app import make_app
from innodb_exporter.capture.loglimit import LogLimiter
from innodb_exporter.capture.service import REFUSED_EXAMPLES, CaptureService, WebhookAnswer
from innodb_exporter.capture.settings import CaptureSettings
from innodb_exporter.capture.webhook import MAX_ALERTS, MAX_BYTES, Admission, Busy, CaptureError
from innodb_exporter.scraping.connection import ConnectionSettings
from innodb_exporter.scraping.target import ScrapeOptions
from innodb_exporter.scraping.targets import Targets
from innodb_exporter.web.server import Server
from support.servers import wait_for

HANG_GUARD = 30.0  # only so that a broken bound fails the test instead of hanging it


class UnreachableTarget:
    """A target whose server never answers: a capture of it ends at once, with its error in the manifest."""

    def __init__(self):
        self.settings = ConnectionSettings(host="127.0.0.1", port=1, user="u")

    @contextmanager
    def use_session(self, deadline):
        raise ConnectionRefusedError(111, "Connection refused")
        yield


class OneTarget:
    def __init__(self):
        self.target = UnreachableTarget()

    def all(self):
        return [self.target]


def webhook(*labels) -> bytes:
    return json.dumps({"status": "firing", "alerts": [{"status": "firing", "labels": dict(l)} for l in labels]}).encode()


@pytest.fixture
def service(tmp_path):
    return CaptureService(CaptureSettings(str(tmp_path), snapshots=1, interval=0.1, deadline=2, cooldown=0.5),
                          OneTarget())


def wait_idle(service, seconds=5.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not any(h.running for h in service._history.values()):
            return
        time.sleep(0.05)
    raise AssertionError("the capture never ended")


@pytest.mark.slow
def test_label_values_that_are_no_strings_neither_fail_the_capture_nor_stop_the_next(service):
    """alertname 7 beside a string one made the capture's last log line raise, and the server stayed
    'cooling down' until the exporter restarted."""
    answer = service.webhook(webhook({"alertname": "A", "instance": "127.0.0.1:1"},
                                     {"alertname": 7, "instance": "127.0.0.1:1"},
                                     {"alertname": ["X"], "instance": "127.0.0.1:1"}))
    assert [s["instance"] for s in answer.started] == ["127.0.0.1:1"]
    wait_idle(service)
    time.sleep(0.6)  # past the cooldown
    again = service.webhook(webhook({"alertname": "B", "instance": "127.0.0.1:1"}))
    assert [s["instance"] for s in again.started] == ["127.0.0.1:1"], again
    wait_idle(service)
    [first, second] = sorted(c["id"] for c in service.store.list())
    assert first != second


@pytest.mark.parametrize("instance", [["x"], 3306, None, {"a": 1}])
def test_an_instance_that_is_no_string_is_refused_and_the_other_alerts_go_on(service, instance):
    answer = service.webhook(webhook({"alertname": "A", "instance": instance},
                                     {"alertname": "B", "instance": "127.0.0.1:1"}))
    assert [r["instance"] for r in answer.refused] == [json.dumps(instance)]
    assert [s["instance"] for s in answer.started] == ["127.0.0.1:1"]
    wait_idle(service)


def test_a_body_nested_past_the_stack_is_a_clear_error():
    body = b'{"alerts": ' + b"[" * 120_000 + b"]" * 120_000 + b"}"  # within the size bound
    with pytest.raises(CaptureError, match="not JSON"):
        CaptureService(CaptureSettings(), OneTarget()).webhook(body)


# --- what a flood of webhooks can cost (issue 28) -------------------------------------------------------

def not_scraped(count: int) -> bytes:
    """A firing webhook whose alerts name ``count`` distinct servers this exporter does not scrape."""
    return webhook(*({"alertname": "A", "instance": f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}:3306"}
                     for i in range(count)))


def test_alerts_about_servers_not_scraped_cost_one_log_line_and_a_bounded_answer(service, caplog):
    """One POST naming 18,000 servers wrote 18,000 warning lines, and its answer listed every one."""
    with caplog.at_level(logging.INFO, logger="innodb_exporter"):
        answer = service.webhook(not_scraped(MAX_ALERTS))
    assert answer.refused_alerts == MAX_ALERTS and answer.started == []
    assert len(answer.refused) == REFUSED_EXAMPLES
    assert len(json.dumps(answer.to_json())) < 2_000
    [line] = caplog.records
    assert f"{MAX_ALERTS} alerts" in line.getMessage() and "10.0.0.0:3306" in line.getMessage()
    with caplog.at_level(logging.INFO, logger="innodb_exporter"):
        service.webhook(not_scraped(10))  # the same cause again within the minute: counted, not logged
    assert len(caplog.records) == 1


def test_log_lines_are_limited_per_cause_and_say_what_they_left_out(caplog):
    now = [1000.0]
    limiter = LogLimiter(interval=60, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="innodb_exporter"):
        assert limiter.log("a", logging.WARNING, "first %s", "a")
        assert not limiter.log("a", logging.WARNING, "again")
        assert not limiter.log("a", logging.WARNING, "again")
        assert limiter.log("b", logging.WARNING, "another cause")
        now[0] += 61
        assert limiter.log("a", logging.WARNING, "later")
    assert [r.getMessage() for r in caplog.records] == [
        "first a", "another cause", "later (and 2 more like it in the last 61s, not logged)"]


@pytest.mark.parametrize("body,status", [(b"x" * (MAX_BYTES + 1), "413"), (not_scraped(MAX_ALERTS + 1), "413"),
                                         (b"[1]", "400"), (b"{", "400")])
def test_bodies_that_are_no_webhook_are_refused_and_logged_once_a_minute(service, caplog, body, status):
    with caplog.at_level(logging.INFO, logger="innodb_exporter"):
        for _ in range(50):
            with pytest.raises(CaptureError) as refused:
                service.webhook(body)
            assert refused.value.status.startswith(status)
    assert len(caplog.records) == 1


def test_a_webhook_waits_for_no_lock_a_scrape_takes(tmp_path):
    """Reading a webhook took the targets' lock once per instance, which /probe holds while it makes room;
    and the dashboards' marks, which every scrape reads, shared the capture service's lock."""
    targets = Targets(ConnectionSettings(host="127.0.0.1", port=1, user="u"), ScrapeOptions())
    capture = CaptureService(CaptureSettings(str(tmp_path), snapshots=1, deadline=2), targets)
    done = threading.Event()

    def read():
        capture.webhook(not_scraped(1_000))
        done.set()

    with targets._mu, capture._mu:  # a probe making room, a webhook starting a capture
        threading.Thread(target=read, daemon=True).start()
        assert done.wait(HANG_GUARD), "the webhook waited for a lock a scrape holds"
        assert capture.families("127.0.0.1:1") == []


def test_webhooks_read_one_at_a_time_and_refuse_beyond_a_few_waiting():
    admission = Admission(waiting=2, wait=HANG_GUARD)
    entered, release = threading.Event(), threading.Event()

    def hold():
        with admission:
            entered.set()
            release.wait(HANG_GUARD)

    holder = threading.Thread(target=hold)
    holder.start()
    entered.wait(HANG_GUARD)
    waiters = [threading.Thread(target=lambda: admission.__enter__() and admission.__exit__()) for _ in range(2)]
    for waiter in waiters:
        waiter.start()
    wait_for(lambda: admission._room._value == 0, HANG_GUARD, what="two requests waiting")
    with pytest.raises(Busy):  # a fourth: neither read nor waiting
        admission.__enter__()
    release.set()
    for thread in (holder, *waiters):
        thread.join(HANG_GUARD)
    with admission:  # all gone: the next is read at once
        pass


def test_metrics_answer_while_webhooks_flood_the_exporter(tmp_path, monkeypatch):
    """70 webhooks at once took every thread of the HTTP server, and /metrics timed out behind them."""
    args = cli.server_parser().parse_args([f"--capture.dir={tmp_path}"])
    args.disabled_sources = set()
    cfg, problems = config.load(args, {})
    assert problems == []
    targets = Targets(cfg.connection, cfg.options, cfg.limits)
    capture = CaptureService(cfg.capture, targets)
    capture.admission = Admission(waiting=4, wait=0.2)
    release = threading.Event()
    monkeypatch.setattr(capture, "_read", lambda alerts: release.wait(HANG_GUARD) and WebhookAnswer())
    server = Server(make_app(cfg, targets, CollectorRegistry(), capture), host="127.0.0.1", port=0)
    port = server.start()
    statuses: list[int] = []

    def post():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG_GUARD * 2)
        conn.request("POST", "/capture", body=not_scraped(10), headers={"Content-Type": "application/json"})
        statuses.append(conn.getresponse().status)

    posts = [threading.Thread(target=post, daemon=True) for _ in range(70)]
    try:
        for thread in posts:
            thread.start()
        wait_for(lambda: statuses.count(503) >= 65, HANG_GUARD, what="the posts beyond the few waiting refused")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG_GUARD)
        conn.request("GET", "/metrics")
        assert conn.getresponse().status == 200  # while one webhook is still being read
        assert not release.is_set() and len(statuses) < 70
    finally:
        release.set()
        for thread in posts:
            thread.join(HANG_GUARD)
        server.stop()
    assert statuses.count(202) >= 1 and statuses.count(503) + statuses.count(202) == 70
