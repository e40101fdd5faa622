"""Fuzzing the status parser and the offline path with mutated real status texts.

Each of TEXTS mutated copies of a verbatim server output (tests/fixtures/innodb_status*, chosen and
mutated by a generator seeded with SEED and the text's number, so any failure can be replayed with
``mutated(n)``) is parsed, and goes through ``innodb_exporter.offline``: the model's metrics, the text
format, and back through prometheus_client's parser. Every text must parse without an exception and
without hanging (a text not done within HANG_GUARD seconds fails the test; the slowest is reported, never
asserted), and yield only possible values:

* in the parse, which must be consistent on its own (the model also drops what it cannot mean, so the
  exposition alone would hide a parser that returns contradicting fields): every number in range, and
  what the exporter derives from it (LSN differences, misc pages, purge lag, hit ratio, wait seconds)
  never negative, infinite or above 1 for a ratio;
* in the exposition: finite, never negative (every family read from the status text is a count, a
  size, an LSN or a duration), ratios at most 1.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import re
import signal
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from innodb_exporter import offline
from innodb_exporter.parsers import innodb_status
from support import golden

SEED = 20261123
TEXTS = 10_000
# How long one text may take before the test gives up on it: only so that a parser that backtracks or loops
# fails the test, naming the text, instead of hanging it; never a measure (a text takes milliseconds).
HANG_GUARD = 60

FOLDERS = ("innodb_status", "innodb_status_hostile")
TITLES = innodb_status.SECTION_TITLES + (innodb_status.END,)
_DIGITS = re.compile(r"[0-9]+")
_TITLE_LINE = re.compile("^(?:" + "|".join(re.escape(t) for t in TITLES) + ")$", re.M)
# Characters that trip parsers: other scripts' digits, line separators str.splitlines() would split on,
# NUL, a lone carriage return, a minus sign, a non-ASCII space.
_ODD = "0123456789 -,.:;/[]()'\t\r\n\x00\x0b\x1c\u2028\u0663\uff11\u00b2\u2212\u00a0é"


def _fixtures() -> list[tuple[str, str]]:
    texts = []
    for folder in FOLDERS:
        path = os.path.join(golden.FIXTURES, folder)
        for name in sorted(os.listdir(path)):
            if name.endswith(".txt"):
                with open(os.path.join(path, name), encoding="utf-8", newline="") as f:
                    texts.append((f"{folder}/{name}", f.read()))
    return texts


FIXTURES = _fixtures()


def _section(text: str, rng: random.Random) -> tuple[int, int]:
    """Where one section's lines are (between two titles), or the whole text when it has no title."""
    starts = [m.start() for m in _TITLE_LINE.finditer(text)]
    if not starts:
        return 0, len(text)
    k = rng.randrange(len(starts))
    return starts[k], starts[k + 1] if k + 1 < len(starts) else len(text)


def _runs(text: str, rng: random.Random, most: int) -> list[re.Match]:
    """Numbers to mutate: half the time anywhere (mostly the long transaction lists), else in one section."""
    start, end = (0, len(text)) if rng.random() < 0.5 else _section(text, rng)
    runs = list(_DIGITS.finditer(text, start, end))
    return rng.sample(runs, min(most, len(runs)))


def _replace_runs(text: str, runs: list[re.Match], new) -> str:
    for m in sorted(runs, key=lambda m: m.start(), reverse=True):
        text = text[:m.start()] + new(m.group()) + text[m.end():]
    return text


def change_digits(text, rng):
    return _replace_runs(text, _runs(text, rng, 5),
                         lambda d: "".join(rng.choice("0123456789") for _ in range(max(1, len(d) + rng.randint(-1, 1)))))


def extend_digits(text, rng):
    return _replace_runs(text, _runs(text, rng, 3), lambda d: d + "9" * rng.choice((1, 2, 5, 20, 300, 400)))


def huge_number(text, rng):
    values = ("18446744073709551615", "18446744073709551616", "1" + "0" * 20, "9" * 310, "1" * 400, "1" * 5000)
    return _replace_runs(text, _runs(text, rng, 2), lambda d: rng.choice(values))


