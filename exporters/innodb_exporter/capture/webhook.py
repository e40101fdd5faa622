"""Alertmanager's webhook (version 4) as the capture reads it, and the bounds on what a request may cost.

A webhook is read only when it is at most ``MAX_BYTES`` and ``MAX_ALERTS`` alerts (Alertmanager's, with the
stack's ``max_alerts: 20``, is a few kilobytes and 20), and only one at a time: a request that finds one being read waits for it a moment
(``Admission``), with at most a few others, and is answered 503 with Retry-After beyond that, which
Alertmanager retries. So however many requests arrive, webhook work holds at most a few of the HTTP
server's threads and one body's worth of parsed JSON, and /metrics and /probe keep their threads.
"""

from __future__ import annotations

import json
import threading

MAX_BYTES = 256 * 1024
MAX_ALERTS = 1000  # so that looking each one's server up costs at most a few milliseconds


class CaptureError(Exception):
    """A webhook that cannot be read (HTTP 400)."""

    status = "400 Bad Request"
    cause = "unreadable"  # what the rate-limited log line is about
    headers: tuple = ()


class TooLarge(CaptureError):
    status = "413 Content Too Large"
    cause = "too large"


class Busy(CaptureError):
    status = "503 Service Unavailable"
    cause = "busy"
    headers = (("Retry-After", "2"),)


class Admission:
    """One webhook read at a time; at most ``waiting`` others wait for it, each at most ``wait`` seconds."""

    def __init__(self, waiting: int = 4, wait: float = 5.0):
        self.wait = wait
        self._slot = threading.Lock()
        self._room = threading.BoundedSemaphore(waiting + 1)  # the one being read and those waiting

    def __enter__(self):
        if not self._room.acquire(blocking=False):
            raise Busy("another webhook is being read and others wait for it: retry later")
        if not self._slot.acquire(timeout=self.wait):
            self._room.release()
            raise Busy("another webhook was still being read: retry later")
        return self

    def __exit__(self, *exc):
        self._slot.release()
        self._room.release()


def firing_alerts(body: bytes) -> list[dict]:
    """The firing alerts of a webhook body, every label value a string; CaptureError when it is not one."""
    if len(body) > MAX_BYTES:
        raise TooLarge(f"a webhook of {len(body)} bytes is over {MAX_BYTES}: set max_alerts in Alertmanager's "
                       "webhook_config (the stack's is 20)")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nesting past the stack
        raise CaptureError(f"the body is not JSON: {type(exc).__name__}") from None
    if not isinstance(data, dict) or not isinstance(data.get("alerts"), list):
        raise CaptureError("not an Alertmanager webhook: no 'alerts' list")
    if len(data["alerts"]) > MAX_ALERTS:
        raise TooLarge(f"a webhook of {len(data['alerts'])} alerts is over {MAX_ALERTS}: set max_alerts in "
                       "Alertmanager's webhook_config (the stack's is 20)")
    if not all(isinstance(a, dict) and isinstance(a.get("labels"), dict) for a in data["alerts"]):
        raise CaptureError("an alert without a 'labels' mapping")
    status = data.get("status")
    return [a for a in data["alerts"] if a.get("status", status) == "firing"]


def label(alert: dict, name: str) -> str:
    """A label's value as text: Alertmanager's are strings; any other value is kept as its JSON text, so
    that an instance of 3306 or ["x"] is refused as no server this exporter scrapes, and a name sorts."""
    value = alert["labels"].get(name, "")
    return value if isinstance(value, str) else _as_text(value)


def summary(alert: dict) -> dict:
    """What a capture's manifest keeps of an alert: its labels (bounded) and when it started."""
    labels = {str(k): (v if isinstance(v, str) else _as_text(v))[:200] for k, v in list(alert["labels"].items())[:30]}
    return {"labels": labels, "startsAt": str(alert.get("startsAt", ""))[:40]}


def _as_text(value) -> str:
    try:
        return json.dumps(value)[:200]
    except (ValueError, RecursionError):  # nested as deep as the parser allowed
        return "?"
