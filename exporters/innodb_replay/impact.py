"""``innodb-replay impact``: the numerical value of a settings change, from a live Prometheus or an imported
bundle.

The change is a mark of the exporter (``--setting NAME``: the latest change of that setting) or a moment
(``--at TIME``). "Before" is the window that ends at the change, "after" the window of the same length that
starts a settling time after it. A mark of a SET GLOBAL is the time the exporter read the new value, at
most its settings interval (a minute) and one scrape after the change was made: before then ends that long
before the mark, so that it holds only the old setting. A mark across a restart is the server's start:
before ends with the old server's last scrape.

Each figure (figures.json) is averaged over each window, and over each of the before window's equal
sub-windows (batch means, ``SUB_WINDOW`` seconds or more each, at most ``MAX_BATCHES``). The noise band is
half the width of the 99 % interval of the difference between two window means that the spread of those
sub-window means gives (Student's t with one degree of freedom fewer than sub-windows): a difference inside
it is within what the before window does on its own. A restart inside or between the windows is refused
unless asked for; other changes in them are named, because they confound the result.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field

from innodb_exporter.sources.global_status import SETTINGS_MAX_AGE

from .readings import Figure, Mark, Queries

SUB_WINDOW = 30.0  # seconds: at least two scrapes of the slowest job (mysqld_exporter, every 15 s) in each
MAX_BATCHES = 10
MIN_BATCHES = 3
CONFIDENCE = 0.99
# Student's t, two-sided 99 %, by degrees of freedom (the batches less one).
T99 = {2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499, 8: 3.355, 9: 3.250}
CLASS_STEP = 15.0  # the rules' evaluation interval (provisioning/prometheus/prometheus.yml), for the classes
LOOKBACK = 31 * 86400.0  # how far back --setting looks for the latest change: a bundle's longest window

WITHIN, BETTER, WORSE, NOT_MEASURED, NO_BAND, BOTH_FOLLOW = (
    "within noise", "better", "worse", "not measured", "no noise band", "within noise (both at or above 1)")


class ImpactError(Exception):
    """The comparison cannot be made as asked; the message says why and what to give instead."""


@dataclass(frozen=True)
class Windows:
    before: tuple[float, float]
    after: tuple[float, float]
    batches: int

    @property
    def length(self) -> float:
        return self.before[1] - self.before[0]

    @property
    def batch(self) -> float:
        return self.length / self.batches

    def batch_ends(self) -> list[float]:
        """Where each sub-window of before ends (times in whole milliseconds, as Prometheus steps)."""
        start, step = round(self.before[0] * 1000), round(self.batch * 1000)
        return [(start + step * (i + 1)) / 1000 for i in range(self.batches)]


def plan(change_at: float, before_end: float, window: float, settle: float) -> Windows:
    """Before: ``window`` seconds ending at ``before_end``; after: as long, from ``settle`` after the change.
    Every bound in whole milliseconds, and the window a whole number of sub-windows of whole milliseconds."""
    batches = min(MAX_BATCHES, int(window // SUB_WINDOW))
    if batches < MIN_BATCHES:
        raise ImpactError(f"a window of {window:g}s holds fewer than {MIN_BATCHES} sub-windows of {SUB_WINDOW:g}s, "
                          f"from which the noise band comes: give --window {MIN_BATCHES * SUB_WINDOW:g}s or more")
    length = round(window * 1000) // batches * batches / 1000
    end, after = round(before_end * 1000) / 1000, round((change_at + settle) * 1000) / 1000
    return Windows((end - length, end), (after, after + length), batches)


def band(values: list[float | None]) -> float | None:
    """Half-width of the 99 % interval of the difference between two window means, from the means of the
    before window's sub-windows (batch means): t · s · √(2/k). None with fewer than MIN_BATCHES values."""
    values = [v for v in values if v is not None]
    if len(values) < MIN_BATCHES:
        return None
    k = len(values)
    return T99[k - 1] * statistics.stdev(values) * math.sqrt(2 / k)


def verdict(better: str, before: float | None, after: float | None, noise: float | None) -> str:
    if before is None or after is None:
        return NOT_MEASURED
    if noise is None:
        return NO_BAND
    if better == "higher up to 1":  # a rate that follows its target is as good as it gets at 1
        if before >= 1 and after >= 1:
            return BOTH_FOLLOW if abs(after - before) > noise else WITHIN
        before, after = min(before, 1.0), min(after, 1.0)
    diff = after - before
    if abs(diff) <= noise:
        return WITHIN
    return BETTER if (diff > 0) == (better != "lower") else WORSE


