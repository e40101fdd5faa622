"""The query helper: PromQL built from objects, so that no selector, rate window or offset is typed by hand.

    ratio = innodb("innodb_checkpoint_age_bytes") / innodb("innodb_checkpoint_age_max_bytes")
    rate(innodb("innodb_redo_written_bytes_total"))

An expression renders in a ``Context``: a rule's context carries the job selectors and the rule's
window; a panel's adds ``instance="$instance"`` and ``$__rate_interval``; Compare's adds
``offset $offset``, which every selector then carries, so no query can forget it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from . import external

__all__ = ["Context", "Expr", "innodb", "mysqld", "node", "series", "record", "num", "rate", "increase", "deriv",
           "avg_over_time", "min_over_time", "max_over_time", "sum_over_time", "count_over_time", "sum_by", "max_by", "min_by",
           "count_by", "topk_by", "max_without", "count", "total", "topk", "scalar", "vector",
           "label_replace", "binary", "top_over_range"]

# PromQL binary operator precedence, lowest first (the Prometheus manual, "Binary operator precedence").
_PRECEDENCE = {"or": 1, "and": 2, "unless": 2, "==": 3, "!=": 3, "<": 3, ">": 3, "<=": 3, ">=": 3,
               "+": 4, "-": 4, "*": 5, "/": 5, "%": 5, "^": 6}
_ATOM = 10


@dataclass(frozen=True)
class Context:
    """Where an expression is rendered: the job matchers of each source, and what a panel adds."""

    jobs: dict = field(default_factory=dict)  # source -> matchers, e.g. {"innodb": 'job="innodb"'}
    window: str = "5m"  # the rate window: a rule's, or "$__rate_interval"
    instance: str = ""  # 'instance="$instance"' on panels
    offset: str = ""  # "$offset" on Compare's earlier queries

    def matchers(self, source: str, extra: str) -> str:
        return ",".join(m for m in (self.jobs.get(source, ""), self.instance, extra) if m)

    def with_window(self, window: str) -> "Context":
        return replace(self, window=window)

    @property
    def shift(self) -> str:
        return f" offset {self.offset}" if self.offset else ""


class Expr:
    """A PromQL expression; Python's operators build binary expressions (``|`` is ``or``, ``&`` is ``and``)."""

    precedence = _ATOM

    def render(self, ctx: Context) -> str:
        raise NotImplementedError

    def __truediv__(self, other):
        return binary(self, "/", other)

    def __rtruediv__(self, other):
        return binary(other, "/", self)

    def __sub__(self, other):
        return binary(self, "-", other)

    def __rsub__(self, other):
        return binary(other, "-", self)

    def __add__(self, other):
        return binary(self, "+", other)

    def __mul__(self, other):
        return binary(self, "*", other)

    def __gt__(self, other):
        return binary(self, ">", other)

    def __lt__(self, other):
        return binary(self, "<", other)

    def __or__(self, other):
        return binary(self, "or", other)

    def __and__(self, other):
        return binary(self, "and", other)

    def equals(self, other) -> "Expr":
        return binary(self, "==", other)

    def holds(self, op: str, other) -> "Expr":
        """``self op bool other``: 1 where the comparison holds, 0 where it does not (and where it is NaN)."""
        return binary(self, op, other, "bool")

    def unless(self, other, matching: str = "") -> "Expr":
        return binary(self, "unless", other, matching)


@dataclass(frozen=True, eq=False)
class Num(Expr):
    value: float

    def render(self, ctx):
        return str(self.value)


@dataclass(frozen=True, eq=False)
class Str(Expr):
    value: str

    def render(self, ctx):
        return '"' + self.value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True, eq=False)
class Series(Expr):
    """An instant vector selector: the context's matchers for its source, then its own; then the offset."""

    source: str
    name: str
    extra: str = ""  # matchers of this series, e.g. 'state="dirty"'

    def render(self, ctx):
        return f"{self.name}{{{ctx.matchers(self.source, self.extra)}}}{ctx.shift}"

    def where(self, matchers: str) -> "Series":
        """The same series, narrowed by more label matchers."""
        return Series(self.source, self.name, ",".join(m for m in (self.extra, matchers) if m))


@dataclass(frozen=True, eq=False)
class Record(Expr):
    """A recording rule's output. Rules refer to it by name alone (it was built from selected series);
    a panel selects it like any series."""

    source: str
    name: str

    def render(self, ctx):
        if not ctx.instance:
            return self.name
        return Series(self.source, self.name).render(ctx)


@dataclass(frozen=True, eq=False)
class Range(Expr):
    """A range vector selector: the context's window unless one is given; ``at`` pins its end (``end()``)."""

    series: Series
    window: str = ""
    at: str = ""

    def render(self, ctx):
        sel = f"{self.series.name}{{{ctx.matchers(self.series.source, self.series.extra)}}}"
        return f"{sel}[{self.window or ctx.window}]" + (f" @ {self.at}" if self.at else "") + ctx.shift


