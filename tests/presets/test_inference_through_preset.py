"""Inference through a preset, end to end: the real loopback gateway and the fake upstream provider.

The upstream receives the preset's model, parameters and system prompt; a field sent in the request wins.
"""

from __future__ import annotations

import httpx
import orjson
import pytest

from tests.inference.conftest import add_endpoint, generations, wait_idle

KEY_ENV = "PRESETS_FAKE_UPSTREAM_KEY"


@pytest.fixture
def catalog(transactional_db, fake_upstream, monkeypatch):
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv(KEY_ENV, "sk-fake-presets")
    base = {"base_url": fake_upstream.base_url, "api_key_env": KEY_ENV}
    add_endpoint("fakeai/chat", "fakeai", api_format="openai-responses", upstream_model="up-chat", **base)
    add_endpoint("fakeai/broken", "fakeai", api_format="openai-responses", upstream_model="fail-500", **base)
    add_endpoint(
        "fakeanthropic/claude", "fakeanthropic", api_format="anthropic-messages", upstream_model="up-claude", **base
    )
    return fake_upstream


@pytest.fixture
def http(gateway_server, org, catalog):
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}, timeout=30
    ) as client:
        yield client
    wait_idle()


def create(org, slug: str, kind: str, body: dict) -> dict:
    response = org.client().post(f"/api/v1/presets/{slug}/{kind}", body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["data"]


RESPONSES_PRESET = {
    "model": "fakeai/chat",
    "instructions": "You are the preset.",
    "temperature": 0.2,
    "top_p": 0.8,
    "max_output_tokens": 50,
}


def test_upstream_receives_the_presets_model_parameters_and_system_prompt(org, http, catalog):
    create(org, "terse", "responses", RESPONSES_PRESET)
    response = http.post("/responses", json={"model": "@preset/terse", "input": "hello"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["output"][0]["content"][0]["text"] == "Hello from the fake upstream."
    assert body["model"] == "fakeai/chat"
    assert body["instructions"] == "You are the preset." and body["temperature"] == 0.2
    seen = catalog.last.body
    assert catalog.last.path == "/v1/responses"
    assert seen["model"] == "up-chat"
    assert seen["instructions"] == "You are the preset."
    assert (seen["temperature"], seen["top_p"], seen["max_output_tokens"]) == (0.2, 0.8, 50)
    assert b"hello" in orjson.dumps(seen["input"])
    wait_idle()  # the Generation row is written after the answer; read it once the gateway is idle
    [generation] = generations(1)
    assert generation.requested_model == "@preset/terse" and generation.status == "completed"


def test_service_metadata_shows_the_preset_stage(org, http, catalog):
    created = create(org, "terse", "responses", RESPONSES_PRESET)
    response = http.post(
        "/responses", json={"model": "@preset/terse", "input": "hi"}, headers={"X-Service-Metadata": "enabled"}
    )
    metadata = response.json()["service_metadata"]
    assert metadata["requested"] == "@preset/terse"
    assert {
        "type": "preset",
        "name": "terse",
        "preset_id": created["id"],
        "version": 1,
        "summary": "Applied preset 'terse' version 1",
    } in metadata["pipeline"]
    plain = http.post(
        "/responses", json={"model": "fakeai/chat", "input": "hi"}, headers={"X-Service-Metadata": "enabled"}
    )
    assert not [stage for stage in plain.json()["service_metadata"]["pipeline"] if stage["type"] == "preset"]


def test_request_fields_override_the_preset(org, http, catalog):
    create(org, "terse", "responses", RESPONSES_PRESET)
    request = {"model": "@preset/terse", "input": "hi", "temperature": 0.9, "instructions": "Request wins."}
    response = http.post("/responses", json=request)
    assert response.status_code == 200, response.text
    seen = catalog.last.body
    assert seen["temperature"] == 0.9 and seen["instructions"] == "Request wins."
    assert seen["top_p"] == 0.8 and seen["max_output_tokens"] == 50 and seen["model"] == "up-chat"


def test_streamed_request_through_a_preset(org, http, catalog):
    create(org, "terse", "responses", RESPONSES_PRESET)
    response = http.post("/responses", json={"model": "@preset/terse", "input": "hi", "stream": True})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    deltas = [orjson.loads(f)["delta"] for f in frames[:-1] if orjson.loads(f)["type"] == "response.output_text.delta"]
    assert "".join(deltas) == "Hello from the fake upstream."
    assert catalog.last.stream is True and catalog.last.body["instructions"] == "You are the preset."


def test_messages_preset_on_an_anthropic_provider_with_fallback(org, http, catalog):
    create(
        org,
        "claude",
        "messages",
        {
            "model": "fakeai/broken",
            "fallbacks": [{"model": "fakeanthropic/claude"}],
            "system": "System from messages.",
            "max_tokens": 64,
            "temperature": 0.3,
            "messages": [{"role": "user", "content": "ignored"}],
        },
    )
    response = http.post("/responses", json={"model": "@preset/claude", "input": "hi"})
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "fakeanthropic/claude"
    first, last = catalog.requests[0], catalog.requests[-1]
    assert first.model == "fail-500"  # the preset's model was tried first, then its fallback
    assert last.path == "/v1/messages" and last.body["model"] == "up-claude"
    assert last.body["max_tokens"] == 64 and last.body["temperature"] == 0.3
    system = last.body["system"]
    text = system if isinstance(system, str) else " ".join(block["text"] for block in system)
    assert "System from messages." in text


def test_unknown_and_disabled_presets_answer_in_the_envelope(org, http, catalog):
    response = http.post("/responses", json={"model": "@preset/missing", "input": "hi"})
    assert response.status_code == 404
    assert response.json()["error"] == {"code": 404, "message": "Preset 'missing' not found"}
    create(org, "off", "responses", {"model": "fakeai/chat"})
    from presets import services
    from presets.models import Preset

    services.preset_status_set(preset=Preset.objects.get(slug="off"), status="disabled")
    response = http.post("/responses", json={"model": "@preset/off", "input": "hi"})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "Preset 'off' is disabled"
    assert catalog.requests == []
