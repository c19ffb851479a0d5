"""Builds the inference middleware chain from settings.GATEWAY_INFERENCE_MIDDLEWARE (outermost first)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from django.conf import settings
from django.utils.module_loading import import_string

from gateway_project.pipeline import admitted
from inference.pipeline.context import Context

Handler = Callable[[Context], Awaitable[None]]


def build_chain(
    innermost: Handler, middleware_paths: list[str] | None = None, *, gates_admission: bool = False
) -> Handler:
    """Wrap `innermost` in every configured middleware; the first path listed runs first. `gates_admission`:
    `innermost` awaits the admission checks sent ahead itself, before its upstream call (inference.handler.handle
    does, so the spend hold and the rate-limit check travel while it prepares that call); otherwise they are
    awaited before it runs."""
    paths = settings.GATEWAY_INFERENCE_MIDDLEWARE if middleware_paths is None else middleware_paths

    async def after_admission(ctx: Context) -> None:
        # A handler whose upstream calls carry no gate (/embeddings, the token count): the admission checks still
        # pending are awaited here, before it can call out or answer.
        if ctx.admission is not None:
            await admitted(ctx)
        await innermost(ctx)

    handler: Handler = innermost if gates_admission else after_admission
    for path in reversed(paths):
        handler = import_string(path)(handler)
    return handler
