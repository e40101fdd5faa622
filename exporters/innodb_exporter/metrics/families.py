"""A metric family declared once (name, type, unit, help, labels), and its samples in one scrape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

Sample = tuple[tuple[str, ...], float]  # label values, value


@dataclass(frozen=True)
class Family:
    name: str  # a counter's name ends in _total
    type: str  # "gauge" or "counter"
    unit: str  # "bytes", "seconds" or "" (for the reference; the name already says it)
    help: str
    labels: tuple[str, ...] = ()
    # The order the exposition formats write labels in (by name), worked out once.
    label_order: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "label_order", tuple(sorted(range(len(self.labels)), key=self.labels.__getitem__)))

    @property
    def base_name(self) -> str:
        """As prometheus_client and OpenMetrics name a family: a counter without its _total."""
        return self.name.removesuffix("_total") if self.type == "counter" else self.name

    def build(self, samples: Iterable[Sample]) -> "Exposed":
        return Exposed(self, list(samples))


@dataclass(slots=True)
class Exposed:
    """A family with this scrape's samples, ready for exposition.render."""

    family: Family
    samples: list[Sample]

    @property
    def name(self) -> str:
        return self.family.base_name

    @property
    def type(self) -> str:
        return self.family.type
