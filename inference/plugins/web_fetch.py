"""The `web-fetch` plugin: fetch the web pages the last user message links to and add their text to the prompt.

Plugin object: `{"id": "web-fetch", "max_urls": 1..5 (default 3), "max_chars": 100..GATEWAY_WEB_FETCH_MAX_CHARS
(per page)}` (optional). Before the first turn the gateway finds the http(s) URLs in the last user message
(first `max_urls`, in order), fetches them concurrently through the same guard as `service:web_fetch` (no
private addresses, no redirects to them, size and time limits), and puts one system message right above that
user message with each page's title, URL and readable text (or why it could not be fetched). Citations of the
pages become `url_citation` annotations. No fee.
"""

from __future__ import annotations

import asyncio
import re
from decimal import Decimal
from typing import Any

from django.conf import settings

from gateway_project.api.errors import validation_error
from inference.plugins.context import insert_before_last_user, last_user_text
from inference.plugins.registry import Plugin, register
from inference.servertools.web_fetch import check_max_chars, read_page
from inference.web.fetch import FetchError

DEFAULT_MAX_URLS = 3
MAX_URLS = 5
_URL = re.compile(r"https?://[^\s<>()\[\]\"'`]+")
PROMPT = "The user's message links to these web pages; their text, fetched on the user's behalf, follows."


def _check(name: str, plugin: dict[str, Any]) -> None:
    for key in plugin:
        if key not in ("id", "enabled", "max_urls", "max_chars"):
            raise validation_error(f"{name}.{key}", "unknown parameter")
    max_urls = plugin.get("max_urls")
    if max_urls is not None and (
        isinstance(max_urls, bool) or not isinstance(max_urls, int) or not 1 <= max_urls <= MAX_URLS
    ):
        raise validation_error(f"{name}.max_urls", f"must be an integer from 1 to {MAX_URLS}")
    check_max_chars(f"{name}.max_chars", plugin.get("max_chars"))


def urls_in(text: str, limit: int) -> list[str]:
    found = [u.rstrip(".,;:!?") for u in _URL.findall(text)]
    return list(dict.fromkeys(found))[:limit]


async def _one(url: str, max_chars: int) -> tuple[str, dict[str, Any] | None, str]:
    try:
        fields, text = await read_page(url, max_chars)
    except FetchError as error:
        return url, None, f"URL: {url}\n(could not be fetched: {error})"
    return url, fields, text


async def _run(ctx: Any, plugin: dict[str, Any], state: Any) -> Decimal:
    _, text = last_user_text(state.input)
    urls = urls_in(text, plugin.get("max_urls") or DEFAULT_MAX_URLS)
    stage: dict[str, Any] = {"type": "plugin", "name": "web-fetch"}
    if not urls:
        ctx.pipeline.append({**stage, "summary": "no URL in the user message", "data": {"pages": []}})
        return Decimal(0)
    max_chars = plugin.get("max_chars") or settings.GATEWAY_WEB_FETCH_MAX_CHARS
    pages = await asyncio.gather(*(_one(url, max_chars) for url in urls))
    insert_before_last_user(state.input, PROMPT + "\n\n" + "\n\n---\n\n".join(page for _, _, page in pages))
    report = []
    for url, fields, page in pages:
        if fields is None:
            report.append({"url": url, "status": "failed", "error": page.split("could not be fetched: ", 1)[-1][:-1]})
            continue
        state.sources[fields["url"]] = fields["title"] or fields["url"]
        state.sources.setdefault(url, fields["title"] or url)
        report.append({"url": url, "status": "completed", "title": fields["title"], "truncated": fields["truncated"]})
    fetched = sum(1 for entry in report if entry["status"] == "completed")
    ctx.pipeline.append({**stage, "summary": f"{fetched} of {len(urls)} page(s) fetched", "data": {"pages": report}})
    return Decimal(0)


register(Plugin(id="web-fetch", check=_check, run=_run))
