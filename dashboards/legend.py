"""Legends that show every row: a table of each series' last value and maximum, sorted by the maximum, under
the plot while it fits there, else beside it, and a panel tall enough for all its rows.

Grafana gives a legend under the plot at most 35 % of the panel's inside, one beside it the whole height
(Grafana 9.4, packages/grafana-ui/src/components/VizLayout/VizLayout.tsx) and scrolls the rest, which hid
rows before; the sizes below are Grafana 9.4's (public/app/core/constants.ts, PanelChrome) and the legend
rows' as Chromium drew them in Grafana 9.4 (measured with its screenshot script, see the README's
dashboards section).
"""

from __future__ import annotations

CALCS = ("lastNotNull", "max")
SORT_BY = "Max"  # the column's title in Grafana: the reducer's name

GRID_ROW_PX, GRID_MARGIN_PX = 30, 8  # a grid unit of height, and the gap between two
CHROME_PX = 32 + 2 * 8 + 2  # the panel's header, its padding above and below, its border
BOTTOM_SHARE = 0.35  # of the inside, at most, for a legend under the plot
HEADER_PX, ROW_PX = 24, 24  # the table's header and each row, with their borders (23.3 and 23.8 measured)
GROWTH = 4  # grid units a panel may grow to keep its legend under the plot
WIDE = 10  # columns of the 24 a panel needs for a legend beside its plot


def inside_px(height: int) -> float:
    """The pixels a panel ``height`` grid units tall has inside, for the plot and its legend."""
    return height * GRID_ROW_PX + (height - 1) * GRID_MARGIN_PX - CHROME_PX


def table_px(rows: int) -> int:
    return HEADER_PX + rows * ROW_PX


def placement(rows: int, height: int) -> str | None:
    """Where a legend of ``rows`` rows shows them all in a panel ``height`` tall: bottom, right, or None."""
    if table_px(rows) <= BOTTOM_SHARE * inside_px(height):
        return "bottom"
    if table_px(rows) <= inside_px(height):
        return "right"
    return None


def layout(rows: int, height: int, width: int) -> tuple[str, int]:
    """(placement, height) for a legend of ``rows`` rows in a panel ``width`` columns wide and at least ``height``
    tall: under the plot when the panel need grow by at most GROWTH for it, or is narrow (a legend beside the
    plot would leave it no room); else beside it, the panel as tall as its rows need."""
    for grown in range(height, height + GROWTH + 1):
        if placement(rows, grown) == "bottom":
            return "bottom", grown
    if width >= WIDE:
        while placement(rows, height) is None:
            height += 1
        return "right", height
    while placement(rows, height) != "bottom":
        height += 1
    return "bottom", height
