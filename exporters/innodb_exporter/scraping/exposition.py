"""From a scrape's result to metric families, and from families to the text formats.

The exporter writes its own families straight to text: for a few hundred samples that takes a fifth of
the time prometheus_client's encoders need, and the bytes are the same (tests compare them, in both
formats). The process metrics on /metrics still come from prometheus_client's collectors and encoder.
"""

from __future__ import annotations

from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry
from prometheus_client.utils import floatToGoString

from ..metrics import counters, model, settings
from ..metrics.families import Exposed, Family
from . import health
from .scrape import ScrapeResult

OPENMETRICS = "application/openmetrics-text"


def families(result: ScrapeResult) -> list[Exposed]:
    """Health, the model's metrics, the settings and their changes, and every INNODB_METRICS counter."""
    evaluated = model.evaluate(result.snapshot)
    present = {metric.name for metric, _ in evaluated}
    return (health.families(result, present) + [metric.family.build(samples) for metric, samples in evaluated]
            + settings.families(result.snapshot.variables, result.settings) + counters.families(result.snapshot))


def _escape(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _label_value(text: str) -> str:
    if "\\" in text or "\n" in text or '"' in text:
        return _escape(text).replace('"', r'\"')
    return text


class _Form:
    """How one family is written, worked out once: its HELP and TYPE lines in each format, and the start of
    each sample line (name and labels), which the same few hundred label sets repeat on every scrape."""

    __slots__ = ("headers", "family", "prefixes")
    MAX_PREFIXES = 4096  # label values come from the server: a bound, not a size any server reaches

    def __init__(self, family: Family):
        self.family = family
        # The text format names a counter's family with its _total; OpenMetrics without, on its samples only.
        help_text = _escape(family.help)
        om_help, om_name = help_text.replace('"', r'\"'), family.base_name
        self.headers = (f"# HELP {family.name} {help_text}\n# TYPE {family.name} {family.type}\n",
                        f"# HELP {om_name} {om_help}\n# TYPE {om_name} {family.type}\n")
        self.prefixes: dict[tuple[str, ...], str] = {(): family.name + " "}

    def prefix(self, labels: tuple[str, ...]) -> str:
        prefix = self.prefixes.get(labels)
        if prefix is None:
            names = self.family.labels
            pairs = ",".join(f'{names[i]}="{_label_value(labels[i])}"' for i in self.family.label_order)
            prefix = f"{self.family.name}{{{pairs}}} "
            if len(self.prefixes) >= self.MAX_PREFIXES:
                self.prefixes.clear()
            self.prefixes[labels] = prefix
        return prefix


# By the family's id: hashing a family hashes all its fields. The form holds its family, so the id stays
# that family's while the entry lives.
_FORMS: dict[int, _Form] = {}
MAX_FORMS = 8192  # the model's families and the INNODB_METRICS counters' (counters.py keeps 4096)


def _write(exposed: Exposed, openmetrics: bool, out: list[str]) -> None:
    form = _FORMS.get(id(exposed.family))
    if form is None:
        if len(_FORMS) >= MAX_FORMS:
            _FORMS.clear()
        form = _FORMS[id(exposed.family)] = _Form(exposed.family)
    out.append(form.headers[openmetrics])
    prefixes = form.prefixes
    for labels, value in exposed.samples:
        # _Form.prefix inlined for the label sets seen before: a fifth faster. A number as floatToGoString
        # writes it, which for a float below a million in size is Python's repr, without its checks.
        prefix = prefixes.get(labels) or form.prefix(labels)
        number = repr(value) if type(value) is float and -1e6 < value < 1e6 else floatToGoString(value)
        out.append(f"{prefix}{number}\n")


def render(exposed: list[Exposed], accept_header: str = "", process: CollectorRegistry | None = None) -> tuple[bytes, str]:
    """The text format, or OpenMetrics when the scraper asks for it; ``process`` metrics go last."""
    encoder, content_type = choose_encoder(accept_header or "")
    openmetrics = content_type.startswith(OPENMETRICS)
    out: list[str] = []
    for item in exposed:
        _write(item, openmetrics, out)
    body = "".join(out).encode("utf-8")
    if process is not None:
        return body + encoder(process), content_type  # its encoder ends OpenMetrics with # EOF
    return (body + b"# EOF\n" if openmetrics else body), content_type