def negative(text, rng):
    return _replace_runs(text, _runs(text, rng, 3), lambda d: "-" + d)


def swap_numbers(text, rng):
    """Two numbers trade places: an LSN behind the checkpoint, purge ahead of the counter."""
    runs = sorted(_runs(text, rng, 2), key=lambda m: m.start())
    if len(runs) < 2:
        return text
    a, b = runs
    return text[:a.start()] + b.group() + text[a.end():b.start()] + a.group() + text[b.end():]


def delete_lines(text, rng):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 5)):
        if lines:
            del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def duplicate_lines(text, rng):
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    return "\n".join(lines[:i] + lines[i:i + rng.randint(1, 8)] * rng.randint(2, 3) + lines[i + 1:])


def swap_lines(text, rng):
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def cut(text, rng):
    return text[:rng.randrange(len(text) + 1)]


def drop_section(text, rng):
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line in TITLES]
    if not starts:
        return text
    k = rng.randrange(len(starts))
    end = starts[k + 1] - 1 if k + 1 < len(starts) else len(lines)
    return "\n".join(lines[:starts[k] - 1] + lines[end:])


def inject_header(text, rng):
    """A section header, with a piece of some real section after it, anywhere in the text."""
    lines = text.split("\n")
    title = rng.choice(TITLES)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    body = lines[j:j + rng.randint(0, 20)]
    return "\n".join(lines[:i] + ["-" * len(title), title, "-" * rng.choice((3, len(title)))] + body + lines[i:])


def whitespace_flood(text, rng):
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    flood = rng.choice((" ", "\t", " \t")) * rng.randint(500, 5000)
    if rng.random() < 0.5:
        lines.insert(i, "Pending normal aio reads:" + flood + rng.choice(("", ",", "0", "[")))
    else:
        k = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:k] + flood + lines[i][k:]
    return "\n".join(lines)


def random_bytes(text, rng):
    start = rng.randrange(len(text) + 1)
    junk = "".join(rng.choice(_ODD) if rng.random() < 0.7 else chr(rng.randrange(1, 0x3000))
                   for _ in range(rng.randint(1, 200)))
    return text[:start] + junk + text[start + rng.randint(0, 200):]


def crlf(text, rng):
    return text.replace("\n", "\r\n")


MUTATIONS = (change_digits, extend_digits, huge_number, negative, swap_numbers, delete_lines, duplicate_lines,
             swap_lines, cut, drop_section, inject_header, whitespace_flood, random_bytes, crlf)


def mutated(n: int) -> tuple[str, str, list[str]]:
    """Text number ``n``: (fixture, text, mutations applied)."""
    rng = random.Random(f"{SEED}:{n}")
    name, text = rng.choice(FIXTURES)
    ops = rng.choices(MUTATIONS, k=rng.randint(1, 3))
    for op in ops:
        text = op(text, rng)
    return name, text, [op.__name__ for op in ops]


