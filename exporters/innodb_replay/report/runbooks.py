"""The runbook sections the report points to: read from docs/runbooks.md of the checkout (one section per
alert, named after it, and one per bottleneck class, '## Bottleneck: <name>'), linked under
``runbook_base_url`` (signals/config.py) by the anchor a Git host gives the heading, as the alerts'
runbook_url and the Overview's links are, and carried into the report so that it reads offline."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from html import escape

from signals import CONFIG
from signals.bottleneck import heading_anchor

from ..links import CHECKOUT

RUNBOOKS = os.path.join(CHECKOUT, "docs", "runbooks.md")


@dataclass(frozen=True)
class Section:
    heading: str
    url: str
    text: str  # its Markdown, without the heading


def load(path: str = RUNBOOKS) -> dict[str, Section]:
    """Heading -> section, for the '## ' sections of the runbooks; empty when the file is not there."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return {}
    sections: dict[str, Section] = {}
    parts = re.split(r"^(#{1,2}) (.+)$", text, flags=re.M)
    # parts: preamble, then (hashes, heading, body) for each heading
    for hashes, heading, body in zip(parts[1::3], parts[2::3], parts[3::3]):
        if hashes == "##":
            heading = heading.strip()
            sections[heading] = Section(heading, f"{CONFIG['runbook_base_url']}#{heading_anchor(heading)}", body.strip())
    return sections


def html(markdown: str) -> str:
    """The runbooks' Markdown as HTML: paragraphs, numbered and bulleted lists, `code`, **bold**, *emphasis*;
    links keep their text (they point into the repository, which the reader may not have)."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", markdown.strip()):
        lines = block.split("\n")
        items: list[str] = []
        kind = None
        paragraph: list[str] = []
        for line in lines:
            item = re.match(r"\s{0,3}(?:([0-9]+)\.|[-*]) (.*)", line)
            if item:
                kind = kind or ("ol" if item.group(1) else "ul")
                items.append(item.group(2))
            elif items:
                items[-1] += " " + line.strip()
            else:
                paragraph.append(line.strip())
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
        if items:
            out.append(f"<{kind}>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + f"</{kind}>")
    return "\n".join(out)


def _inline(text: str) -> str:
    text = escape(text)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    parts = re.split(r"(`[^`]*`)", text)
    for number, part in enumerate(parts):
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            parts[number] = f"<code>{part[1:-1]}</code>"
        else:
            part = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", part)
            parts[number] = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", part)
    return "".join(parts)
