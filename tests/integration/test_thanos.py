"""A highly available pair behind Thanos, for real: STACK_STORE=thanos on Prometheus 3.

Two replicas scrape the same targets and run the same rules, told apart by their external label `replica`,
which both drop from the alerts they send (Alertmanager keeps each alert once). A sidecar beside each
uploads its blocks to a filesystem bucket, the store gateway serves the bucket, and Thanos Query answers
for all of them, deduplicated on `replica`. The stack is conftest's thanos_stack: the stressed server of
the alerting tests (checkpoint age near its limit, the alert's `for` lowered), and blocks of two minutes
that a replica keeps for two more, so that the first minutes of data live in the bucket only within about
ten minutes.

Shown here: every target up on both replicas, whose configurations differ in the replica label alone;
Query answering each series once; innodb-replay export and impact through Query; replica A stopped with SIGTERM and
then with SIGKILL during the run, with no gap in any dashboard query through Query, the checkpoint-age alert
held once by Alertmanager and refreshed by B meanwhile, and nothing counted twice after A is back; and a
window neither replica holds any more answered by the store gateway with the values Query gave while the
replicas still held it.
"""

from __future__ import annotations

import datetime
import glob
import json
import math
import os
import signal
import time
import urllib.parse
import urllib.request

import pytest
import yaml
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from dashboards import preview
from innodb_bundle.bundle import BundleReader
from innodb_replay.cli import main as replay
from innodb_replay.export import Prometheus
from stack.settings import REPLICAS
from support.dashboards import ROOT, panel_queries
from support.servers import wait_for

pytestmark = pytest.mark.integration
ALERT = "InnoDBCheckpointAgeHigh"
JOBS = {"innodb", "mysqld", "node", "prometheus", "alertmanager"}
SELECTOR = '{job=~"innodb|mysqld|node|prometheus|alertmanager"}'
SCRAPE_S = 5  # the shortest scrape interval of the stack (the innodb job)
STEP = 15  # the dashboards' data source interval


@pytest.fixture(scope="module")
def stack(thanos_stack):
    return thanos_stack


def get_json(url: str, **params):
    with urllib.request.urlopen(url + ("?" + urllib.parse.urlencode(params, doseq=True) if params else ""),
                                timeout=60) as r:
        return json.load(r)


def query(url: str, expr: str) -> list[dict]:
    return get_json(url + "/api/v1/query", query=expr)["data"]["result"]


def raw(url: str, start_ms: int, end_ms: int, selector: str = SELECTOR) -> dict[tuple, list[tuple[int, str]]]:
    """Every stored sample of the stack's jobs in [start, end], as innodb-replay export reads them."""
    out = {}
    for r in Prometheus(url).raw(selector, start_ms, end_ms):
        samples = [(round(float(t) * 1000), v) for t, v in r["values"]]
        samples = [(t, v) for t, v in samples if start_ms <= t <= end_ms]
        if samples:
            out[tuple(sorted(r["metric"].items()))] = samples
    return out


def held(stack, severity: str = "warning") -> list[dict]:
    """The checkpoint-age alerts of a severity that Alertmanager holds for the demo server (active, or
    suppressed by the critical level)."""
    alerts = get_json(stack.s.url("alertmanager") + "/api/v2/alerts")
    return [a for a in alerts if a["labels"]["alertname"] == ALERT and a["labels"]["severity"] == severity
            and a["labels"].get("instance") == stack.s.address("mariadb")]


def held_once(stack) -> dict[str, dict]:
    """Severity -> the one alert Alertmanager holds of it; an error when it holds one twice."""
    by_severity = {}
    for severity in ("warning", "critical"):
        alerts = held(stack, severity)
        assert len(alerts) <= 1, f"{ALERT} {severity} held {len(alerts)} times: {[a['labels'] for a in alerts]}"
        by_severity.update({severity: alerts[0]} if alerts else {})
    return by_severity


