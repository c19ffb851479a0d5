"""PresetMiddleware in the inference chain: `model: "@preset/<slug>"` applies the designated version."""

import time
import uuid
from datetime import UTC, datetime

import pytest
from asgiref.sync import sync_to_async

from gateway_project.api.errors import GatewayError
from inference.ingress import messages_request
from inference.pipeline.context import Context
from inference.pipeline.runner import build_chain
from presets import services
from presets.models import Preset

CHAIN = ["accounts.middleware.KeyAuthMiddleware", "presets.middleware.PresetMiddleware"]

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
async def _close_thread_connections():
    """Close the connection the middleware's loaders opened in asgiref's thread, so the test DB can be dropped."""
    yield
    from django.db import connections

    await sync_to_async(connections.close_all)()


async def run_chain(key: str, body: dict) -> Context:
    """Run KeyAuth + Preset around an innermost handler that records what it was given."""
    seen: list[Context] = []

    async def innermost(ctx: Context) -> None:
        seen.append(ctx)

    ctx = Context(
        request_id=str(uuid.uuid4()),
        created_at=datetime.now(UTC),
        started=time.perf_counter(),
        method="POST",
        path="/api/v1/responses",
        host="testserver",
        headers={"authorization": f"Bearer {key}"},
        raw_body=b"",
        body=dict(body),
    )
    await build_chain(innermost, CHAIN)(ctx)
    assert seen == [ctx]
    return ctx


