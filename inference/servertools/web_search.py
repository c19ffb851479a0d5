"""`service:web_search`: the model searches the web through the gateway's search engine.

Tool object: `{"type": "service:web_search", "parameters": {"max_results": 1..20 (default 5), "engine":
"searxng" | "brave"}}` (`parameters` and its fields optional). The model sees a function `web_search(query)`;
each call runs one engine query and returns titles, URLs and snippets, which the model is asked to cite as
markdown links (they become `url_citation` annotations). The engine's price per query is added to the cost.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from gateway_project.api.errors import validation_error
from inference.search.base import SearchError, SearchResult
from inference.search.engines import ENGINE_NAMES, engine_for
from inference.servertools.registry import ServerTool, ToolResult, register

DEFAULT_MAX_RESULTS = 5
MAX_RESULTS = 20
KIND = "service:web_search"


def check_search_options(name: str, options: dict[str, Any], allowed: frozenset[str]) -> None:
    """`max_results` (1..20) and `engine` (a known engine name); any other key is refused."""
    for key in options:
        if key not in allowed:
            raise validation_error(f"{name}.{key}", "unknown parameter")
    max_results = options.get("max_results")
    if max_results is not None and (
        isinstance(max_results, bool) or not isinstance(max_results, int) or not 1 <= max_results <= MAX_RESULTS
    ):
        raise validation_error(f"{name}.max_results", f"must be an integer from 1 to {MAX_RESULTS}")
    engine = options.get("engine")
    if engine is not None and engine not in ENGINE_NAMES:
        raise validation_error(f"{name}.engine", f"must be one of {', '.join(ENGINE_NAMES)}")


def _check(name: str, tool: dict[str, Any]) -> None:
    for key in tool:
        if key not in ("type", "parameters"):
            raise validation_error(f"{name}.{key}", "unknown parameter")
    options = tool.get("parameters")
    if options is None:
        return
    if not isinstance(options, dict):
        raise validation_error(f"{name}.parameters", "must be an object")
    check_search_options(f"{name}.parameters", options, frozenset({"max_results", "engine"}))


def _options(tool: dict[str, Any]) -> dict[str, Any]:
    return tool.get("parameters") or {}


def _ready(ctx: Any, tool: dict[str, Any], field: str) -> None:
    engine_for(ctx, _options(tool).get("engine"), field, KIND, f"{field}.parameters.engine")


def _definition(tool: dict[str, Any], loop: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "name": "web_search",
        "description": (
            "Search the web for current information. Returns the titles, URLs and snippets of the top results. "
            "Cite the results you use as markdown links, e.g. [example.com](https://example.com/page)."
        ),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to search for"}},
            "required": ["query"],
            "additionalProperties": False,
        },
    }


def format_results(query: str, results: list[SearchResult], engine: str) -> str:
    """The results as the model reads them."""
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    if not results:
        return f'No web results for "{query}" ({engine}, {today}).'
    lines = [f'Web search results for "{query}" ({engine}, {today}):']
    for position, result in enumerate(results, 1):
        lines.append(f"[{position}] {result.title}\nURL: {result.url}")
        if result.published:
            lines.append(f"Published: {result.published}")
        if result.snippet:
            lines.append(result.snippet)
    return "\n".join(lines)


async def search(ctx: Any, query: str, options: dict[str, Any], label: str) -> tuple[list[SearchResult], Any]:
    engine = engine_for(ctx, options.get("engine"), label, label)
    results = await engine.search(query, options.get("max_results") or DEFAULT_MAX_RESULTS)
    return results, engine


async def _run(ctx: Any, tool: dict[str, Any], arguments: dict[str, Any], loop: Any) -> ToolResult:
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        return ToolResult(output="Error: `query` must be a non-empty string.", status="failed")
    try:
        results, engine = await search(ctx, query, _options(tool), KIND)
    except SearchError as error:
        return ToolResult(output=f"Error: the web search failed: {error}", status="failed")
    sources = {r.url: r.title for r in results}
    fields = {
        "engine": engine.name,
        "action": {
            "type": "search",
            "query": query,
            "sources": [{"type": "url", "url": r.url, "title": r.title} for r in results],
        },
    }
    output = format_results(query, results, engine.name)
    return ToolResult(output=output, fields=fields, fee=engine.config.price_per_query, sources=sources)


def _max_fee(ctx: Any, tool: dict[str, Any]) -> Decimal:
    try:
        return engine_for(ctx, _options(tool).get("engine"), KIND, KIND).config.price_per_query
    except Exception:
        return Decimal(0)


register(
    ServerTool(
        kind=KIND,
        function_name="web_search",
        item_prefix="ws",
        check=_check,
        definition=_definition,
        started=lambda arguments: {"action": {"type": "search", "query": str(arguments.get("query", ""))}},
        run=_run,
        max_fee=_max_fee,
        ready=_ready,
    )
)
