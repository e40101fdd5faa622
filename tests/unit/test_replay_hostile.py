"""Hostile bundles (issue 9, finding 5): each is refused within bounded memory, with one clear line that
names the check that refused it and no traceback, before the data directory is touched.

The attacker writes the manifest too, so every bundle here carries checksums that match. Each import
runs as a command whose address space is capped at 1 GiB, its peak memory measured with wait4: before
these bounds the 256 KB bomb took 2.4 GB and the 64 MB label 514 MB.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import struct
import subprocess
import sys
import zipfile

import pytest

from innodb_bundle import limits
from innodb_replay.cli import main
from support.bundles import START_MS, read_members, replay_command, sound_bundle, write_bundle
from support.exporter import ROOT

MAX_PEAK_MB = 100  # the command with its imports takes about 40
# How long a command may run before the test gives up on it: only so that a regression fails the test instead
# of hanging it, never a measure. What a refusal must not do (decompress a bomb, read past a bound) is asserted
# through the line naming the check that refused it and the peak memory.
HANG_GUARD = 120


def refused(tmp_path, bundle, *extra, **kw):
    """Import the bundle; assert it was refused in one clean line within the bounds; return that line."""
    data_dir = tmp_path / "data"
    run = replay_command("import", str(bundle), f"--data-dir={data_dir}", "--no-start", *extra,
                         **{"timeout": HANG_GUARD, **kw})
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("innodb-replay import: ")
    assert not any(ch in run.stderr for ch in "\x1b\x07\x9b"), "an escape sequence reached the terminal"
    assert run.peak_mb < MAX_PEAK_MB, f"{run.peak_mb:.0f} MB: {run.stderr}"
    assert not data_dir.exists() and not os.path.exists(f"{data_dir}.prometheus")
    return run.stderr


def bomb(path, member: str, size: int, prefix: bytes = b"") -> None:
    """A sound bundle whose ``member`` becomes ``size`` bytes of one repeated byte: deflate's best case."""
    sound = str(path) + ".sound"
    sound_bundle(sound)
    manifest, members = read_members(sound)
    digest = hashlib.sha256(prefix)
    block = b"0" * (1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in members.items():
            if name != member:
                z.writestr(name, data)
        with z.open(member, "w", force_zip64=True) as f:
            f.write(prefix)
            for _ in range(size // len(block)):
                f.write(block)
                digest.update(block)
        manifest["files"][member] = digest.hexdigest()
        if member != "manifest.json":
            z.writestr("manifest.json", json.dumps(manifest))


@pytest.mark.parametrize("size,member", [(256 << 20, "samples/000001.om"), (1 << 30, "samples/000001.om"),
                                         (256 << 20, "metadata.json")])
@pytest.mark.slow
def test_zip_bombs_are_refused_from_the_directory(tmp_path, size, member):
    path = tmp_path / "bomb.zip"
    bomb(path, member, size)
    assert os.path.getsize(path) < size / 500  # 256 KB and 1 MB files, as in the report
    line = refused(tmp_path, path)
    assert f"{member} would decompress to {size}" in line


@pytest.mark.slow
def test_a_bomb_within_the_size_bounds_is_refused_by_its_ratio(tmp_path):
    path = tmp_path / "bomb.zip"
    bomb(path, "samples/000001.om", 100 << 20)  # under the 128 MiB of a chunk, in a 100 KB file
    assert "ZIP bomb" in refused(tmp_path, path)


@pytest.mark.slow
def test_a_256_mb_manifest_is_not_read(tmp_path):
    path = tmp_path / "manifest-bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("manifest.json", "w", force_zip64=True) as f:
            f.write(b'{"format": "innodb-replay/1", "pad": "')
            for _ in range(256):
                f.write(b" " * (1 << 20))
            f.write(b'"}')
    line = refused(tmp_path, path)
    assert "manifest.json" in line and str(limits.MANIFEST_BYTES) in line


def _patch_declared_size(path, member: str, declared: int) -> None:
    """Make the ZIP directory lie about a member's decompressed size (the local header keeps the truth)."""
    data = bytearray(open(path, "rb").read())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        name_length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + name_length] == member.encode():
            struct.pack_into("<L", data, at + 24, declared)
            break
        at = data.find(b"PK\x01\x02", at + 4)
    open(path, "wb").write(bytes(data))


@pytest.mark.slow
def test_a_member_larger_than_its_directory_says_is_never_read_past_it(tmp_path):
    sound = tmp_path / "sound.zip"
    sound_bundle(str(sound))
    manifest, members = read_members(str(sound))
    text = json.dumps(manifest).encode()
    padded = text[:-1] + b" " * (64 << 20) + b"}"  # 64 MB, declared as 4 KB below
    path = tmp_path / "liar.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        z.writestr("manifest.json", padded)
    del padded
    _patch_declared_size(path, "manifest.json", 4096)
    line = refused(tmp_path, path)
    assert "manifest.json cannot be read" in line


def test_members_that_share_their_bytes_are_refused(tmp_path):
    """The "better zip bomb": many directory entries pointing at the same compressed bytes."""
    path = tmp_path / "overlap.zip"
    sound = tmp_path / "sound.zip"
    sound_bundle(str(sound), chunks=1)
    manifest, members = read_members(str(sound))
    members["samples/000001.om"] = os.urandom(1 << 20).hex().encode()[:1 << 20]  # incompressible
    write_bundle(str(path), manifest, members, compression=zipfile.ZIP_STORED)
    data = open(path, "rb").read()
    directory = data.index(b"PK\x01\x02")
    end = data.rindex(b"PK\x05\x06")
    entries = data[directory:end]
    first = entries.index(b"samples/000001.om") - 46
    length = 46 + len(b"samples/000001.om")
    entry = entries[first:first + length]
    copies = b"".join(entry.replace(b"samples/000001.om", f"samples/{n:06d}.om".encode()) for n in range(2, 21))
    count, size, offset = struct.unpack_from("<HLL", data, end + 10)
    tail = bytearray(data[end:])
    struct.pack_into("<HHLL", tail, 8, count + 19, count + 19, size + len(copies), offset)
    open(path, "wb").write(data[:end] + copies + bytes(tail))
    line = refused(tmp_path, path)
    assert "overlapping" in line


def chunk_text(samples: list[tuple[str, int, str]]) -> bytes:
    """OpenMetrics as the writer makes it, from (series, ms, value) in order."""
    lines, family = [], None
    for series, ms, value in samples:
        name = series.split("{")[0]
        if name != family:
            lines.append(f"# TYPE {name} unknown")
            family = name
        lines.append(f"{series} {value} {ms // 1000}.{ms % 1000:03d}")
    return ("\n".join(lines) + "\n# EOF\n").encode()


def manifest_for(chunks: list[tuple[str, int, int, int, int]], window=None, kind="export", series=1) -> dict:
    """A manifest as the writer makes it: chunks as (name, start, end, series, samples)."""
    window = window or (chunks[0][1], chunks[-1][2])
    return {"format": "innodb-replay/1", "tool": "innodb-replay 0.1.0", "kind": kind, "source": "http://p:9090",
            "selector": "", "created": "2026-11-23T00:00:00+00:00",
            "window": {"start_ms": window[0], "end_ms": window[1], "start": "", "end": ""},
            "series": series, "samples": sum(c[4] for c in chunks),
            "chunks": [{"name": n, "start_ms": s, "end_ms": e, "series": k, "samples": m} for n, s, e, k, m in chunks],
            "files": {}}


def test_samples_two_hours_apart_are_refused_at_once(tmp_path):
    """2,000 samples two hours apart made 2,000 blocks in 3 minutes: a window no incident has."""
    step = 2 * 3600 * 1000
    samples = [('innodb_up{job="innodb"}', START_MS + i * step, "1") for i in range(2000)]
    end = START_MS + 1999 * step
    path = tmp_path / "spread.zip"
    write_bundle(str(path), manifest_for([("samples/000001.om", START_MS, end, 1, 2000)]),
                 {"samples/000001.om": chunk_text(samples), "metadata.json": b"{}"})
    assert "hours; import takes at most" in refused(tmp_path, path)


def test_samples_outside_what_the_manifest_says_are_refused(tmp_path):
    """The same samples under a manifest that claims one hour."""
    step = 2 * 3600 * 1000
    samples = [('innodb_up{job="innodb"}', START_MS + i * step, "1") for i in range(2000)]
    path = tmp_path / "liar.zip"
    write_bundle(str(path), manifest_for([("samples/000001.om", START_MS, START_MS + 3600_000, 1, 2000)]),
                 {"samples/000001.om": chunk_text(samples), "metadata.json": b"{}"})
    assert "outside the chunk's window" in refused(tmp_path, path)


@pytest.mark.slow
def test_one_chunk_listed_twenty_times_is_refused(tmp_path):
    text = chunk_text([('innodb_up{job="innodb"}', START_MS + 1000, "1")])
    listed = manifest_for([("samples/000001.om", START_MS, START_MS + 2000, 1, 1)] * 20)
    path = tmp_path / "twenty.zip"
    write_bundle(str(path), listed, {"samples/000001.om": text, "metadata.json": b"{}"})
    assert "lists samples/000001.om twice" in refused(tmp_path, path)
    # The same chunk under twenty names: their windows overlap.
    names = [f"samples/{n:06d}.om" for n in range(1, 21)]
    path = tmp_path / "twenty-names.zip"
    write_bundle(str(path), manifest_for([(n, START_MS, START_MS + 2000, 1, 1) for n in names]),
                 {**{n: text for n in names}, "metadata.json": b"{}"})
    assert "overlaps" in refused(tmp_path, path)
    # Twenty members of one name in the ZIP.
    path = tmp_path / "twenty-members.zip"
    with pytest.warns(UserWarning, match="Duplicate name"):  # zipfile writes them all the same
        write_bundle(str(path), manifest_for([("samples/000001.om", START_MS, START_MS + 2000, 1, 1)]),
                     [("samples/000001.om", text)] * 20 + [("metadata.json", b"{}")])
    assert "twice" in refused(tmp_path, path)


@pytest.mark.slow
def test_a_64_mb_label_value_is_refused_while_streaming(tmp_path):
    value = os.urandom(32 << 20).hex()  # 64 MB that compress only about twice: no ratio check stops it
    text = f'# TYPE innodb_up unknown\ninnodb_up{{job="{value}"}} 1 {START_MS // 1000}.000\n# EOF\n'.encode()
    del value
    path = tmp_path / "label.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("samples/000001.om", text)
        z.writestr("metadata.json", b"{}")
        manifest = manifest_for([("samples/000001.om", START_MS, START_MS + 1000, 1, 1)])
        manifest["files"] = {"samples/000001.om": hashlib.sha256(text).hexdigest(),
                             "metadata.json": hashlib.sha256(b"{}").hexdigest()}
        z.writestr("manifest.json", json.dumps(manifest))
    del text
    line = refused(tmp_path, path)
    assert f"longer than {limits.LINE_BYTES} bytes" in line


@pytest.mark.slow
def test_a_directory_of_too_many_members_is_not_read(tmp_path):
    path = tmp_path / "members.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for n in range(limits.MEMBERS + 1):
            z.writestr(f"texts/{n}", b"")
    assert f"at most {limits.MEMBERS} members" in refused(tmp_path, path)


@pytest.mark.parametrize("name", ["../evil.om", "samples/../../evil.om", "/tmp/evil.om", "texts/../../evil",
                                  "texts/..", "samples\\..\\evil.om"])
def test_path_traversal_in_member_names_is_refused(tmp_path, name):
    sound = tmp_path / "sound.zip"
    sound_bundle(str(sound), chunks=1)
    manifest, members = read_members(str(sound))
    members[name] = b"# EOF\n"
    path = tmp_path / "traversal.zip"
    write_bundle(str(path), manifest, members)
    before = sorted(os.listdir(tmp_path.parent))
    assert "does not know" in refused(tmp_path, path)
    assert sorted(os.listdir(tmp_path.parent)) == before and not os.path.exists("/tmp/evil.om")


def test_a_chunk_name_that_climbs_out_is_refused(tmp_path):
    text = chunk_text([('innodb_up{job="innodb"}', START_MS + 1000, "1")])
    path = tmp_path / "climb.zip"
    write_bundle(str(path), manifest_for([("../../x.om", START_MS, START_MS + 2000, 1, 1)]),
                 {"samples/000001.om": text, "metadata.json": b"{}"})
    assert "is not named samples/NNNNNN.om" in refused(tmp_path, path)


def test_escape_sequences_never_reach_the_terminal(tmp_path):
    sound = tmp_path / "sound.zip"
    sound_bundle(str(sound), chunks=1)
    manifest, members = read_members(str(sound))
    manifest["kind"] = "\x1b[2J\x1b[31mexport"
    path = tmp_path / "kind.zip"
    write_bundle(str(path), manifest, members)
    assert "kind must be one of export, record" in refused(tmp_path, path)
    manifest["kind"] = "export"
    members["texts/\x1b]0;pwned\x07"] = b"x"
    path = tmp_path / "name.zip"
    write_bundle(str(path), manifest, members)
    refused(tmp_path, path)  # which asserts that no escape character was printed


def test_counts_that_lie_are_refused(tmp_path):
    sound = tmp_path / "sound.zip"
    sound_bundle(str(sound), chunks=2, series=3, per_chunk=5)
    manifest, members = read_members(str(sound))
    manifest["chunks"][0]["samples"] += 100  # and the total with it, so that the sums agree
    manifest["samples"] += 100
    path = tmp_path / "samples.zip"
    write_bundle(str(path), manifest, members)
    assert "holds 15 of 3" in refused(tmp_path, path)
    manifest, members = read_members(str(sound))
    manifest["series"] = 1000
    path = tmp_path / "series.zip"
    write_bundle(str(path), manifest, members)
    assert "counts 1000 series, the chunks hold 3" in refused(tmp_path, path)


MALFORMED = {
    "not JSON": b"{",
    "a list": b"[]",
    "deep nesting": b'{"format": "innodb-replay/1", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "an endless integer": b'{"format": "innodb-replay/1", "series": ' + b"9" * 10_000 + b"}",
    "NaN": None,
    "window a string": None,
    "window missing": None,
    "chunks an object": None,
    "chunk without a name": None,
    "chunk start a float": None,
    "samples true": None,
    "files not hex": None,
    "source a number": None,
    "an unknown key": None,
    "format missing": None,
    "a timestamp past the year 2286": None,
}


def _malformed(case: str, manifest: dict) -> bytes:
    m = json.loads(json.dumps(manifest))
    if case == "NaN":
        m["samples"] = float("nan")
    elif case == "window a string":
        m["window"] = "yesterday"
    elif case == "window missing":
        del m["window"]
    elif case == "chunks an object":
        m["chunks"] = {"name": "samples/000001.om"}
    elif case == "chunk without a name":
        del m["chunks"][0]["name"]
    elif case == "chunk start a float":
        m["chunks"][0]["start_ms"] += 0.5
    elif case == "samples true":
        m["chunks"][0]["samples"] = True
    elif case == "files not hex":
        m["files"]["metadata.json"] = "z" * 64
    elif case == "source a number":
        m["source"] = 7
    elif case == "an unknown key":
        m["extra"] = 1
    elif case == "format missing":
        del m["format"]
    elif case == "a timestamp past the year 2286":
        m["window"]["end_ms"] = 10**19
    return json.dumps(m).encode()


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_manifests_end_in_one_line(tmp_path, capsys, case):
    sound = tmp_path / "sound.zip"
    sound_bundle(str(sound), chunks=1)
    manifest, members = read_members(str(sound))
    raw = MALFORMED[case] or _malformed(case, manifest)
    path = tmp_path / "malformed.zip"
    write_bundle(str(path), raw, members, rehash=False)
    data_dir = tmp_path / "data"
    assert main(["import", str(path), f"--data-dir={data_dir}", "--no-start"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("innodb-replay import: ") and err.count("\n") == 1, err
    assert "manifest" in err or "format" in err, err
    assert not data_dir.exists()


def test_a_bundle_truncated_anywhere_is_refused(tmp_path, capsys):
    sound = tmp_path / "sound.zip"
    sound_bundle(str(sound), chunks=3)
    data = sound.read_bytes()
    for cut in range(0, len(data), max(1, len(data) // 40)):
        path = tmp_path / "cut.zip"
        path.write_bytes(data[:cut])
        assert main(["import", str(path), f"--data-dir={tmp_path / 'data'}", "--no-start"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and not (tmp_path / "data").exists(), err


@pytest.mark.slow
def test_more_series_than_a_bundle_takes_are_refused_while_streaming(tmp_path):
    """Each distinct series costs the check a digest: their number is what bounds its memory."""
    n = limits.SERIES + 1
    text = ("# TYPE m unknown\n" + "".join(sorted(f'm{{s="{i}"}} 1 {START_MS // 1000}.000\n' for i in range(n)))
            + "# EOF\n").encode()
    manifest = manifest_for([("samples/000001.om", START_MS, START_MS + 1000, limits.SERIES, n)],
                            series=limits.SERIES)
    path = tmp_path / "series.zip"
    write_bundle(str(path), manifest, {"samples/000001.om": text, "metadata.json": b"{}"})
    del text
    data_dir = tmp_path / "data"
    run = replay_command("import", str(path), f"--data-dir={data_dir}", "--no-start", timeout=HANG_GUARD)
    assert run.returncode == 1 and f"more than {limits.SERIES} series" in run.stderr, run.stderr
    assert run.peak_mb < 150, run.peak_mb
    assert not data_dir.exists()


@pytest.mark.slow
def test_innodb_exporter_parse_refuses_a_hostile_bundle_the_same_way(tmp_path):
    """``innodb-exporter parse BUNDLE`` reads a bundle's texts through innodb_replay.bundle.read_texts."""
    path = tmp_path / "texts-bomb.zip"
    bomb(path, "texts/2026-11-20T14-05-00.000Z-engine-innodb-status.txt", 256 << 20)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    out = subprocess.run([sys.executable, "-m", "innodb_exporter", "parse", str(path)], capture_output=True, text=True,
                         env=env, timeout=HANG_GUARD,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)))
    assert out.returncode == 1 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert "ZIP bomb" in out.stderr or "at most" in out.stderr


@pytest.mark.parametrize("first, second", [('foo{a="1",b="2"}', 'foo{b="2",a="1"}'), ('foo', 'foo{a=""}')])
def test_one_series_spelt_twice_is_refused(tmp_path, first, second):
    """Both spellings passed as two series; import merged them, dropping samples the counts had printed."""
    samples = [(first, START_MS + 1000, "1"), (first, START_MS + 2000, "2"),
               (second, START_MS + 1000, "3"), (second, START_MS + 2000, "4")]
    samples.sort(key=lambda s: s[0])
    path = tmp_path / "twice.zip"
    write_bundle(str(path), manifest_for([("samples/000001.om", START_MS, START_MS + 3000, 2, 4)], series=2),
                 {"samples/000001.om": chunk_text(samples), "metadata.json": b"{}"})
    assert "labels not in name order, or a label with an empty value" in refused(tmp_path, path)


@pytest.mark.slow
def test_many_members_each_under_the_ratio_floor_are_refused_together(tmp_path):
    """Texts of exactly 1 MiB each pass the per-member ratio: 50,000 of them made 52 GB from 57 MB. Here
    200 (200 MiB from about 200 KB) show the bound over all members."""
    sound = str(tmp_path / "sound.zip")
    sound_bundle(sound)
    manifest, members = read_members(sound)
    text = b"0" * limits.RATIO_FLOOR
    path = tmp_path / "texts-bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in members.items():
            if name != "manifest.json":
                z.writestr(name, data)
        for i in range(200):
            name = f"texts/{i:04d}-engine-innodb-status.txt"
            z.writestr(name, text)
            manifest["files"][name] = hashlib.sha256(text).hexdigest()
        z.writestr("manifest.json", json.dumps(manifest))
    assert os.path.getsize(path) < 1 << 20
    assert "times their size together" in refused(tmp_path, path)