def _numbers_of(value, path: str):
    """Every number in a parse result, with where it is."""
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _numbers_of(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers_of(item, f"{path}[{key}]")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numbers_of(item, f"{path}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


def impossible_parse(status: innodb_status.InnodbStatus) -> list[str]:
    """Numbers out of range in a parse, and derived values no server can print."""
    found = [f"{path} = {v}" for path, v in _numbers_of(status, "status")
             if not (math.isfinite(v) and 0 <= v <= innodb_status.MAX_INT)]

    def negative(what: str, a, b):
        if a is not None and b is not None and a - b < 0:
            found.append(f"{what} = {a - b}")

    if log := status.log:
        negative("checkpoint age (lsn - last_checkpoint_lsn)", log.lsn, log.last_checkpoint_lsn)
        negative("modified age (lsn - pages_flushed_lsn)", log.lsn, log.pages_flushed_lsn)
        negative("lsn - flushed_lsn", log.lsn, log.flushed_lsn)
    if trx := status.transactions:
        negative("purge lag (trx_id_counter - purge_done_for)", trx.trx_id_counter, trx.purge_done_for)
        if trx.oldest_active_seconds > innodb_status.MAX_SECONDS:
            found.append(f"oldest_active_seconds = {trx.oldest_active_seconds}")
    pools = [("buffer_pool", status.buffer_pool)] + [(f"pool {k}", p) for k, p in status.buffer_pool_instances.items()]
    for where, pool in pools:
        if pool is None:
            continue
        if None not in (pool.size, pool.free, pool.database_pages):
            negative(f"{where} misc pages (size - free - data)", pool.size, pool.free + pool.database_pages)
        if pool.hit_rate is not None and pool.hit_rate > 1:
            found.append(f"{where} hit_rate = {pool.hit_rate}")
    for wait in status.semaphores.waits if status.semaphores else ():
        if wait.seconds > innodb_status.MAX_SECONDS:
            found.append(f"semaphore wait of {wait.seconds} s")
    return found


def impossible_values(exposition: str) -> list[str]:
    """Samples no status text can justify."""
    found = []
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            value = sample.value
            if not math.isfinite(value) or value < 0:
                found.append(f"{sample.name}{sample.labels} = {value}")
            elif family.name.endswith("_ratio") and value > 1:
                found.append(f"{sample.name}{sample.labels} = {value} (a ratio above 1)")
    return found


class _Hung(BaseException):  # not an Exception, which the parser would turn into a problem of its result
    pass


def _give_up(signum, frame):
    raise _Hung


def check(n: int) -> tuple[list[str], float]:
    """(what is wrong with text n, seconds it took: for the report only)."""
    name, text, ops = mutated(n)
    started = time.perf_counter()
    previous = signal.signal(signal.SIGALRM, _give_up)  # SIGALRM interrupts Python code and re matching alike
    signal.setitimer(signal.ITIMER_REAL, HANG_GUARD)
    try:
        status = innodb_status.parse(text)
        result = offline.parse_text(text)
        exposition = offline.render(result).decode()
    except _Hung:
        pytest.fail(f"text {n} ({name}, {'+'.join(ops)}) was not done after {HANG_GUARD} s: backtracking or a "
                    f"loop; replay it with mutated({n})", pytrace=False)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.perf_counter() - started
    wrong = [p for p in status.problems + result.status.problems if p.startswith("internal parser error")]
    wrong += impossible_parse(status) + impossible_parse(result.status) + impossible_values(exposition)
    return [f"text {n} ({name}, {'+'.join(ops)}): {w}" for w in wrong], elapsed


def test_the_checks_see_impossible_values():
    # The fuzzer is worth something only if its checks can fail.
    status = innodb_status.InnodbStatus(
        log=innodb_status.Log(lsn=10, last_checkpoint_lsn=11, pages_flushed_lsn=9, flushed_lsn=10),
        buffer_pool=innodb_status.BufferPool(size=5, free=3, database_pages=3, hit_rate=1.5),
        transactions=innodb_status.Transactions(trx_id_counter=1, purge_done_for=2),
        semaphores=innodb_status.Semaphores(waits=[innodb_status.SemaphoreWait("x", "mutex", math.inf)]))
    assert len(impossible_parse(status)) == 6  # the checkpoint age, misc, hit rate, purge lag, and inf twice
    wrong = impossible_values("a_ratio 1.5\nb_bytes -1\nc NaN\nd_total 3\n")
    assert [w.split("{")[0] for w in wrong] == ["a_ratio", "b_bytes", "c"]


def test_mutations_change_the_texts():
    # The fuzzer is worth something only if its texts differ from the fixtures they come from.
    originals = {text for _, text in FIXTURES}
    changed = sum(mutated(n)[1] not in originals for n in range(200))
    assert changed >= 190


@pytest.mark.slow
def test_fuzzed_status_texts_parse_to_possible_values():
    failures, slowest = [], (0.0, -1)
    for n in range(TEXTS):
        wrong, elapsed = check(n)
        failures += wrong
        slowest = max(slowest, (elapsed, n))
    print(f"{TEXTS} texts; the slowest, text {slowest[1]}, took {slowest[0] * 1000:.0f} ms")  # a report, no bound
    assert not failures, f"{len(failures)} failures, first ones:\n" + "\n".join(failures[:20])
