"""The `moderation` plugin: the input (and, on request, the output) screened before the client is served.

Plugin object: `{"id": "moderation", "detectors": [built-in detector slugs], "check_output": bool}` (all
optional; default detectors `["regex-prompt-injection"]`, `check_output` false). The user messages and tool
outputs of the conversation are screened by the built-in guardrail detectors (textscan.detectors) and, when
the catalog has a moderation model (output modality `moderation`: GATEWAY_MODERATION_MODEL, else the first
one by slug), by its OpenAI-compatible `POST /moderations`. Anything flagged is a 403 before the model is
called, with the categories in `error.metadata` (as a guardrail refusal). `check_output` screens the answer
the same way after the last turn (JSON answers only: with `stream: true` it is a 400).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gateway_project.api.errors import GatewayError, validation_error
from inference.plugins.moderation_endpoint import EndpointVerdict, call_endpoint, moderation_candidate
from inference.plugins.registry import Plugin, register
from textscan.detectors import BUILTIN_SLUGS, detect
from textscan.texts import request_texts

DEFAULT_DETECTORS = ("regex-prompt-injection",)
SCREENED_ROLES = ("user", "tool")
EXCERPT = 100


def _check(name: str, plugin: dict[str, Any]) -> None:
    for key in plugin:
        if key not in ("id", "enabled", "detectors", "check_output"):
            raise validation_error(f"{name}.{key}", "unknown parameter")
    detectors = plugin.get("detectors")
    if detectors is not None and (
        not isinstance(detectors, list) or not all(isinstance(d, str) and d in BUILTIN_SLUGS for d in detectors)
    ):
        raise validation_error(f"{name}.detectors", f"must be a list of {', '.join(BUILTIN_SLUGS)}")
    if plugin.get("check_output") is not None and not isinstance(plugin.get("check_output"), bool):
        raise validation_error(f"{name}.check_output", "must be a boolean")


def _detectors(plugin: dict[str, Any]) -> list[str]:
    detectors = plugin.get("detectors")
    return list(dict.fromkeys(DEFAULT_DETECTORS if detectors is None else detectors))


def _ready(ctx: Any, plugin: dict[str, Any], field: str) -> None:
    if plugin.get("check_output") and ctx.stream:
        raise validation_error(
            f"{field}.check_output",
            "cannot be combined with stream: true (the answer reaches the client before it could be screened)",
        )


def _screen_detectors(texts: list[str], detectors: list[str]) -> tuple[list[str], str | None]:
    flagged: list[str] = []
    excerpt = None
    for text in texts:
        for slug in detectors:
            if slug not in flagged and detect(slug, text):
                flagged.append(slug)
                excerpt = excerpt or text[:EXCERPT]
    return flagged, excerpt


async def _screen(ctx: Any, plugin: dict[str, Any], texts: list[str], what: str) -> None:
    """Screen `texts`; a 403 when anything is flagged."""
    detectors = _detectors(plugin)
    texts = [t for t in texts if t.strip()]
    categories, excerpt = _screen_detectors(texts, detectors)
    candidate = await moderation_candidate(ctx)
    verdict = EndpointVerdict()
    if candidate is not None and texts:
        verdict = await call_endpoint(ctx, candidate, texts)
        categories += [c for c in verdict.categories if c not in categories]
        excerpt = excerpt or verdict.excerpt
    data: dict[str, Any] = {
        "checked": what,
        "texts": len(texts),
        "detectors": detectors,
        "endpoint": candidate.model_slug if candidate is not None else None,
        "flagged": bool(categories),
        "categories": categories,
    }
    summary = f"{what} flagged for {', '.join(categories)}" if categories else f"{what} passed"
    ctx.pipeline.append({"type": "plugin", "name": "moderation", "summary": summary, "data": data})
    if categories:
        metadata: dict[str, Any] = {"categories": categories, "flagged": what, "flagged_input": excerpt}
        if verdict.categories and candidate is not None:
            metadata.update(provider_name=candidate.provider_slug, model_slug=candidate.model_slug)
        noun = "Request" if what == "input" else "Response"
        raise GatewayError(403, f"{noun} blocked by the moderation plugin: flagged for {', '.join(categories)}",
                           metadata=metadata)  # fmt: skip


def _input_texts(items: list[dict[str, Any]]) -> list[str]:
    return [slot.text for slot in request_texts({"input": items}) if slot.role in SCREENED_ROLES]


async def _run(ctx: Any, plugin: dict[str, Any], state: Any) -> Decimal:
    await _screen(ctx, plugin, _input_texts(state.input), "input")
    return Decimal(0)  # moderation models are free (the catalog refuses a priced one)


async def _finish(ctx: Any, plugin: dict[str, Any], state: Any) -> None:
    if not plugin.get("check_output"):
        return
    texts = [
        p.get("text", "")
        for item in state.output
        if item.get("type") == "message"
        for p in item.get("content") or ()
        if p.get("type") == "output_text"
    ]
    await _screen(ctx, plugin, texts, "output")


register(Plugin(id="moderation", check=_check, run=_run, ready=_ready, finish=_finish))