def _post(org, slug: str, kind: str, body: dict) -> dict:
    response = org.client().post(f"/api/v1/presets/{slug}/{kind}", body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["data"]


post = sync_to_async(_post)


async def test_preset_config_and_system_prompt_apply(org):
    await post(org, "p", "responses", {"model": "openai/gpt-4o-mini", "instructions": "Be terse.", "temperature": 0.1})
    ctx = await run_chain(org.inference_key, {"model": "@preset/p", "input": "hi"})
    assert ctx.body == {
        "model": "openai/gpt-4o-mini",
        "temperature": 0.1,
        "instructions": "Be terse.",
        "input": "hi",
    }
    assert ctx.preset.slug == "p" and ctx.preset.version == 1


async def test_request_fields_override_the_preset(org):
    await post(org, "p", "responses", {"model": "a/m", "instructions": "Preset.", "temperature": 0.1, "top_p": 0.5})
    body = {"model": "@preset/p", "input": "hi", "temperature": 0.9, "instructions": "Mine."}
    ctx = await run_chain(org.inference_key, body)
    assert ctx.body["temperature"] == 0.9
    assert ctx.body["instructions"] == "Mine."
    assert ctx.body["top_p"] == 0.5
    assert ctx.body["model"] == "a/m"
    # null instructions count as not sent: the preset's system prompt applies
    ctx = await run_chain(org.inference_key, {"model": "@preset/p", "input": "hi", "instructions": None})
    assert ctx.body["instructions"] == "Preset."


async def test_a_models_only_preset_routes_through_its_models(org):
    await post(org, "multi", "responses", {"models": ["a/one", "b/two"]})
    ctx = await run_chain(org.inference_key, {"model": "@preset/multi", "input": "hi"})
    assert "model" not in ctx.body
    assert ctx.body["models"] == ["a/one", "b/two"]


async def test_messages_preset_maps_to_responses_fields(org):
    body = {
        "model": "anthropic/claude",
        "system": "From messages.",
        "max_tokens": 64,
        "fallbacks": [{"model": "openai/gpt-4o-mini"}, {"model": "x/y"}],
        "speed": "fast",
        "output_config": {"effort": "low", "format": {"type": "json_schema", "schema": {"type": "object"}}},
        "tools": [{"name": "lookup", "description": "Find.", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "top_k": 5,
    }
    await post(org, "msg", "messages", body)
    ctx = await run_chain(org.inference_key, {"model": "@preset/msg", "input": "hi"})
    assert ctx.body == {
        "model": "anthropic/claude",
        "models": ["anthropic/claude", "openai/gpt-4o-mini", "x/y"],
        "max_output_tokens": 64,
        "service_tier": "fast",  # as /messages maps speed: fast (the same converter)
        "reasoning": {"effort": "low"},
        "anthropic_output_config": body["output_config"],  # Anthropic-format endpoints get it as sent
        "text": {"format": {"type": "json_schema", "name": "output", "strict": True, "schema": {"type": "object"}}},
        "tools": [{"type": "function", "name": "lookup", "description": "Find.", "parameters": {"type": "object"}}],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "top_k": 5,
        "instructions": "From messages.",
        "input": "hi",
    }


async def test_a_messages_preset_means_what_the_same_body_means_on_messages(org):
    """One converter: the preset's fields are what POST /messages makes of the same members."""
    body = {
        "model": "anthropic/claude",
        "max_tokens": 64,
        "speed": "fast",
        "temperature": 0.7,
        "tools": [{"type": "web_search_20250305", "name": "web_search"}, {"name": "f", "input_schema": {}}],
        "tool_choice": {"type": "tool", "name": "f"},
        "cache_control": {"type": "ephemeral"},
    }
    await post(org, "same", "messages", body)
    ctx = await run_chain(org.inference_key, {"model": "@preset/same", "input": "hi"})
    live = messages_request.to_canonical({**body, "messages": [{"role": "user", "content": "hi"}]})
    del live["input"], ctx.body["input"]
    assert ctx.body == live
    assert live["service_tier"] == "fast" and live["tools"][0] == {"type": "service:web_search"}


async def test_standard_speed_leaves_the_default_tier(org):
    await post(
        org, "std", "messages", {"model": "a/b", "speed": "standard", "tool_choice": {"type": "tool", "name": "f"}}
    )
    ctx = await run_chain(org.inference_key, {"model": "@preset/std", "input": "hi"})
    assert "service_tier" not in ctx.body
    assert ctx.body["tool_choice"] == {"type": "function", "name": "f"}


async def test_unknown_preset_is_404_and_another_orgs_preset_is_unknown(org, other_org):
    await post(other_org, "theirs", "responses", {"model": "a/b"})
    for slug in ("nope", "theirs"):
        with pytest.raises(GatewayError) as caught:
            await run_chain(org.inference_key, {"model": f"@preset/{slug}", "input": "hi"})
        assert caught.value.status == 404
        assert slug in caught.value.message


@pytest.mark.parametrize("status", ["disabled", "archived"])
async def test_disabled_or_archived_preset_is_400(org, status):
    await post(org, "off", "responses", {"model": "a/b"})
    assert (await run_chain(org.inference_key, {"model": "@preset/off", "input": "hi"})).body["model"] == "a/b"
    preset = await Preset.objects.aget(slug="off")
    await sync_to_async(services.preset_status_set)(preset=preset, status=status)
    with pytest.raises(GatewayError) as caught:
        await run_chain(org.inference_key, {"model": "@preset/off", "input": "hi"})
    assert caught.value.status == 400
    assert caught.value.message == f"Preset 'off' is {status}"
    await sync_to_async(services.preset_status_set)(preset=preset, status="active")
    assert (await run_chain(org.inference_key, {"model": "@preset/off", "input": "hi"})).body["model"] == "a/b"


async def test_a_new_version_applies_to_the_next_request(org):
    await post(org, "live", "responses", {"model": "a/one"})
    assert (await run_chain(org.inference_key, {"model": "@preset/live", "input": "x"})).body["model"] == "a/one"
    await post(org, "live", "messages", {"model": "a/two", "system": "v2"})
    ctx = await run_chain(org.inference_key, {"model": "@preset/live", "input": "x"})
    assert ctx.body["model"] == "a/two" and ctx.body["instructions"] == "v2"
    assert ctx.preset.version == 2


async def test_requests_without_a_preset_pass_untouched(org):
    body = {"model": "openai/gpt-4o-mini", "input": "hi", "temperature": 1}
    ctx = await run_chain(org.inference_key, body)
    assert ctx.body == body and ctx.preset is None


async def test_a_later_stage_changing_the_request_does_not_change_the_cached_preset(org):
    await post(org, "deep", "responses", {"model": "a/m", "provider": {"order": ["x"]}, "tools": []})
    first = await run_chain(org.inference_key, {"model": "@preset/deep", "input": "hi"})
    first.body["provider"]["order"].append("injected")
    first.body["tools"].append({"type": "function", "name": "f"})
    second = await run_chain(org.inference_key, {"model": "@preset/deep", "input": "hi"})
    assert second.body["provider"] == {"order": ["x"]} and second.body["tools"] == []


def test_bench_presets_command_reports_both_cases():
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("bench_presets", "--requests", "200", stdout=out)
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["@preset/<slug> request", "plain request"]
    assert all(line.endswith("us added per request") for line in lines)
