"""The `web` plugin: search the web with the last user message and add the results to the prompt.

Plugin object: `{"id": "web", "max_results": 1..20 (default 5), "search_prompt": string, "engine": "searxng" |
"brave"}` (all optional). Before the first turn the gateway sends the text of the last user message (its
first 400 characters) to the search engine chosen as for `service:web_search` (docs/server-tools.md), and puts
a system message right above that user message: the search prompt, then the numbered results (title, URL,
snippet). The default prompt asks the model to cite its sources as markdown links; citations of the results
become `url_citation` annotations. The engine's price per query is added to the cost. A failing engine fails
the request with 502 before the model is called (nothing is charged).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from gateway_project.api.errors import GatewayError, validation_error
from inference.plugins.context import field_of, insert_before_last_user, last_user_text
from inference.plugins.registry import Plugin, register
from inference.search.base import SearchError
from inference.search.engines import engine_for
from inference.servertools.web_search import check_search_options, format_results, search

MAX_QUERY_CHARS = 400
FIELDS = frozenset({"id", "enabled", "max_results", "search_prompt", "engine"})


def default_prompt() -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"A web search was conducted on {now}. Incorporate the following web search results into your response. "
        "IMPORTANT: Cite them using markdown links named using the domain of the source. "
        "Example: [nytimes.com](https://nytimes.com/some-page)."
    )


def _check(name: str, plugin: dict[str, Any]) -> None:
    options = {k: v for k, v in plugin.items() if k not in ("id", "enabled", "search_prompt")}
    check_search_options(name, options, FIELDS)
    prompt = plugin.get("search_prompt")
    if prompt is not None and (not isinstance(prompt, str) or len(prompt) > 4000):
        raise validation_error(f"{name}.search_prompt", "must be a string of at most 4000 characters")


def _ready(ctx: Any, plugin: dict[str, Any], field: str) -> None:
    engine_for(ctx, plugin.get("engine"), field, "the web plugin", f"{field}.engine")


def _max_fee(ctx: Any, plugin: dict[str, Any]) -> Decimal:
    field = field_of(ctx, plugin)
    return engine_for(ctx, plugin.get("engine"), field, "the web plugin").config.price_per_query


async def _run(ctx: Any, plugin: dict[str, Any], state: Any) -> Decimal:
    _, query = last_user_text(state.input)
    query = " ".join(query.split())[:MAX_QUERY_CHARS]
    stage: dict[str, Any] = {"type": "plugin", "name": "web"}
    if not query:
        ctx.pipeline.append({**stage, "summary": "no user text to search for", "data": {"results": 0}})
        return Decimal(0)
    try:
        results, engine = await search(ctx, query, plugin, "the web plugin")
    except SearchError as error:
        raise GatewayError(502, f"The web plugin's search failed: {error}", metadata={"field": field_of(ctx, plugin)})
    text = format_results(query, results, engine.name)
    insert_before_last_user(state.input, f"{plugin.get('search_prompt') or default_prompt()}\n\n{text}")
    state.sources.update({r.url: r.title for r in results})
    ctx.pipeline.append(
        {
            **stage,
            "summary": f"{len(results)} result(s) from {engine.name}",
            "data": {"engine": engine.name, "query": query, "results": [r.url for r in results]},
        }
    )
    return engine.config.price_per_query


register(Plugin(id="web", check=_check, run=_run, max_fee=_max_fee, ready=_ready))