@dataclass
class Row:
    key: str
    title: str
    unit: str
    before: float | None
    after: float | None
    change_pct: float | None
    noise: float | None  # the band's half-width, in the figure's unit
    noise_pct: float | None
    verdict: str


def row(figure: Figure, before: float | None, after: float | None, noise: float | None) -> Row:
    change = noise_pct = None
    if before not in (None, 0) and after is not None:
        change = (after - before) / abs(before) * 100
    if before not in (None, 0) and noise is not None:
        noise_pct = noise / abs(before) * 100
    return Row(figure.key, figure.title, figure.unit, before, after, change, noise, noise_pct,
               verdict(figure.better, before, after, noise))


def winner(states: dict[int, float]) -> int | None:
    """The bottleneck class at one moment from every class's state, as the rule instance:innodb_bottleneck:class
    takes it (signals/bottleneck.py, winner): the first class by precedence (lowest code) that holds, else
    the lowest state (0 healthy: all clear; -1 not decidable). None when no class has a state."""
    holding = [code for code, state in states.items() if state == 1]
    if holding:
        return min(holding)
    return int(min(states.values())) if states else None


def shares(by_class: dict[int, dict[int, float]]) -> list[tuple[int, float]]:
    """(class code, share of the moments it won), most first, from each class's states by moment."""
    moments = sorted({t for states in by_class.values() for t in states})
    won = [w for t in moments if (w := winner({c: s[t] for c, s in by_class.items() if t in s})) is not None]
    counts: dict[int, int] = {}
    for code in won:
        counts[code] = counts.get(code, 0) + 1
    return sorted(((code, n / len(won)) for code, n in counts.items()), key=lambda item: (-item[1], item[0]))


@dataclass
class Impact:
    instance: str
    change: Mark | None  # None for --at
    at: float
    windows: Windows
    rows: list[Row]
    classes_before: list[tuple[int, float]]
    classes_after: list[tuple[int, float]]
    class_names: dict[int, str]
    confounders: list[Mark] = field(default_factory=list)
    restarts: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    before_reason: str = ""  # why before ends where it does


def before_end(readings, instance: str, mark: Mark | None, at: float) -> tuple[float, str]:
    """Where before ends, and why there: a SET GLOBAL's mark is up to a settings interval and a scrape late;
    a restart's mark is the new server's start, and before ends with the old server's last scrape."""
    if mark is None:
        return at, "at the moment given"
    if mark.restart:
        samples = readings.up_samples(instance, at - 3600, at)
        last = max((t for t, v in samples if v == 1 and t < at), default=None)
        if last is None:
            raise ImpactError(f"no scrape of {instance} in the hour before its restart at {stamp(at)}: there is no "
                              "before window to compare with")
        return last, "at the last scrape before the restart"
    samples = readings.up_samples(instance, at - 300, at)
    gaps = [b[0] - a[0] for a, b in zip(samples, samples[1:])]
    guard = SETTINGS_MAX_AGE + (statistics.median(gaps) if gaps else 15.0)
    return at - guard, (f"{guard:.0f}s before the mark: the exporter reads settings every {SETTINGS_MAX_AGE:.0f}s "
                        "and marks a change at the first scrape that reads it")


def measure(readings, queries: Queries, instance: str, mark: Mark | None, at: float, window: float, settle: float,
            now: float, across_restart: bool = False) -> Impact:
    end, reason = before_end(readings, instance, mark, at)
    windows = plan(at, end, window, settle)
    span = (windows.before[0], windows.after[1])
    restarts = [t for t in readings.starts(instance, span[0] - 900, span[1]) if span[0] < t <= span[1]]
    if mark is not None and mark.restart and not any(abs(t - mark.at) < 5 for t in restarts):
        restarts = sorted(restarts + [mark.at])
    if restarts and not across_restart:
        where = ", ".join(stamp(t) for t in restarts)
        raise ImpactError(f"{instance} restarted at {where}, inside or between the windows "
                          f"({stamp(span[0])} to {stamp(span[1])}): its counters, buffer pool and adaptive hash index "
                          "started again, so before and after compare a warm server with a cold one. Give "
                          "--across-restart to compare anyway (the table then says so), or windows without the "
                          "restart (--at, --window)")
    if windows.after[1] > now:
        raise ImpactError(f"the after window ends at {stamp(windows.after[1])}, {windows.after[1] - now:.0f}s from "
                          "now: wait, or give a shorter --window or --settle")
    # A mark comes up to a settings interval and a scrape after its change: one made inside the after window
    # may be marked just past it.
    late = span[1] + SETTINGS_MAX_AGE + CLASS_STEP
    confounders = [m for m in readings.changes(instance, span[0], late, late + CLASS_STEP)
                   if mark is None or (m.setting, m.at) != (mark.setting, mark.at)]
    rows = []
    for figure in queries.figures:
        [before] = readings.averages(figure, instance, [windows.before[1]], windows.length)
        [after] = readings.averages(figure, instance, [windows.after[1]], windows.length)
        batches = readings.averages(figure, instance, windows.batch_ends(), windows.batch)
        rows.append(row(figure, before, after, band(batches)))
    impact = Impact(instance, mark, at, windows, rows,
                    shares(readings.class_states(instance, windows.before[0] + CLASS_STEP, windows.before[1],
                                                 CLASS_STEP)),
                    shares(readings.class_states(instance, windows.after[0] + CLASS_STEP, windows.after[1],
                                                 CLASS_STEP)),
                    queries.class_names, confounders, restarts, before_reason=reason)
    if restarts:
        impact.notes.append("compared across a restart (--across-restart): counters, the buffer pool and the "
                            "adaptive hash index started again in between")
    return impact