@dataclass(frozen=True, eq=False)
class Call(Expr):
    function: str
    args: tuple

    def render(self, ctx):
        return f"{self.function}({', '.join(a.render(ctx) for a in self.args)})"


@dataclass(frozen=True, eq=False)
class Aggregation(Expr):
    op: str
    expr: Expr
    by: tuple = ()
    without: tuple = ()
    param: Expr | None = None

    def render(self, ctx):
        inner = self.expr.render(ctx) if self.param is None else f"{self.param.render(ctx)}, {self.expr.render(ctx)}"
        if self.by:
            return f"{self.op} by ({', '.join(self.by)}) ({inner})"
        if self.without:
            return f"{self.op} without ({', '.join(self.without)}) ({inner})"
        return f"{self.op}({inner})"


@dataclass(frozen=True, eq=False)
class Binary(Expr):
    left: Expr
    op: str
    right: Expr
    matching: str = ""  # e.g. "ignoring(state)", "on (instance) group_left ()"

    @property
    def precedence(self):
        return _PRECEDENCE[self.op]

    def render(self, ctx):
        left = self.left.render(ctx)
        if self.left.precedence < self.precedence:
            left = f"({left})"
        right = self.right.render(ctx)
        if self.right.precedence <= self.precedence:  # left-associative
            right = f"({right})"
        op = f"{self.op} {self.matching}" if self.matching else self.op
        return f"{left} {op} {right}"


def _lift(value) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Num(value)
    raise TypeError(f"not a PromQL expression: {value!r}")


def binary(left, op: str, right, matching: str = "") -> Expr:
    return Binary(_lift(left), op, _lift(right), matching)


# --- selectors, by the job that carries them --------------------------------------------------

def innodb(name: str, extra: str = "") -> Series:
    return Series("innodb", name, extra)


def mysqld(name: str, extra: str = "") -> Series:
    return Series("mysqld", external.check("mysqld", name), extra)


def node(name: str, extra: str = "") -> Series:
    return Series("node", external.check("node", name), extra)


def series(name: str, extra: str = "") -> Series:
    """A series no job carries: Prometheus' own (``ALERTS``), or a recording rule's output (``level:metric:op``,
    the only names with a colon). Panels still select the instance."""
    return Series("", name if ":" in name else external.check("", name), extra)


def record(name: str, source: str = "innodb") -> Record:
    return Record(source, name)


def num(value: float) -> Expr:
    return Num(value)


# --- functions --------------------------------------------------------------------------------

def _range_function(function: str):
    def build(s: Series, window: str = "", at: str = "") -> Expr:
        if not isinstance(s, Series):
            raise TypeError(f"{function}() takes a series selector, not {s!r}")
        return Call(function, (Range(s, window, at),))
    build.__name__ = function
    return build


rate = _range_function("rate")
increase = _range_function("increase")
deriv = _range_function("deriv")
avg_over_time = _range_function("avg_over_time")
min_over_time = _range_function("min_over_time")
max_over_time = _range_function("max_over_time")
sum_over_time = _range_function("sum_over_time")
count_over_time = _range_function("count_over_time")
changes = _range_function("changes")


def sum_by(labels, expr) -> Expr:
    return Aggregation("sum", expr, by=tuple(labels))


def max_by(labels, expr) -> Expr:
    return Aggregation("max", expr, by=tuple(labels))


def min_by(labels, expr) -> Expr:
    return Aggregation("min", expr, by=tuple(labels))


def count_by(labels, expr) -> Expr:
    return Aggregation("count", expr, by=tuple(labels))


def topk_by(labels, k: int, expr) -> Expr:
    """``topk by (labels) (k, expr)``: the ``k`` highest series of each group."""
    return Aggregation("topk", expr, by=tuple(labels), param=Num(k))


def max_without(labels, expr) -> Expr:
    return Aggregation("max", expr, without=tuple(labels))


def count(expr) -> Expr:
    return Aggregation("count", expr)


def total(expr) -> Expr:
    """``sum(expr)``: every series added into one."""
    return Aggregation("sum", expr)


def topk(k: int, expr) -> Expr:
    return Aggregation("topk", expr, param=Num(k))


def scalar(expr) -> Expr:
    return Call("scalar", (expr,))


def vector(value: float) -> Expr:
    return Call("vector", (Num(value),))


def label_replace(expr, dst: str, replacement: str, src: str, regex: str) -> Expr:
    return Call("label_replace", (expr, Str(dst), Str(replacement), Str(src), Str(regex)))


def top_over_range(k: int, s: Series, labels: tuple[str, ...], function=rate) -> Expr:
    """``function(s)`` for the ``k`` series that rank highest over the whole dashboard range.

    ``topk`` in a range query ranks again at every step, so a panel draws more than ``k`` series; this
    keeps the same ``k`` for the whole range (``@ end()`` evaluates the ranking once, at its end)."""
    ranking = topk(k, function(s, "$__range", at="end()"))
    return binary(function(s), "and", ranking, f"on ({', '.join(labels)})")
