"""Which search engine serves a request: configured in settings, chosen per workspace or by default.

Engines: `searxng` (configured when GATEWAY_SEARXNG_URL is set), `brave` (GATEWAY_BRAVE_SEARCH_API_KEY) and
`tavily` (GATEWAY_TAVILY_API_KEY).
Choice, first that applies: the request's `engine` (must be configured), the workspace's entry in
GATEWAY_WEB_SEARCH_WORKSPACE_ENGINES (`none` switches search off for it), GATEWAY_WEB_SEARCH_ENGINE, the only
configured engine. No engine → 400 naming the tool or plugin that needs one.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings

from gateway_project.api.errors import GatewayError, validation_error
from inference.search.base import EngineConfig, SearchEngine
from inference.search.brave import BraveEngine
from inference.search.searxng import SearxngEngine
from inference.search.tavily import TavilyEngine

ENGINE_NAMES = ("searxng", "brave", "tavily")


def _price(value: str) -> Decimal:
    try:
        return max(Decimal(value or "0"), Decimal(0))
    except InvalidOperation:
        return Decimal(0)


def configured_engines() -> dict[str, SearchEngine]:
    engines: dict[str, SearchEngine] = {}
    timeout = settings.GATEWAY_WEB_SEARCH_TIMEOUT
    if settings.GATEWAY_SEARXNG_URL:
        config = EngineConfig(
            name="searxng",
            url=settings.GATEWAY_SEARXNG_URL,
            api_key=settings.GATEWAY_SEARXNG_API_KEY,
            price_per_query=_price(settings.GATEWAY_SEARXNG_PRICE_PER_QUERY),
            timeout=timeout,
        )
        engines["searxng"] = SearxngEngine(config)
    if settings.GATEWAY_BRAVE_SEARCH_API_KEY:
        config = EngineConfig(
            name="brave",
            url=settings.GATEWAY_BRAVE_SEARCH_URL,
            api_key=settings.GATEWAY_BRAVE_SEARCH_API_KEY,
            price_per_query=_price(settings.GATEWAY_BRAVE_SEARCH_PRICE_PER_QUERY),
            timeout=timeout,
        )
        engines["brave"] = BraveEngine(config)
    if settings.GATEWAY_TAVILY_API_KEY:
        config = EngineConfig(
            name="tavily",
            url=settings.GATEWAY_TAVILY_SEARCH_URL,
            api_key=settings.GATEWAY_TAVILY_API_KEY,
            price_per_query=_price(settings.GATEWAY_TAVILY_PRICE_PER_QUERY),
            timeout=timeout,
        )
        engines["tavily"] = TavilyEngine(config)
    return engines


def _no_engine(field: str, label: str, why: str) -> GatewayError:
    return GatewayError(400, f"{field}: {label} needs a web search engine, and {why}", metadata={"field": field})


def engine_for(ctx: Any, requested: str | None, field: str, label: str, engine_field: str = "") -> SearchEngine:
    """The engine serving `label` (e.g. `service:web_search` at `field` `tools[1]`) for this request.

    400 naming `field` (or `engine_field` for a requested engine that is not configured) when there is none.
    """
    engines = configured_engines()
    if requested:
        if requested not in engines:
            raise validation_error(engine_field or field, f"search engine '{requested}' is not configured here")
        return engines[requested]
    workspace = str(ctx.principal.workspace_id) if ctx.principal is not None else ""
    chosen = settings.GATEWAY_WEB_SEARCH_WORKSPACE_ENGINES.get(workspace) or settings.GATEWAY_WEB_SEARCH_ENGINE
    if chosen == "none":
        raise _no_engine(field, label, "web search is switched off for this workspace")
    if chosen:
        if chosen not in engines:
            raise _no_engine(field, label, f"the engine '{chosen}' chosen for it is not configured")
        return engines[chosen]
    if len(engines) == 1:
        return next(iter(engines.values()))
    if not engines:
        raise _no_engine(field, label, "none is configured on this gateway")
    raise _no_engine(field, label, "several are configured and GATEWAY_WEB_SEARCH_ENGINE does not choose one")
