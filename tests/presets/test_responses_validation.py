"""POST /presets/{slug}/responses validates the body with the rules of POST /responses (400 naming the field)."""

import pytest

from presets.models import Preset

pytestmark = pytest.mark.django_db

BASE = {"model": "openai/gpt-4o-mini"}

INVALID = [
    ({"model": ""}, "model"),
    ({"models": "a/b"}, "models"),
    ({"temperature": "hot"}, "temperature"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"max_tool_calls": 31}, "max_tool_calls"),
    ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
    ({"session_id": "s" * 257}, "session_id"),
    ({"user": "u" * 257}, "user"),
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"store": True}, "store"),
    ({"service_tier": "turbo"}, "service_tier"),
    ({"truncation": "sometimes"}, "truncation"),
    ({"route": "price"}, "route"),
    ({"include": ["everything"]}, "include[0]"),
    ({"modalities": ["audio"]}, "modalities[0]"),
    ({"plugins": [{"id": "telepathy"}]}, "plugins[0].id"),
    ({"stop_server_tools_when": []}, "stop_server_tools_when"),
    ({"cache_control": {"type": "persistent"}}, "cache_control.type"),
    ({"reasoning": {"effort": "extreme"}}, "reasoning.effort"),
    ({"provider": {"sort": "cheapest"}}, "provider.sort"),
    ({"tools": [{"type": "function", "name": "f", "defer_loading": True}]}, "tools[0].defer_loading"),
    ({"instructions": 5}, "instructions"),
]


@pytest.mark.parametrize(("extra", "field"), INVALID, ids=[f for _, f in INVALID])
def test_invalid_responses_body_names_the_field(api, extra, field):
    response = api.post("/api/v1/presets/r/responses", {**BASE, **extra}, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["metadata"]["field"] == field
    assert error["message"].startswith(f"{field}: ")
    assert not Preset.objects.exists()


def test_fields_the_preset_does_not_keep_are_ignored_not_refused(api):
    body = {**BASE, "messages": [{"role": "user", "content": "x"}], "stream": True, "store": False}
    response = api.post("/api/v1/presets/r/responses", body, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["data"]["designated_version"]["config"] == BASE


@pytest.mark.parametrize("member", ["whatever", "max_tokens"])
def test_members_unknown_to_responses_are_refused_by_name(api, member):
    response = api.post("/api/v1/presets/r/responses", {**BASE, member: 1}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == member
    assert not Preset.objects.exists()
