"""Alertmanager with the stack's configuration: routing by severity and inhibition, for real."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import tempfile
import urllib.request

import pytest

from support.golden import TESTS
from support.servers import free_port, wait_for

pytestmark = pytest.mark.integration
CONFIG = os.path.join(os.path.dirname(TESTS), "provisioning", "alertmanager", "alertmanager.yml")


@pytest.fixture(scope="module")
def alertmanager():
    binary = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    assert binary, "Alertmanager is not installed (apt-get install prometheus-alertmanager)"
    port = free_port()
    storage = tempfile.mkdtemp(prefix="am-test-")
    proc = subprocess.Popen([binary, f"--config.file={CONFIG}", f"--storage.path={storage}",
                             f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: urllib.request.urlopen(url + "/-/ready", timeout=2).status == 200, 30, what="alertmanager")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(storage, ignore_errors=True)


def post(url, alerts):
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    body = json.dumps([{"labels": labels, "annotations": {"summary": "test."}, "startsAt": now} for labels in alerts])
    request = urllib.request.Request(url + "/api/v2/alerts", body.encode(), {"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=5).read()


def states(url) -> dict[tuple, dict]:
    with urllib.request.urlopen(url + "/api/v2/alerts", timeout=5) as r:
        alerts = json.load(r)
    return {(a["labels"]["alertname"], a["labels"]["instance"], a["labels"]["severity"]): a for a in alerts}


def test_a_down_server_silences_the_other_innodb_alerts_of_its_instance_only(alertmanager):
    post(alertmanager, [
        {"alertname": "InnoDBServerDown", "severity": "critical", "instance": "db1", "job": "innodb"},
        {"alertname": "InnoDBHistoryListGrowing", "severity": "warning", "instance": "db1", "job": "innodb"},
        {"alertname": "InnoDBHistoryListGrowing", "severity": "warning", "instance": "db2", "job": "innodb"},
        # node_exporter's alert of the same instance: a full disk may be why the server is down.
        {"alertname": "NodeFilesystemAlmostOutOfSpace", "severity": "warning", "instance": "db1", "job": "node"},
    ])

    def settled():
        s = states(alertmanager)
        return len(s) == 4 and s[("InnoDBHistoryListGrowing", "db1", "warning")]["status"]["state"] == "suppressed"

    wait_for(settled, 30, what="the inhibition to apply")
    s = states(alertmanager)
    down = s[("InnoDBServerDown", "db1", "critical")]
    assert down["status"]["state"] == "active"
    assert s[("InnoDBHistoryListGrowing", "db1", "warning")]["status"]["inhibitedBy"] == [down["fingerprint"]]
    assert s[("InnoDBHistoryListGrowing", "db2", "warning")]["status"]["state"] == "active"
    assert s[("NodeFilesystemAlmostOutOfSpace", "db1", "warning")]["status"]["state"] == "active"


def test_critical_silences_the_warning_of_the_same_alert(alertmanager):
    post(alertmanager, [
        {"alertname": "InnoDBCheckpointAgeHigh", "severity": "critical", "instance": "db3", "job": "innodb"},
        {"alertname": "InnoDBCheckpointAgeHigh", "severity": "warning", "instance": "db3", "job": "innodb"},
        {"alertname": "InnoDBFreePageWaits", "severity": "warning", "instance": "db3", "job": "innodb"},
    ])
    wait_for(lambda: states(alertmanager)[("InnoDBCheckpointAgeHigh", "db3", "warning")]["status"]["state"]
             == "suppressed", 30, what="the warning to be suppressed")
    s = states(alertmanager)
    assert s[("InnoDBCheckpointAgeHigh", "db3", "critical")]["status"]["state"] == "active"
    assert s[("InnoDBFreePageWaits", "db3", "warning")]["status"]["state"] == "active"


def test_routing_by_severity_after_the_capture_webhook():
    amtool = shutil.which("amtool")
    for labels, receiver in (("severity=critical alertname=X instance=db1", "critical"),
                             ("severity=warning alertname=X instance=db1", "default"),
                             ("severity=info alertname=X instance=db1", "info"),
                             # An InnoDB alert has the evidence captured first, then goes on by severity.
                             ("severity=warning alertname=InnoDBHistoryListGrowing instance=db1", "capture,default"),
                             ("severity=critical alertname=InnoDBCheckpointAgeHigh instance=db1", "capture,critical"),
                             # Not when the server cannot answer, nor for info.
                             ("severity=critical alertname=InnoDBServerDown instance=db1", "critical"),
                             ("severity=info alertname=InnoDBCounterDisabled instance=db1", "info")):
        out = subprocess.run([amtool, "config", "routes", "test", f"--config.file={CONFIG}", *labels.split()],
                             capture_output=True, text=True)
        assert out.stdout.strip() == receiver, out.stdout + out.stderr
