"""A value in a Grafana unit, written as a panel writes it: the dashboards' previews and the incident report
draw their numbers with it, so that a figure reads the same on the page as on the dashboard."""

from __future__ import annotations

import math

DURATIONS = ((86400, " d"), (3600, " h"), (60, " min"), (1, " s"), (1e-3, " ms"), (1e-6, " µs"))
PER_SECOND = {"ops": " ops/s", "iops": " io/s"}


def _scaled(value: float, base: float, suffixes) -> str:
    magnitude, index = abs(value), 0
    while index + 1 < len(suffixes) and magnitude >= base ** (index + 1):
        index += 1
    return f"{value / base ** index:.3g}{suffixes[index]}"


def format_value(unit: str, value: float | None) -> str:
    """``value`` in ``unit`` (Grafana's unit ids, and its ``suffix:`` and ``count:`` custom units); a dash when
    there is no value."""
    if value is None or not math.isfinite(value):
        return "–"
    if unit == "percentunit":
        return f"{value * 100:.3g}%"
    if unit == "s":
        for size, suffix in DURATIONS:
            if abs(value) >= size:
                return f"{value / size:.3g}{suffix}"
        return "0 s" if value == 0 else f"{value / 1e-9:.3g} ns"
    if unit == "bytes":
        return _scaled(value, 1024, (" B", " KiB", " MiB", " GiB", " TiB"))
    if unit == "Bps":
        return _scaled(value, 1000, (" B/s", " kB/s", " MB/s", " GB/s"))
    if unit in PER_SECOND:
        name = PER_SECOND[unit].strip()
        return _scaled(value, 1000, (PER_SECOND[unit], f" K{name}", f" M{name}"))
    if unit == "short":
        return _scaled(value, 1000, ("", " K", " Mil", " Bil"))
    if unit.startswith("suffix:"):
        return f"{value:.3g}{unit[len('suffix:'):]}"
    if unit.startswith("count:"):  # Grafana's custom count unit: scaled by thousands, then the unit
        return _scaled(value, 1000, ("", "K", "M", "B")) + " " + unit[len("count:"):]
    return f"{value:.3g}"
