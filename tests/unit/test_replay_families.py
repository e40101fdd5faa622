"""A few families of a large bundle, read without reading the rest (``innodb-replay report``): what is taken,
what is still refused, and the import of only those families."""

from __future__ import annotations

import random
import subprocess

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from innodb_bundle import limits
from innodb_bundle.bundle import BundleError, BundleReader, BundleWriter, Manifest, series_key
from innodb_bundle.openmetrics import FamilyFilter, openmetrics_chunk
from innodb_replay.importer import ReplayImportError, import_families
from support.bundles import START_MS, read_members, write_bundle

WANTED = {"innodb_history_list_length", "node_cpu_seconds_total"}


def many_families(path: str, chunks: int = 3, per_chunk: int = 20) -> None:
    """Families before, between and after the wanted ones, in the order a chunk writes them."""
    writer = BundleWriter(path, Manifest("export", "http://prometheus:9090", START_MS,
                                         START_MS + chunks * per_chunk * 5000))
    names = ["a_first", "innodb_history_list_length", "innodb_history_list_lengthy", "innodb_up", "m_middle",
             "node_cpu_seconds_total", "z_last"]
    for c in range(chunks):
        low = START_MS + c * per_chunk * 5000
        data = {}
        for n, name in enumerate(names):
            for cpu in range(2 if name.startswith("node") else 1):
                data[series_key(name, {"instance": "db1:3306", "job": "x", "cpu": str(cpu)})] = [
                    (low + (i + 1) * 5000, str(float(n * 100 + i))) for i in range(per_chunk)]
        writer.add_chunk(data, low, low + per_chunk * 5000)
    writer.close()


def samples_of(chunks: list[bytes]) -> dict:
    """The samples of chunks' texts (without their # EOF), by series."""
    out = {}
    for text in chunks:
        for family in text_string_to_metric_families(text.decode() + "# EOF\n"):
            for s in family.samples:
                out.setdefault((s.name, tuple(sorted(s.labels.items()))), []).append((s.timestamp, s.value))
    return out


def test_the_wanted_families_come_whole_and_nothing_else(tmp_path):
    path = str(tmp_path / "b.zip")
    many_families(path)
    taken: dict[str, bytes] = {}
    with BundleReader(path) as reader:
        contents = reader.copy_families(WANTED, lambda chunk, text: taken.update({chunk.name: taken.get(
            chunk.name, b"") + text}))
        every = [reader.chunk(c.name).replace(b"# EOF\n", b"") for c in reader.manifest.chunks]
    got = samples_of(list(taken.values()))
    expected = {k: v for k, v in samples_of(every).items() if k[0] in WANTED}
    assert got == expected and {k[0] for k in got} == WANTED  # not innodb_history_list_lengthy
    assert contents.series == 3 and contents.samples == 3 * 3 * 20


def test_the_families_are_found_whatever_the_blocks_the_chunk_arrives_in():
    data = openmetrics_chunk({series_key(name, {"l": str(i)}): [(START_MS + 1000 * t, "1.5") for t in range(3)]
                              for i in range(4) for name in ("aa", "node_cpu_seconds_total", "innodb_history_list_length",
                                                             "zz")})
    whole = FamilyFilter("chunk", WANTED)
    expected = whole.feed(data) + whole.close()
    rng = random.Random(5)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(data)), rng.randrange(1, 40)))
        pieces = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
        split = FamilyFilter("chunk", WANTED)
        assert b"".join(split.feed(p) for p in pieces) + split.close() == expected
    assert expected.count(b"# TYPE ") == 2 and expected.endswith(b"# EOF\n")


def _tampered(tmp_path, change) -> str:
    """A bundle whose first chunk ``change`` rewrites, every checksum made to match (an attacker's)."""
    path = str(tmp_path / "b.zip")
    many_families(path)
    manifest, members = read_members(path)
    members["samples/000001.om"] = change(members["samples/000001.om"])
    out = str(tmp_path / "hostile.zip")
    write_bundle(out, manifest, members)
    return out


@pytest.mark.parametrize("change,why", [
    # A wanted family's samples out of time order: its lines are checked as import checks them.
    (lambda text: text.replace(b'innodb_history_list_length{cpu="0",instance="db1:3306",job="x"} 100.0 1790000005.000',
                               b'innodb_history_list_length{cpu="0",instance="db1:3306",job="x"} 100.0 1790000095.000'),
     "not in time order"),
    # One line of a wanted family longer than a bundle takes.
    (lambda text: text.replace(b'job="x"} 100.0', b'job="x' + b"x" * limits.LINE_BYTES + b'"} 100.0', 1),
     "longer than"),
    # A wanted family twice in one chunk.
    (lambda text: text.replace(b"# TYPE z_last unknown\n", b"# TYPE z_last unknown\n# TYPE innodb_history_list_length"
                                                           b" unknown\n"), "out of order"),
])
def test_what_a_wanted_family_holds_is_refused_as_import_refuses_it(tmp_path, change, why):
    with BundleReader(_tampered(tmp_path, change)) as reader:
        with pytest.raises(BundleError, match=why):
            reader.copy_families(WANTED, lambda chunk, text: None)


def test_damage_anywhere_is_refused_by_the_checksums(tmp_path):
    path = str(tmp_path / "b.zip")
    many_families(path)
    manifest, members = read_members(path)
    members["samples/000002.om"] = members["samples/000002.om"].replace(b"z_last", b"z_lost")
    damaged = str(tmp_path / "damaged.zip")
    write_bundle(damaged, manifest, members, rehash=False)
    with BundleReader(damaged) as reader:
        with pytest.raises(BundleError, match="checksum mismatch in samples/000002.om"):
            reader.copy_families(WANTED, lambda chunk, text: None)


def test_nothing_wanted_takes_nothing(tmp_path):
    path = str(tmp_path / "b.zip")
    many_families(path)
    with BundleReader(path) as reader:
        taken = []
        contents = reader.copy_families(set(), lambda chunk, text: taken.append(text))
    assert taken == [] and contents.samples == 0


@pytest.mark.slow
def test_only_the_wanted_families_become_blocks(tmp_path, promtool):
    path = str(tmp_path / "b.zip")
    many_families(path)
    result = import_families(path, str(tmp_path / "data"), WANTED)
    assert result.contents.samples == 3 * 3 * 20
    (tmp_path / "data" / "wal").mkdir()  # promtool reads a data directory as Prometheus leaves it
    dump = subprocess.run([promtool, "tsdb", "dump", str(tmp_path / "data")], capture_output=True, text=True,
                          check=True).stdout
    names = {line.split('__name__="')[1].split('"')[0] for line in dump.splitlines() if line}
    assert names == WANTED
    assert len(dump.splitlines()) == 3 * 3 * 20


def test_a_hostile_bundle_is_refused_before_the_data_directory_is_made(tmp_path):
    bad = _tampered(tmp_path, lambda text: text.replace(b"1790000005.000", b"1790000900.000", 1))
    with pytest.raises(ReplayImportError):
        import_families(bad, str(tmp_path / "data"), {"a_first"})
    assert not (tmp_path / "data").exists()
