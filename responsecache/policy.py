"""Whether a request uses the response cache, and for how long: the request's headers over its workspace's
setting (docs/cache.md). Every wrong value is a 400 naming the header."""

from __future__ import annotations

from django.conf import settings

from gateway_project.api.errors import validation_error
from inference.pipeline.context import Context

HEADER = "x-service-cache"
TTL_HEADER = "x-service-cache-ttl"
HEADER_NAME = "X-Service-Cache"
TTL_HEADER_NAME = "X-Service-Cache-TTL"


def cache_ttl(ctx: Context) -> int | None:
    """The TTL (seconds) when this request uses the cache, None when it does not."""
    value = ctx.headers.get(HEADER)
    if value is None:
        enabled = ctx.principal.response_cache
    else:
        choice = value.strip().lower()
        if choice not in ("enabled", "disabled"):
            raise validation_error(HEADER_NAME, "must be enabled or disabled")
        enabled = choice == "enabled"
    ttl_value = ctx.headers.get(TTL_HEADER)
    if ttl_value is None:
        return (
            min(settings.GATEWAY_RESPONSE_CACHE_DEFAULT_TTL, settings.GATEWAY_RESPONSE_CACHE_MAX_TTL)
            if enabled
            else None
        )
    if not enabled:
        raise validation_error(
            TTL_HEADER_NAME, "applies only with the response cache on (X-Service-Cache: enabled, or the workspace's)"
        )
    maximum = settings.GATEWAY_RESPONSE_CACHE_MAX_TTL
    text = ttl_value.strip()
    if not text.isdigit() or not 1 <= int(text) <= maximum:
        raise validation_error(TTL_HEADER_NAME, f"must be a whole number of seconds from 1 to {maximum}")
    return int(text)


def uncacheable_reason(ctx: Context) -> str | None:
    """Why this request's answer cannot come from the cache (None: it can)."""
    from inference.servertools.registry import is_server_tool

    body = ctx.body
    if (body.get("debug") or {}).get("echo_upstream_body"):
        return "debug.echo_upstream_body shows the upstream request, which a cached answer does not make"
    live = "plugins and server tools run live (their results change over time)"
    if body.get("plugins"):
        return live
    tools = body.get("tools")
    if isinstance(tools, list) and any(is_server_tool(tool) for tool in tools):
        return live
    if isinstance(body.get("input"), list) and b"service:" in ctx.raw_body:  # server-tool items in the input
        return live
    return None
