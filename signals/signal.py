"""A signal: one measured quantity, declared once, which rules record or alert on and panels draw."""

from __future__ import annotations

from dataclasses import dataclass

from .promql import Call, Context, Expr, Range, Series, record


@dataclass(frozen=True, eq=False)
class Signal:
    """``expr`` is written with the query helper; the context it renders in supplies the selectors,
    the rate window and the offset. ``record`` names the recording rule that stores it, where one does
    (``{window}`` becomes the rule's window, from the config entry ``window``)."""

    name: str
    expr: Expr
    unit: str  # the Grafana unit of its value
    help: str  # what it measures, one sentence
    record: str = ""
    window: str = ""  # config key of the rate window its rules render with

    def rule_window(self, cfg: dict) -> str:
        return cfg[self.window] if self.window else cfg["alert_rate_window"]

    def record_name(self, cfg: dict) -> str:
        if not self.record:
            raise ValueError(f"signal {self.name} is not recorded")
        return self.record.format(window=self.rule_window(cfg))

    def recorded(self, cfg: dict) -> Expr:
        """The recording rule's output, for the alerts built on it."""
        return record(self.record_name(cfg))

    def render(self, ctx: Context) -> str:
        return self.expr.render(ctx)

    @property
    def series(self) -> Series:
        """The series under a gauge or a counter's rate, for rules that take another function of it."""
        if isinstance(self.expr, Series):
            return self.expr
        if isinstance(self.expr, Call) and len(self.expr.args) == 1 and isinstance(self.expr.args[0], Range):
            return self.expr.args[0].series
        raise ValueError(f"signal {self.name} is not a single series")
