"""Readable text of a fetched page, for the model.

HTML: the text of `<main>` or `<article>` when they hold enough of it (200 characters or more), else of the
whole body; scripts, styles, navigation, headers, footers, asides, forms and other chrome are left out;
each block element is one line, list items start with "- ", headings with "#". The `<title>` is kept
apart. Plain text and JSON are used as they are. Other content types are refused.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "svg", "canvas", "nav", "header", "footer", "aside", "form",
     "iframe", "button", "select", "head", "object", "embed"}
)  # fmt: skip
BLOCKS = frozenset(
    {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article", "main", "pre",
     "blockquote", "table", "ul", "ol", "dl", "dt", "dd", "figcaption", "hr", "td", "th"}
)  # fmt: skip
VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "source", "wbr"})
MAIN = frozenset({"main", "article"})
TEXT_TYPES = ("text/plain", "text/markdown", "application/json", "text/csv")
MIN_MAIN_CHARS = 200
_SPACES = re.compile(r"[ \t\r\f\v]+")


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skip = 0
        self.main = 0
        self.in_title = False
        self.title: list[str] = []
        self.all: list[str] = []
        self.main_parts: list[str] = []

    def _add(self, text: str) -> None:
        self.all.append(text)
        if self.main:
            self.main_parts.append(text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title":
            self.in_title = True
        if tag in VOID:
            if tag in BLOCKS:
                self._add("\n")
            return
        if tag in SKIPPED:
            self.skip += 1
        elif tag in MAIN:
            self.main += 1
        if not self.skip and tag in BLOCKS:
            self._add("\n")
            if tag == "li":
                self._add("- ")
            elif tag[0] == "h" and tag[1:].isdigit():
                self._add("#" * int(tag[1:]) + " ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in SKIPPED and self.skip:
            self.skip -= 1
        elif tag in MAIN and self.main:
            self.main -= 1
        if not self.skip and tag in BLOCKS:
            self._add("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        elif not self.skip:
            self._add(data.replace("\n", " "))  # a line break in the source is a space in the page


def _tidy(parts: list[str]) -> str:
    lines = (_SPACES.sub(" ", line).strip() for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def html_text(html: str) -> tuple[str, str]:
    """(title, readable text) of an HTML document."""
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    main = _tidy(parser.main_parts)
    text = main if len(main) >= MIN_MAIN_CHARS else _tidy(parser.all)
    return _tidy(parser.title), text


def readable(body: bytes, content_type: str, charset: str) -> tuple[str, str]:
    """(title, text) of a fetched body; ValueError for a content type that has no readable text."""
    decoded = body.decode(charset or "utf-8", errors="replace") if charset else body.decode("utf-8", "replace")
    if content_type in ("text/html", "application/xhtml+xml") or (not content_type and "<html" in decoded[:2048]):
        return html_text(decoded)
    if content_type.startswith("text/") or content_type in TEXT_TYPES:
        return "", decoded.strip()
    raise ValueError(f"the page is {content_type or 'of an unknown type'}, which has no readable text")