def timestamp(text: str) -> float:
    """Alertmanager's RFC 3339 time (nanoseconds and all) in seconds."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    return datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.timezone.utc).timestamp() + \
        float(f"0.{fraction or 0}")


def by_replica(url: str, start_ms: int, end_ms: int, selector: str = SELECTOR) -> dict[str, dict]:
    """Query's answer without deduplication (dedup=false): replica -> series -> samples, wherever each lives
    (a sidecar, or the bucket through the store gateway)."""
    answer = get_json(url + "/api/v1/query", query=f"{selector}[{end_ms - start_ms + 1}ms]",
                      time=f"{end_ms / 1000:.3f}", dedup="false")["data"]["result"]
    out: dict[str, dict] = {}
    for r in answer:
        labels = dict(r["metric"])
        samples = [(round(float(t) * 1000), v) for t, v in r["values"]]
        samples = [(t, v) for t, v in samples if start_ms <= t <= end_ms]
        if samples:
            out.setdefault(labels.pop("replica"), {})[tuple(sorted(labels.items()))] = samples
    return out


def interval(samples: list[tuple[int, str]]) -> float:
    """A series' spacing in seconds, as a replica stored it (its rule or scrape interval)."""
    spacings = sorted(b - a for (a, _), (b, _) in zip(samples, samples[1:]))
    return spacings[len(spacings) // 2] / 1000 if spacings else math.inf


def expected_count(stored: list[list]) -> tuple[int, int]:
    """How many samples a deduplicated series holds, given each replica's samples of it.

    At most the fuller replica's and one (where Query turns from one replica to the other, their two samples
    of one moment may both be kept) for a series stored every SCRAPE_S seconds: Query deduplicates a series
    once it has seen its interval in the window asked, and a series stored every 15 or 30 s may come with both
    replicas' samples in a short window (a run gave 4 where each replica stored 2). At least the fuller
    replica's but one. For a series the replicas began or ended at different moments (an alert each evaluated
    on its own clock), fewer: Query keeps one replica's samples where both have some, and where it turns from
    one replica to the other it waits twice the series' interval, skipping up to two samples (a run gave 2
    where one replica stored 4 in the window and the other's series had ended just before it)."""
    counts = [len(samples) for samples in stored]
    held = [count for count in counts if count]
    frequent = min(interval(samples) for samples in stored) <= SCRAPE_S * 1.5
    most = max(counts) + 1 if frequent else sum(counts)
    least = max(held) - 1 if len(held) == len(counts) and max(held) - min(held) <= 1 else min(held) - 3
    return least, most


def doubled(deduplicated: dict, replicas: list[dict]) -> list[str]:
    """Series of Query's deduplicated answer that hold a sample no replica stored, or more samples than
    expected_count allows: a scrape counted twice would show in either."""
    problems = []
    for key, samples in deduplicated.items():
        stored = [replica.get(key, []) for replica in replicas]
        known = {sample for replica in stored for sample in replica}
        invented = [sample for sample in samples if sample not in known]
        if invented or len(samples) > expected_count(stored)[1]:
            problems.append(f"{dict(key)}: {len(samples)} samples against {list(map(len, stored))} stored, "
                            f"{len(invented)} stored by no replica")
    return problems


def once_equal(read, expected: dict[str, dict], timeout: float = 90) -> dict[str, dict]:
    """``read()`` once it gives ``expected``, else its last answer when ``timeout`` runs out. Query learns a
    restarted sidecar's time range, and the store gateway a new block in the bucket, on their next round (every
    few seconds, every bucket_sync): until then a replica's samples are missing from Query's answer."""
    answer = read()
    deadline = time.monotonic() + timeout
    while answer != expected and time.monotonic() < deadline:
        time.sleep(5)
        answer = read()
    return answer


def differences(got: dict[str, dict], expected: dict[str, dict]) -> str:
    """The first few series in which two by_replica answers differ, briefly."""
    lines = []
    for replica in sorted(set(got) | set(expected)):
        left, right = got.get(replica, {}), expected.get(replica, {})
        for key in sorted(set(left) | set(right)):
            a, b = left.get(key, []), right.get(key, [])
            if a != b:
                only = sorted(set(a) ^ set(b))[:3]
                lines.append(f"replica {replica} {dict(key)}: {len(a)} samples against {len(b)}, first of those in "
                             f"one only: {only}")
    return f"{len(lines)} series differ:\n" + "\n".join(lines[:8])


@pytest.fixture(scope="module")
def early_window(stack):
    """The stack's first full minute of data ((start ms, end ms), Query's answer, each replica's samples) read
    while both replicas still held it: test_the_store_gateway... asks again once they no longer do."""
    start = stack.started + 30
    wait_for(lambda: time.time() > start + 90, 150, interval=2, what="the first minutes of data")
    start_ms, end_ms = int(start * 1000), int((start + 60) * 1000)
    samples = raw(stack.s.url("thanos_query"), start_ms, end_ms)
    replicas = {replica: raw(stack.s.url(service), start_ms, end_ms) for service, replica in REPLICAS.items()}
    assert {dict(key)["job"] for key in samples} == JOBS, "Query does not answer for every job yet"
    return start_ms, end_ms, samples, replicas


def test_both_replicas_scrape_every_target_and_query_answers_each_series_once(stack, early_window):
    def all_up(service: str) -> bool:
        targets = get_json(stack.s.url(service) + "/api/v1/targets")["data"]["activeTargets"]
        return {t["labels"]["job"] for t in targets} == JOBS and {t["health"] for t in targets} == {"up"}

    for replica in stack.s.replicas():
        wait_for(lambda: all_up(replica), 120, interval=2, what=f"every target of {replica} up")
    # The same configuration but for the replica label: parsed as each replica runs it.
    configs = {replica: yaml.safe_load(get_json(stack.s.url(replica) + "/api/v1/status/config")["data"]["yaml"])
               for replica in stack.s.replicas()}
    labels = {replica: config["global"].pop("external_labels") for replica, config in configs.items()}
    assert labels == {"prometheus": {"replica": "a"}, "prometheus_b": {"replica": "b"}}
    assert configs["prometheus"] == configs["prometheus_b"]

    def endpoints_healthy():
        stores = get_json(stack.s.url("thanos_query") + "/api/v1/stores")["data"]
        healthy = {kind: len([s for s in found if not s.get("lastError")]) for kind, found in stores.items()}
        return healthy if healthy == {"sidecar": 2, "store": 1} else None

    wait_for(endpoints_healthy, 60, interval=2, what="Query's sidecars and store gateway healthy")
    instance = stack.s.address("mariadb")
    query_url = stack.s.url("thanos_query")
    assert [r["metric"] for r in query(query_url, "innodb_up")] == \
        [{"__name__": "innodb_up", "instance": instance, "job": "innodb"}]  # once, without `replica`
    counts = {service: query(stack.s.url(service), "count(up)")[0]["value"][1]
              for service in ("prometheus", "prometheus_b", "thanos_query")}
    assert len(set(counts.values())) == 1, counts
    _, _, samples, replicas = early_window
    assert set(samples) == set(replicas["a"]) | set(replicas["b"])  # every series either replica holds, once
    assert doubled(samples, list(replicas.values())) == []


def bundle_samples(path: str) -> dict[tuple, list[tuple[int, float]]]:
    out = {}
    with BundleReader(path) as reader:
        for chunk in reader.manifest.chunks:
            for family in text_string_to_metric_families(reader.chunk(chunk.name).decode()):
                for s in family.samples:
                    key = tuple(sorted({**s.labels, "__name__": s.name}.items()))
                    out.setdefault(key, []).append((s.timestamp.sec * 1000 + s.timestamp.nsec // 1_000_000,
                                                     float(s.value)))
    return out


def test_innodb_replay_exports_through_thanos_query(stack, tmp_path, capsys):
    """The bundle holds each series once, without `replica`, every sample one that a replica stored, as many
    as expected_count allows. (The last minute: both replicas still hold it themselves.)"""
    wait_for(lambda: time.time() > stack.started + 150, 210, interval=2, what="two minutes of scrapes")
    end = int(time.time()) - 10
    start = end - 60
    out = tmp_path / "thanos.zip"
    assert replay(["export", "--prometheus", stack.s.url("thanos_query"), "--start", str(start), "--end", str(end),
                   "--out", str(out), "--quiet"]) == 0, capsys.readouterr().err
    exported = bundle_samples(str(out))
    replicas = [raw(stack.s.url(r), start * 1000, end * 1000) for r in stack.s.replicas()]
    assert set(exported) == set(replicas[0]) | set(replicas[1])
    invented, wrong = [], []
    for key, samples in exported.items():
        stored = [replica.get(key, []) for replica in replicas]
        known = {(t, float(v)) for replica in stored for t, v in replica}
        invented += [f"{dict(key)} {sample}" for sample in samples
                     if sample not in known and not math.isnan(sample[1])]
        least, most = expected_count(stored)
        if not least <= len(samples) <= most:
            wrong.append(f"{dict(key)}: {len(samples)} samples against {list(map(len, stored))} stored")
    assert invented == [] and wrong == [], (invented[:5], wrong[:5])


def impact(url: str, instance: str, at: float, capsys) -> dict:
    capsys.readouterr()
    assert replay(["impact", "--prometheus", url, "--instance", instance, "--at", f"{at:.3f}", "--window", "90s",
                   "--settle", "0s", "--json"]) == 0, capsys.readouterr().err
    return {f["key"]: f for f in json.loads(capsys.readouterr().out)["figures"]}


def test_innodb_replay_impact_through_thanos_query(stack, capsys):
    """impact reads the same figures through Query as from the replicas themselves: Query's deduplication
    (either replica's scrapes, moments apart; counters made monotonic where it turns) puts none of them
    further from what the replicas give than the noise band its verdict is judged against. (The two replicas
    scrape moments apart: a gauge as busy as checkpoint age under this load reads a little differently on
    each, and Query's may be either's.)"""
    wait_for(lambda: time.time() > stack.started + 300, 360, interval=5, what="two windows of warm data")
    at = time.time() - 100  # a moment with 90 s of data on each side, past the server's first minute
    instance = stack.s.address("mariadb")
    through_query = impact(stack.s.url("thanos_query"), instance, at, capsys)
    direct = [impact(stack.s.url(replica), instance, at, capsys) for replica in stack.s.replicas()]
    assert set(through_query) == set(direct[0]) == set(direct[1])
    assert all(figures["transactions"]["before"] > 0 for figures in direct)
    for key, figure in through_query.items():
        for side in ("before", "after"):
            value, expected = figure[side], [figures[key][side] for figures in direct]
            assert {value is None} == {e is None for e in expected}, (key, side, value, expected)
            noises = [figures[key]["noise"] for figures in direct if figures[key]["noise"] is not None]
            if value is not None and noises:
                noise = max(noises)
                assert min(expected) - noise <= value <= max(expected) + noise, (key, side, value, expected, noise)


def store_interval() -> int:
    """Grafana's Store data source's timeInterval, in seconds: its rate windows are four of them."""
    with open(os.path.join(ROOT, "provisioning", "grafana", "datasources", "prometheus.yml")) as f:
        sources = {s["uid"]: s for s in yaml.safe_load(f)["datasources"]}
    return int(sources["innodb-store"]["jsonData"]["timeInterval"].removesuffix("s"))


def gaps(stack, start: int, end: int, stopped_at: float) -> tuple[int, list[str]]:
    """Every dashboard query through Query over [start, end] at the data source's step: (queries that had
    data at every step before the stop, those of them missing a step after it)."""
    values = preview.variables(stack.s.address("mariadb"), end - start, STEP, "1m", store_interval())
    steps = list(range(start, end + 1, STEP))
    watched, missing = 0, []
    for where, _panel, target in panel_queries():
        answer = preview.query_range(stack.s.url("thanos_query"), preview.substitute(target["expr"], values), start,
                                     end, STEP)
        if answer.get("status") != "success":
            missing.append(f"{where} / {target['legendFormat']}: {answer.get('error')}")
            continue
        present = {round(float(t)) for r in answer["data"]["result"] for t, _ in r["values"]}
        if not all(s in present for s in steps if s < stopped_at):
            continue  # a series of what happens (or not yet filled): no line to break
        watched += 1
        holes = [s for s in steps if s not in present]
        if holes:
            missing.append(f"{where} / {target['legendFormat']}: no value at {len(holes)} steps from "
                           f"{holes[0] - stopped_at:+.0f} s after the stop")
    return watched, missing


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_replica_a_stopped_during_the_run(stack, signum):
    query_url = stack.s.url("thanos_query")
    wait_for(lambda: held(stack), 420, interval=5, what=f"{ALERT} in Alertmanager")
    alert = held_once(stack)["warning"]  # both replicas send it: one alert
    window = (int((time.time() - 90) * 1000), int((time.time() - 30) * 1000))
    before = by_replica(query_url, *window)
    replica_a = stack.services["prometheus"]
    pid = replica_a.pid()
    stopped_at = time.time()
    os.kill(pid, signum)
    wait_for(lambda: replica_a.pid() is None, 120, interval=0.5, what="replica a to exit")

    # B alone: it keeps sending the alert (Prometheus resends a firing alert every minute), which stays one.
    def refreshed():
        alert = held_once(stack).get("warning")
        return alert if alert and timestamp(alert["updatedAt"]) > stopped_at + 1 else None

    during = wait_for(refreshed, 180, interval=3, what=f"{ALERT} sent again by replica b alone")
    assert (during["fingerprint"], during["startsAt"]) == (alert["fingerprint"], alert["startsAt"])
    assert [r["metric"]["instance"] for r in query(query_url, "innodb_up")] == [stack.s.address("mariadb")]

    stack.start_replica("prometheus")
    stack._wait_until_ready("prometheus")
    back_at = time.time()
    wait_for(lambda: any(float(r["value"][0]) > back_at for r in query(stack.s.url("prometheus"),
                                                                       "timestamp(innodb_up)")),
             60, interval=2, what="replica a scraping again")
    wait_for(lambda: time.time() > back_at + 2 * STEP, 60, interval=2, what="a few scrapes of replica a")

    # No gap in any dashboard query on the Store data source, through the stop and back.
    start = int(stopped_at) - 60
    watched, missing = gaps(stack, start, int(time.time()) - 5, stopped_at)
    assert missing == [], "\n".join(missing)
    # Nothing counted twice: one series; since the stop, no sample that no replica stored and none doubled;
    # each replica's samples from before the stop as they were (replica a's too, after SIGKILL).
    assert [r["value"][1] for r in query(query_url, 'count by (instance) (innodb_up)')] == ["1"]
    since = (start * 1000, int(time.time() * 1000))
    stored = by_replica(query_url, *since, '{job="innodb"}')
    deduplicated = raw(query_url, *since, '{job="innodb"}')
    assert doubled(deduplicated, list(stored.values())) == []
    [samples] = [v for key, v in deduplicated.items() if dict(key)["__name__"] == "innodb_up"]
    longest = max(b - a for (a, _), (b, _) in zip(samples, samples[1:])) / 1000
    after = once_equal(lambda: by_replica(query_url, *window), before)
    assert after == before, "the replicas' samples of the window before the stop changed: " + differences(after, before)
    kept = held_once(stack)["warning"]
    assert (kept["fingerprint"], kept["startsAt"]) == (alert["fingerprint"], alert["startsAt"])
    print(f"\n{signal.Signals(signum).name}: replica a down {back_at - stopped_at:.0f} s; {watched} dashboard queries "
          f"without a step missing; innodb_up's longest spacing through Query {longest:.1f} s (scraped every "
          f"{SCRAPE_S} s); {ALERT} held once, refreshed {timestamp(during['updatedAt']) - stopped_at:.0f} s after the "
          f"stop; {sum(len(s) for r in before.values() for s in r.values())} samples of both replicas before the stop "
          "compared equal")


def bucket_blocks(stack) -> list[dict]:
    metas = []
    for path in glob.glob(stack.s.path("thanos", "bucket", "*", "meta.json")):
        with open(path) as f:
            metas.append(json.load(f))
    return metas


def test_the_store_gateway_answers_for_a_window_neither_replica_holds_any_more(stack, early_window):
    start_ms, end_ms, _, replicas = early_window

    def gone_from_both():
        return all(not raw(stack.s.url(replica), start_ms, end_ms) for replica in stack.s.replicas())

    wait_for(gone_from_both, 900, interval=10, what="the first minute deleted from both replicas' own storage")
    for replica in ("a", "b"):
        covering = [m for m in bucket_blocks(stack) if m["thanos"]["labels"] == {"replica": replica}
                    and m["minTime"] < end_ms and m["maxTime"] > start_ms]
        assert covering, f"no block of replica {replica} in the bucket covers the window"
    # From the bucket alone: each replica's samples as the replica itself gave them, and deduplicated, each
    # series once with none doubled.
    from_bucket = once_equal(lambda: by_replica(stack.s.url("thanos_query"), start_ms, end_ms), replicas)
    assert from_bucket == replicas, "the store gateway's samples differ from the replicas' own: " + \
        differences(from_bucket, replicas)
    now = raw(stack.s.url("thanos_query"), start_ms, end_ms)
    assert set(now) == set(replicas["a"]) | set(replicas["b"]) and doubled(now, list(replicas.values())) == []
    blocks = bucket_blocks(stack)
    size = sum(os.path.getsize(p) for p in glob.glob(stack.s.path("thanos", "bucket", "**"), recursive=True)
               if os.path.isfile(p))
    print(f"\nthe first minute, {sum(len(s) for r in replicas.values() for s in r.values())} samples of both replicas, "
          f"answered by the store gateway alone as the replicas did; the bucket holds {len(blocks)} blocks, "
          f"{size / 1e6:.1f} MB")
