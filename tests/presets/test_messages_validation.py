"""Every rule of the messages body: a 400 that names the field, and nothing is written."""

import pytest

from presets.models import Preset

pytestmark = pytest.mark.django_db

BASE = {"model": "anthropic/claude-sonnet"}

INVALID = [
    ({"model": ""}, "model"),
    ({"model": 5}, "model"),
    ({"messages": "hi"}, "messages"),
    ({"messages": [{"content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user"}]}, "messages[0].content"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": "10"}, "max_tokens"),
    ({"max_tokens": True}, "max_tokens"),
    ({"system": 3}, "system"),
    ({"system": [{"type": "image", "text": "x"}]}, "system[0]"),
    (
        {"system": [{"type": "text", "text": "x", "cache_control": {"type": "persistent"}}]},
        "system[0].cache_control.type",
    ),
    # fallbacks
    ({"fallbacks": [{"model": "a"}, {"model": "b"}, {"model": "c"}, {"model": "d"}]}, "fallbacks"),
    ({"fallbacks": [{"model": "a", "provider": {"only": ["x"]}}]}, "fallbacks[0].provider"),
    ({"fallbacks": [{}]}, "fallbacks[0].model"),
    ({"fallbacks": ["a/b"]}, "fallbacks[0]"),
    ({"fallbacks": {"model": "a"}}, "fallbacks"),
    ({"fallbacks": [{"model": "a"}], "models": ["b"]}, "fallbacks"),
    # output_config
    ({"output_config": "high"}, "output_config"),
    ({"output_config": {"effort": "extreme"}}, "output_config.effort"),
    ({"output_config": {"format": {"type": "text"}}}, "output_config.format.type"),
    ({"output_config": {"format": {"type": "json_schema"}}}, "output_config.format.schema"),
    ({"output_config": {"format": {"type": "json_schema", "name": 5, "schema": {}}}}, "output_config.format.name"),
    ({"output_config": {"task_budget": 0}}, "output_config.task_budget"),
    ({"output_config": {"colour": "red"}}, "output_config.colour"),
    # speed, route
    ({"speed": "slow"}, "speed"),
    ({"speed": "priority"}, "speed"),
    ({"route": "price"}, "route"),
    # identifiers
    ({"session_id": "s" * 257}, "session_id"),
    ({"session_id": 12}, "session_id"),
    ({"user": "u" * 257}, "user"),
    ({"trace": "t"}, "trace"),
    # stop_server_tools_when
    ({"stop_server_tools_when": []}, "stop_server_tools_when"),
    ({"stop_server_tools_when": {"type": "max_cost"}}, "stop_server_tools_when"),
    ({"stop_server_tools_when": [{"type": "never"}]}, "stop_server_tools_when[0].type"),
    ({"stop_server_tools_when": [{"type": "step_count_is"}]}, "stop_server_tools_when[0].step_count"),
    (
        {"stop_server_tools_when": [{"type": "step_count_is", "step_count": 1.5}]},
        "stop_server_tools_when[0].step_count",
    ),
    (
        {"stop_server_tools_when": [{"type": "max_cost", "max_cost_in_dollars": 0}]},
        "stop_server_tools_when[0].max_cost_in_dollars",
    ),
    ({"stop_server_tools_when": [{"type": "has_tool_call", "tool_name": 7}]}, "stop_server_tools_when[0].tool_name"),
    ({"stop_server_tools_when": [{"type": "max_tokens_used"}]}, "stop_server_tools_when[0].max_tokens"),
    ({"stop_server_tools_when": [{"type": "finish_reason_is", "reason": 3}]}, "stop_server_tools_when[0].reason"),
    # plugins
    ({"plugins": {"id": "web"}}, "plugins"),
    ({"plugins": [{"id": "telepathy"}]}, "plugins[0].id"),
    ({"plugins": [{"name": "web"}]}, "plugins[0].id"),
    ({"plugins": [{"id": "auto-router", "enabled": "yes"}]}, "plugins[0].enabled"),
    ({"plugins": [{"id": "auto-router", "allowed_models": "a/*"}]}, "plugins[0].allowed_models"),
    ({"plugins": [{"id": "auto-router", "cost_tier": 1}]}, "plugins[0].cost_tier"),
    ({"plugins": [{"id": "auto-router", "pin_model": 1}]}, "plugins[0].pin_model"),
    ({"plugins": [{"id": "no-such-plugin"}]}, "plugins[0].id"),  # not a kind of the contract
    ({"plugins": [{"id": "auto-router", "surprise": True}]}, "plugins[0].surprise"),
    ({"tools": [{"name": "f", "input_schema": {"type": "object"}}, {"type": "service:unknown"}]}, "tools[1].type"),
    # cache_control
    ({"cache_control": {"ttl": "5m"}}, "cache_control.type"),
    ({"cache_control": {"type": "persistent"}}, "cache_control.type"),
    ({"cache_control": {"type": "ephemeral", "ttl": 300}}, "cache_control.ttl"),
    ({"cache_control": "ephemeral"}, "cache_control"),
    # provider
    ({"provider": "openai"}, "provider"),
    ({"provider": {"order": "openai"}}, "provider.order"),
    ({"provider": {"allow_fallbacks": "no"}}, "provider.allow_fallbacks"),
    ({"provider": {"data_collection": "maybe"}}, "provider.data_collection"),
    ({"provider": {"sort": "cheapest"}}, "provider.sort"),
    ({"provider": {"max_price": {"prompt": -1}}}, "provider.max_price.prompt"),
    ({"provider": {"favourite": "x"}}, "provider.favourite"),
    # sampling and tools
    ({"temperature": "hot"}, "temperature"),
    ({"temperature": 3}, "temperature"),
    ({"top_p": 1.5}, "top_p"),
    ({"top_k": -1}, "top_k"),
    ({"tools": {"name": "x"}}, "tools"),
    ({"tools": [{"description": "no name"}]}, "tools[0].name"),
    ({"tools": [{"name": "f", "input_schema": "x"}]}, "tools[0].input_schema"),
    ({"tool_choice": {"type": "sometimes"}}, "tool_choice.type"),
    ({"tool_choice": {"type": "tool"}}, "tool_choice.name"),
]


@pytest.mark.parametrize(("extra", "field"), INVALID, ids=[f for _, f in INVALID])
def test_invalid_messages_body_names_the_field(api, extra, field):
    response = api.post("/api/v1/presets/v/messages", {**BASE, **extra}, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == 400
    assert error["metadata"]["field"] == field
    assert error["message"].startswith(f"{field}: ")
    assert not Preset.objects.exists()


VALID = [
    {"speed": None},
    {"speed": "standard"},
    {"route": None},
    {"route": "sort"},
    {"session_id": "s" * 256, "user": "u" * 256},
    {"fallbacks": [{"model": "a"}, {"model": "b"}, {"model": "c"}]},
    {"fallbacks": []},
    {"output_config": {"effort": "max", "format": {"type": "json_schema", "schema": {"type": "object"}}}},
    {"output_config": {"task_budget": 1000}},
    {
        "stop_server_tools_when": [
            {"type": "step_count_is", "step_count": 2},
            {"type": "max_cost", "max_cost_in_dollars": 0.5},
            {"type": "has_tool_call", "tool_name": "finish"},
            {"type": "max_tokens_used", "max_tokens": 5000},
            {"type": "finish_reason_is", "reason": "stop"},
        ]
    },
    {"plugins": [{"id": "web", "max_results": 3}, {"id": "web-fetch", "enabled": False}]},
    {"tools": [{"name": "f", "input_schema": {"type": "object"}}, {"type": "service:web_search"}]},
    {"cache_control": {"type": "ephemeral"}},
    {
        "provider": {
            "sort": {"by": "price", "partition": "model"},
            "zdr": True,
            "only": ["a"],
            "max_price": {"prompt": 1},
        }
    },
    {"tool_choice": {"type": "tool", "name": "f", "disable_parallel_tool_use": True}},
    {"stream": "not checked, not kept", "metadata": {"user_id": "u"}},
]


@pytest.mark.parametrize("extra", VALID)
def test_valid_messages_bodies_are_accepted(api, extra):
    response = api.post("/api/v1/presets/v/messages", {**BASE, **extra}, format="json")
    assert response.status_code == 200, response.json()
    config = response.json()["data"]["designated_version"]["config"]
    assert "stream" not in config and "metadata" not in config


def test_unknown_messages_member_is_refused_by_name(api):
    response = api.post("/api/v1/presets/v/messages", {**BASE, "unknown_member": 1}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "unknown_member"
