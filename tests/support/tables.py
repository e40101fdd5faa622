"""Read the mysql client's table output (``| a | b |`` rows between ``+---+`` borders) back into rows."""

from __future__ import annotations


def read_table(text: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the first table in the text."""
    lines = [line.rstrip("\n") for line in text.splitlines() if line.startswith("|")]
    if not lines:
        raise ValueError("no table rows in the text")
    split = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    return split[0], split[1:]