# --- output -----------------------------------------------------------------------------------------

def stamp(t: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


def value_text(unit: str, value: float | None) -> str:
    if value is None:
        return "-"
    if unit == "/s":
        return f"{value:,.1f}/s"
    if unit == "ratio":
        return f"{value * 100:.1f}%"
    if unit == "s":
        return f"{value * 1000:.3f} ms"
    return f"{value:,.0f}"


def noise_text(r: Row) -> str:
    if r.noise is None:
        return "-"
    if r.noise_pct is not None:
        return f"±{r.noise_pct:.1f}%"
    return f"±{value_text(r.unit, r.noise)}"


def _classes_text(shares_: list[tuple[int, float]], names: dict[int, str]) -> str:
    if not shares_:
        return "-"
    return ", ".join(f"{names.get(code, code)} {share:.0%}" for code, share in shares_[:2])


def table(impact: Impact) -> str:
    w = impact.windows
    what = impact.change.describe() if impact.change else "the moment given"
    lines = [f"change: {what} on {impact.instance}, at {stamp(impact.at)}",
             f"before: {stamp(w.before[0])} to {stamp(w.before[1])} ({duration(w.length)}, ending {impact.before_reason})",
             f"after:  {stamp(w.after[0])} to {stamp(w.after[1])} ({duration(w.length)}, "
             f"{duration(round(w.after[0] - impact.at))} after the change)",
             f"noise band: the {CONFIDENCE:.0%} interval of the difference between two window means, from "
             f"{w.batches} sub-windows of {duration(w.length / w.batches)} of before (batch means)", ""]
    header = ("figure", "before", "after", "change", "noise band", "verdict")
    cells = [header] + [(r.title, value_text(r.unit, r.before), value_text(r.unit, r.after),
                         "-" if r.change_pct is None else f"{r.change_pct:+.1f}%", noise_text(r), r.verdict)
                        for r in impact.rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    for c in cells:
        lines.append("  ".join(text.ljust(widths[i]) if i in (0, 5) else text.rjust(widths[i])
                               for i, text in enumerate(c)).rstrip())
    lines.append(f"{'bottleneck'.ljust(widths[0])}  before: {_classes_text(impact.classes_before, impact.class_names)}"
                 f"; after: {_classes_text(impact.classes_after, impact.class_names)}")
    lines.append("")
    if impact.confounders:
        lines.append("other changes in or near the windows, which confound the result:")
        lines += [f"  {m.describe()} at {stamp(m.at)}" for m in impact.confounders]
    else:
        lines.append("no other change of the listed settings in the windows")
    for t in impact.restarts:
        lines.append(f"restart: the server started at {stamp(t)}")
    lines += [f"note: {n}" for n in impact.notes]
    return "\n".join(lines) + "\n"


def document(impact: Impact) -> dict:
    w = impact.windows
    return {
        "instance": impact.instance,
        "change": asdict(impact.change) if impact.change else None,
        "at": impact.at,
        "before": {"start": w.before[0], "end": w.before[1]},
        "after": {"start": w.after[0], "end": w.after[1]},
        "before_ends": impact.before_reason,
        "noise": {"method": "batch means", "confidence": CONFIDENCE, "sub_windows": w.batches,
                  "sub_window_seconds": w.length / w.batches},
        "figures": [asdict(r) for r in impact.rows],
        "bottleneck": {side: [{"class": impact.class_names.get(code, str(code)), "code": code, "share": share}
                              for code, share in shares_]
                       for side, shares_ in (("before", impact.classes_before), ("after", impact.classes_after))},
        "confounders": [asdict(m) for m in impact.confounders],
        "restarts": impact.restarts,
        "notes": impact.notes,
    }
