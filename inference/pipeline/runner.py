"""Builds the inference middleware chain from settings.GATEWAY_INFERENCE_MIDDLEWARE (outermost first)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from django.conf import settings
from django.utils.module_loading import import_string

from inference.pipeline.context import Context

Handler = Callable[[Context], Awaitable[None]]


def build_chain(innermost: Handler, middleware_paths: list[str] | None = None) -> Handler:
    """Wrap `innermost` in every configured middleware; the first path listed runs first."""
    paths = settings.GATEWAY_INFERENCE_MIDDLEWARE if middleware_paths is None else middleware_paths
    handler: Handler = innermost
    for path in reversed(paths):
        handler = import_string(path)(handler)
    return handler
