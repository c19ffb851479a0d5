"""Data-plane use of presets: `model: "@preset/<slug>"` in POST /responses applies the preset.

Runs after KeyAuth and Region, before Guardrail: guardrails, budgets and routing then see the merged
request (the preset's model and parameters), exactly as if the client had sent them.
"""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import GatewayError
from gateway_project.db_deadline import db_reader
from gateway_project.policy_cache import PolicyCache
from inference.pipeline.context import Context
from presets.models import PresetStatus
from presets.selectors import PresetSnapshot, preset_snapshot

PREFIX = "@preset/"

_presets = PolicyCache("presets")
_load_snapshot = db_reader(preset_snapshot)


def merge_preset(body: dict[str, Any], snapshot: PresetSnapshot) -> dict[str, Any]:
    """The request with the preset applied: the preset's fields under the request's (request fields win).

    `model` is the preset's (the request's is the `@preset/...` reference). The system prompt becomes
    `instructions` unless the request sent non-null `instructions`. Fields merge at the top level: a request
    field replaces the preset's value of that field whole.
    """
    merged = snapshot.fields()
    for name, value in body.items():
        if name != "model":
            merged[name] = value
    if snapshot.model:
        merged["model"] = snapshot.model
    else:
        merged.pop("model", None)
    if snapshot.system_prompt and body.get("instructions") is None:
        merged["instructions"] = snapshot.system_prompt
    return merged


async def load_preset(ctx: Context, slug: str) -> PresetSnapshot:
    """The usable preset `slug` of the caller's organization: 404 when unknown, 400 when not active."""
    organization_id = ctx.principal.organization_id
    snapshot = await _presets.get(
        ctx.policy_version,
        (organization_id, slug),
        lambda: _load_snapshot(organization_id, slug),
        scope=organization_id,
    )
    if snapshot is None:
        raise GatewayError(404, f"Preset '{slug}' not found")
    if snapshot.status != PresetStatus.ACTIVE:
        raise GatewayError(400, f"Preset '{slug}' is {snapshot.status}", metadata={"field": "model"})
    if snapshot.version is None:
        raise GatewayError(400, f"Preset '{slug}' has no version", metadata={"field": "model"})
    return snapshot


class PresetMiddleware:
    """`@preset/<slug>` → ctx.body merged with the designated version, ctx.preset set (a PresetSnapshot), and a
    `preset` stage added to ctx.pipeline (shown in `service_metadata.pipeline`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    async def __call__(self, ctx: Context) -> None:
        model = ctx.body.get("model")
        if isinstance(model, str) and model.startswith(PREFIX):
            snapshot = await load_preset(ctx, model[len(PREFIX) :])
            ctx.body = merge_preset(ctx.body, snapshot)
            ctx.preset = snapshot
            ctx.pipeline.append(snapshot.pipeline_stage())
        await self.get_response(ctx)
