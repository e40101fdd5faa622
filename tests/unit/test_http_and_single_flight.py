"""The HTTP app with fake targets, and the single flight of scrapes, without a server."""

from __future__ import annotations

import base64
import io
import threading
import time

import bcrypt

from innodb_exporter import cli, config, model
from innodb_exporter.http import Targets, make_app
from innodb_exporter.target import ScrapeResult, SourceResult, Target
from innodb_exporter.webconfig import WebConfig
from prometheus_client.registry import CollectorRegistry


class SlowTarget(Target):
    """A Target whose scrape takes a while and counts how often it really ran."""

    def __init__(self, seconds=0.3):
        super().__init__(config.ConnectionSettings(user="u"))
        self.seconds, self.runs, self.running, self.max_running = seconds, 0, 0, 0
        self._count = threading.Lock()

    def _collect(self, deadline):
        with self._count:
            self.runs += 1
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        time.sleep(self.seconds)
        with self._count:
            self.running -= 1
        sources = {n: SourceResult(n, up=True) for n in self.options.sources}
        return ScrapeResult(True, None, sources, model.Snapshot())


def test_concurrent_scrapes_share_one_run():
    target = SlowTarget()
    results = []
    threads = [threading.Thread(target=lambda: results.append(target.scrape(5))) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert target.runs == 1 and target.max_running == 1
    assert all(r.up for r in results)


def test_a_scrape_past_its_deadline_answers_down_in_time_and_sends_nothing_more():
    target = SlowTarget(seconds=1.0)
    started = time.monotonic()
    result = target.scrape(0.2)
    assert time.monotonic() - started < 0.5
    assert not result.up and {r.kind for r in result.sources.values()} == {"timeout"}
    assert target.scrape(0.2).up is False  # joins the run still in flight
    assert target.runs == 1
    time.sleep(1.0)
    assert target.scrape(2).up and target.runs == 2


def app_for(target, users=None):
    args = cli.server_parser().parse_args(["--mysqld.username=u"])
    args.disabled_sources = set()
    cfg, problems = config.load(args, {})
    assert problems == []
    if users:
        cfg = config.Config(**{**cfg.__dict__, "web": WebConfig(users=users)})
    targets = Targets(cfg)
    targets.default = target
    return make_app(cfg, targets, CollectorRegistry())


def call(app, path, headers=None):
    environ = {"PATH_INFO": path.split("?")[0], "QUERY_STRING": path.partition("?")[2], "REQUEST_METHOD": "GET",
               "wsgi.input": io.BytesIO(), **(headers or {})}
    status = {}
    body = b"".join(app(environ, lambda s, h: status.update(status=s, headers=dict(h))))
    return status["status"], body.decode()


def test_routes():
    app = app_for(SlowTarget(0))
    assert call(app, "/")[0].startswith("200")
    status, body = call(app, "/metrics")
    assert status.startswith("200") and "innodb_up 1.0" in body and "innodb_exporter_build_info" in body
    assert call(app, "/-/healthy")[0].startswith("200")
    assert call(app, "/nowhere")[0].startswith("404")
    assert call(app, "/probe")[0].startswith("400")
    assert call(app, "/probe?target=db:1&auth_module=other")[0].startswith("400")


def test_scrape_timeout_header_sets_the_deadline():
    app = app_for(SlowTarget(1.0))
    started = time.monotonic()
    status, body = call(app, "/metrics", {"HTTP_X_PROMETHEUS_SCRAPE_TIMEOUT_SECONDS": "0.5"})
    assert time.monotonic() - started < 0.6
    assert "innodb_up 0.0" in body


def test_basic_auth():
    app = app_for(SlowTarget(0), users={"prom": bcrypt.hashpw(b"s3", bcrypt.gensalt(4))})
    assert call(app, "/metrics")[0].startswith("401")
    bad = "Basic " + base64.b64encode(b"prom:nope").decode()
    assert call(app, "/metrics", {"HTTP_AUTHORIZATION": bad})[0].startswith("401")
    good = "Basic " + base64.b64encode(b"prom:s3").decode()
    assert call(app, "/metrics", {"HTTP_AUTHORIZATION": good})[0].startswith("200")
