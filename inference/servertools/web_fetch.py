"""`service:web_fetch`: the model fetches a web page through the gateway and reads its text.

Tool object: `{"type": "service:web_fetch", "parameters": {"max_chars": 100..GATEWAY_WEB_FETCH_MAX_CHARS}}`
(optional). The model sees a function `web_fetch(url)`; each call fetches the URL through the SSRF guard
(inference.web.fetch: no private addresses, no redirects to them, size and time limits) and gives the model
the page's title and readable text (inference.web.readable), cut at `max_chars` characters. No fee.

Fan-out: one model turn makes at most `GATEWAY_WEB_FETCH_MAX_CALLS_PER_TURN` fetches and one request at most
`GATEWAY_WEB_FETCH_MAX_CALLS_PER_REQUEST` (all turns); a call past a cap is not fetched and the model reads an
error result saying so (the item is `failed`). At most `GATEWAY_WEB_FETCH_CONCURRENCY` fetches of a request
run at once; the others wait their turn.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from gateway_project.api.errors import validation_error
from inference.servertools.registry import ServerTool, ToolResult, register
from inference.web.fetch import FetchError, fetch
from inference.web.readable import readable

KIND = "service:web_fetch"
MIN_CHARS = 100


def _check(name: str, tool: dict[str, Any]) -> None:
    for key in tool:
        if key not in ("type", "parameters"):
            raise validation_error(f"{name}.{key}", "unknown parameter")
    options = tool.get("parameters")
    if options is None:
        return
    if not isinstance(options, dict):
        raise validation_error(f"{name}.parameters", "must be an object")
    for key in options:
        if key != "max_chars":
            raise validation_error(f"{name}.parameters.{key}", "unknown parameter")
    check_max_chars(f"{name}.parameters.max_chars", options.get("max_chars"))


def check_max_chars(name: str, value: Any) -> None:
    limit = settings.GATEWAY_WEB_FETCH_MAX_CHARS
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not MIN_CHARS <= value <= limit):
        raise validation_error(name, f"must be an integer from {MIN_CHARS} to {limit}")


def _definition(tool: dict[str, Any], loop: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "name": "web_fetch",
        "description": "Fetch a web page (http or https URL) and read its text. Cite it as a markdown link.",
        "parameters": {
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The page's full URL"}},
            "required": ["url"],
            "additionalProperties": False,
        },
    }


async def read_page(url: str, max_chars: int) -> tuple[dict[str, Any], str]:
    """(item fields, text for the model) of one page; FetchError when it cannot be read."""
    page = await fetch(url)
    if page.status >= 400:
        raise FetchError(f"the page answered HTTP {page.status}")
    try:
        title, text = readable(page.body, page.content_type, page.charset)
    except ValueError as error:
        raise FetchError(str(error)) from None
    cut = len(text) > max_chars or page.truncated
    text = text[:max_chars]
    fields = {"url": page.url, "title": title, "truncated": cut}
    heading = f"Title: {title}\nURL: {page.url}\n\n" if title else f"URL: {page.url}\n\n"
    return fields, heading + text + ("\n[... cut]" if cut else "")


@dataclass(slots=True)
class Fanout:
    """The fetches of one request: counted per turn and in all, run at most `concurrency` at once."""

    gate: asyncio.Semaphore
    turn: int = -1
    in_turn: int = 0
    total: int = 0

    def refusal(self, turn: int) -> str | None:
        """Why one more fetch is not made now, or None (then it is counted)."""
        if turn != self.turn:
            self.turn, self.in_turn = turn, 0
        per_turn, per_request = (
            settings.GATEWAY_WEB_FETCH_MAX_CALLS_PER_TURN,
            settings.GATEWAY_WEB_FETCH_MAX_CALLS_PER_REQUEST,
        )
        if self.in_turn >= per_turn:
            return f"at most {per_turn} web_fetch calls per turn; this one was not made (fetch fewer pages at once)"
        if self.total >= per_request:
            return f"at most {per_request} web_fetch calls per request; this one was not made"
        self.in_turn += 1
        self.total += 1
        return None


def _fanout(loop: Any) -> Fanout:
    fanout = loop.tools.get(KIND)
    if fanout is None:
        fanout = loop.tools[KIND] = Fanout(asyncio.Semaphore(max(1, settings.GATEWAY_WEB_FETCH_CONCURRENCY)))
    return fanout


async def _run(ctx: Any, tool: dict[str, Any], arguments: dict[str, Any], loop: Any) -> ToolResult:
    url = arguments.get("url")
    if not isinstance(url, str) or not url.strip():
        return ToolResult(output="Error: `url` must be a non-empty string.", status="failed")
    fanout = _fanout(loop)
    refused = fanout.refusal(loop.turns)
    if refused is not None:
        return ToolResult(
            output=f"Error: {url} was not fetched: {refused}.", status="failed", fields={"error": refused}
        )
    max_chars = (tool.get("parameters") or {}).get("max_chars") or settings.GATEWAY_WEB_FETCH_MAX_CHARS
    try:
        async with fanout.gate:
            fields, output = await read_page(url.strip(), max_chars)
    except FetchError as error:
        return ToolResult(
            output=f"Error: {url} could not be fetched: {error}", status="failed", fields={"error": str(error)}
        )
    sources = {fields["url"]: fields["title"] or fields["url"]}
    if url.strip() != fields["url"]:
        sources[url.strip()] = fields["title"] or url.strip()
    return ToolResult(output=output, fields=fields, sources=sources)


register(
    ServerTool(
        kind=KIND,
        function_name="web_fetch",
        item_prefix="wf",
        check=_check,
        definition=_definition,
        started=lambda arguments: {"action": {"type": "open_page", "url": str(arguments.get("url", ""))}},
        run=_run,
    )
)
