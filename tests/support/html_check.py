"""An HTML file read as a browser would have to: every element closed in order, and what points outside it."""

from __future__ import annotations

import html.parser

VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "embed", "source", "track", "wbr"}
# Attributes that make a browser fetch or leave the file.
POINTING = ("src", "href", "xlink:href", "action", "srcset", "poster", "data", "formaction")


class Structure(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.outside: list[str] = []  # "tag attribute=value" of every link or source not within the file
        self.tags: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for name, value in attrs:
            if name in POINTING and value and not value.startswith("#"):
                self.outside.append(f"{tag} {name}={value}")
            if name == "style" and value and "url(" in value:
                self.outside.append(f"{tag} style {value}")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def structure(text: str) -> Structure:
    checker = Structure()
    checker.feed(text)
    checker.close()
    return checker
