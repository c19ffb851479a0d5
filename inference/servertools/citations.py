"""`url_citation` annotations: where the output text cites a URL that a server tool or plugin found.

A citation is a markdown link `[label](url)` or a bare URL whose URL is one of the sources (compared without
a trailing slash). Each becomes `{type: "url_citation", url, title, start_index, end_index}`, indices in
characters of the text, end exclusive, covering the link.
"""

from __future__ import annotations

import re
from typing import Any

_MARKDOWN_LINK = re.compile(r"\[([^\]\n]*)\]\((https?://[^\s)]+)\)")
_BARE_URL = re.compile(r"https?://[^\s<>()\[\]\"']+")


def _key(url: str) -> str:
    return url.rstrip("/.,;:")


def annotate(text: str, sources: dict[str, str]) -> list[dict[str, Any]]:
    """The url_citation annotations of `text` for `sources` (url → title), in text order."""
    if not sources or not text or "http" not in text:
        return []
    known = {_key(url): (url, title) for url, title in sources.items()}
    found: list[dict[str, Any]] = []
    covered: list[tuple[int, int]] = []
    for match in _MARKDOWN_LINK.finditer(text):
        source = known.get(_key(match.group(2)))
        covered.append(match.span())
        if source is not None:
            found.append(_citation(source, match.start(), match.end()))
    for match in _BARE_URL.finditer(text):
        if any(start <= match.start() < end for start, end in covered):
            continue
        url = match.group(0).rstrip(".,;:")
        source = known.get(_key(url))
        if source is not None:
            found.append(_citation(source, match.start(), match.start() + len(url)))
    return sorted(found, key=lambda a: a["start_index"])


def _citation(source: tuple[str, str], start: int, end: int) -> dict[str, Any]:
    url, title = source
    return {"type": "url_citation", "url": url, "title": title, "start_index": start, "end_index": end}


def annotate_output(output: list[dict[str, Any]], sources: dict[str, str]) -> None:
    """Add the annotations to every output_text part of the message items (in place)."""
    if not sources:
        return
    for item in output:
        if item.get("type") != "message":
            continue
        for part in item.get("content") or ():
            if part.get("type") == "output_text":
                part["annotations"] = annotate(part.get("text", ""), sources)
