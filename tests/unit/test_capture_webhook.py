"""The capture webhook against hostile bodies: a clear 400 or a refusal per alert, and never a server whose
captures stop for good."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager

import pytest

from innodb_exporter.capture.service import CaptureError, CaptureService, CaptureSettings
from innodb_exporter.scraping.connection import ConnectionSettings


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
    body = b'{"alerts": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    with pytest.raises(CaptureError, match="not JSON"):
        CaptureService(CaptureSettings(), OneTarget()).webhook(body)
