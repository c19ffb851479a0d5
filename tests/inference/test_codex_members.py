"""What Codex CLI sends by default to /responses, honoured on every provider format: `client_metadata`,
`include: [reasoning.encrypted_content]`, `store: false`, `prompt_cache_key`, `namespace` tools (flattened for
formats without them, names restored in the answer), the hosted `web_search` tool, and reasoning in streams
(events, the item in `output_item.done` and in `response.completed`, `encrypted_content`)."""

from __future__ import annotations

import httpx
import orjson
import pytest

from tests.fakes.fake_formats import Reply
from tests.inference.conftest import add_endpoint
from tests.servertools.conftest import KEY_ENV, agent, agent_catalog, agent_sdk, searxng  # noqa: F401

FORMATS = {"responses": "fakeai", "chat": "fakechat", "anthropic": "fakeclaude"}
NAMESPACE = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Tools for sub-agents.",
    "tools": [
        {
            "type": "function",
            "name": "close_agent",
            "description": "Close an agent.",
            "strict": False,
            "parameters": {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]},
        }
    ],
}
SHELL = {
    "type": "function",
    "name": "exec_command",
    "description": "Runs a command.",
    "strict": False,
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
}
CLIENT_METADATA = {"x-codex-window-id": "w:0", "x-codex-turn-metadata": '{"turn_id":"t1","x":"' + "a" * 900 + '"}'}


def codex_body(model: str, **extra) -> dict:
    """The members Codex 0.171.0 sends on its first request (captured from the real CLI), minus its web_search."""
    return {
        "model": model,
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
            {"type": "message", "id": "msg_1", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ],
        "tools": [SHELL, NAMESPACE],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "01a24c3d-session",
        "client_metadata": CLIENT_METADATA,
        **extra,
    }


@pytest.fixture
def reasoning_catalog(agent_catalog):  # noqa: F811
    base = {"base_url": agent_catalog.base_url, "api_key_env": KEY_ENV}
    add_endpoint("fakeai/reasoning", "fakeai", api_format="openai-responses", upstream_model="reasoning", **base)
    add_endpoint("fakechat/reasoning", "fakechat", api_format="openai-chat", upstream_model="reasoning", **base)
    add_endpoint(
        "fakeclaude/reasoning", "fakeclaude", api_format="anthropic-messages", upstream_model="reasoning", **base
    )
    return agent_catalog


@pytest.mark.parametrize("fmt", FORMATS)
def test_codex_default_members_are_honoured_on_every_format(agent, agent_catalog, fmt):  # noqa: F811
    response = agent.post("/responses", json=codex_body(f"{FORMATS[fmt]}/agent"))
    assert response.status_code == 200, response.text
    sent = agent_catalog.requests[-1].body
    if fmt == "responses":
        assert sent["client_metadata"] == CLIENT_METADATA
        assert sent["include"] == ["reasoning.encrypted_content"] and sent["store"] is False
        assert sent["prompt_cache_key"] == "01a24c3d-session"
        assert sent["tools"][1] == NAMESPACE  # the namespace tool goes up as it is
    else:
        assert "client_metadata" not in sent and "include" not in sent
        names = [t.get("name") or t["function"]["name"] for t in sent["tools"]]
        assert names == ["exec_command", "multi_agent_v1__close_agent"]


@pytest.mark.parametrize("fmt", ["chat", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
def test_namespace_call_comes_back_under_the_clients_names(agent, agent_catalog, fmt, stream):  # noqa: F811
    agent_catalog.script = [
        Reply(tool_name="multi_agent_v1__close_agent", tool_arguments=['{"target": "a1"}'], finish="tool_calls")
    ]
    body = codex_body(f"{FORMATS[fmt]}/agent", stream=stream)
    if stream:
        with agent.stream("POST", "/responses", json=body) as response:
            assert response.status_code == 200
            events = [orjson.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
        output = events[-1]["response"]["output"]
        done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        assert done[-1]["name"] == "close_agent" and done[-1]["namespace"] == "multi_agent_v1"
    else:
        response = agent.post("/responses", json=body)
        assert response.status_code == 200, response.text
        output = response.json()["output"]
    call = next(item for item in output if item["type"] == "function_call")
    assert (call["name"], call["namespace"], call["arguments"]) == ("close_agent", "multi_agent_v1", '{"target": "a1"}')
    # The call sent back in the next turn goes up under the flat name again.
    follow = codex_body(f"{FORMATS[fmt]}/agent")
    follow["input"] += [
        {k: call[k] for k in ("type", "call_id", "name", "namespace", "arguments")},
        {"type": "function_call_output", "call_id": call["call_id"], "output": "closed"},
    ]
    assert agent.post("/responses", json=follow).status_code == 200
    sent = orjson.dumps(agent_catalog.requests[-1].body).decode()
    assert '"multi_agent_v1__close_agent"' in sent.replace('"name":"multi_agent_v1__close_agent","description"', "")


@pytest.mark.parametrize("fmt", FORMATS)
def test_reasoning_streams_as_openai_does(agent_sdk, reasoning_catalog, fmt):  # noqa: F811
    body = codex_body(f"{FORMATS[fmt]}/reasoning")
    body.pop("client_metadata")
    body.pop("tools")
    body.pop("tool_choice")
    body.pop("parallel_tool_calls")
    extra = {"client_metadata": CLIENT_METADATA}
    with agent_sdk.responses.stream(**{k: v for k, v in body.items()}, extra_body=extra) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    reasoning = final.output[0]
    assert reasoning.type == "reasoning" and final.output[1].type == "message"
    assert kinds.index("response.output_item.added") < kinds.index("response.output_text.delta")
    if fmt == "responses":  # a summary, and the upstream's own item with its encrypted content
        assert "response.reasoning_summary_text.delta" in kinds and "response.reasoning_summary_text.done" in kinds
        assert reasoning.summary[0].text == "Thinking it over." and reasoning.id == "rs_fake_1"
        assert reasoning.encrypted_content == "enc-fake"
    else:  # reasoning text
        assert "response.reasoning_text.delta" in kinds and "response.reasoning_text.done" in kinds
        assert reasoning.content[0].text == "Thinking it over."
        expected = "sig-fake" if fmt == "anthropic" else None  # Anthropic's signature is the encrypted content
        assert reasoning.encrypted_content == expected
    assert final.output[1].content[0].text == "Hello from the fake upstream."


@pytest.mark.parametrize("fmt", FORMATS)
def test_reasoning_streamed_matches_the_json_answer(agent, reasoning_catalog, fmt):  # noqa: F811
    body = codex_body(f"{FORMATS[fmt]}/reasoning")
    del body["tools"], body["tool_choice"]
    answer = agent.post("/responses", json=body).json()
    with agent.stream("POST", "/responses", json={**body, "stream": True}) as response:
        events = [orjson.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    completed = events[-1]["response"]["output"]
    assert done == completed
    streamed, answered = completed[0], answer["output"][0]
    assert streamed["type"] == answered["type"] == "reasoning"
    for key in ("summary", "content", "encrypted_content"):
        assert streamed.get(key) == answered.get(key), key


def test_anthropic_signed_thinking_goes_back_as_a_thinking_block(agent, reasoning_catalog):  # noqa: F811
    body = codex_body("fakeclaude/reasoning", stream=True)
    with agent.stream("POST", "/responses", json=body) as response:
        events = [orjson.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
    reasoning = events[-1]["response"]["output"][0]
    follow = codex_body("fakeclaude/agent")
    follow["input"] += [reasoning, {"type": "message", "role": "user", "content": "go on"}]
    assert agent.post("/responses", json=follow).status_code == 200
    blocks = agent_catalog_messages(reasoning_catalog)[-2]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": "Thinking it over.", "signature": "sig-fake"}


def agent_catalog_messages(fake) -> list[dict]:
    return fake.requests[-1].body["messages"]


def test_plain_text_stream_has_no_reasoning_events(agent, agent_catalog):  # noqa: F811
    with agent.stream("POST", "/responses", json=codex_body("fakechat/agent", stream=True)) as response:
        kinds = [orjson.loads(line[6:])["type"] for line in response.iter_lines() if line.startswith("data: {")]
    assert not [k for k in kinds if "reasoning" in k]


def test_include_value_a_format_cannot_produce_is_400(agent, agent_catalog):  # noqa: F811
    body = codex_body("fakeclaude/agent", include=["reasoning.encrypted_content", "code_interpreter_call.outputs"])
    response = agent.post("/responses", json=body)
    assert response.status_code == 400
    assert "include value 'code_interpreter_call.outputs'" in response.json()["error"]["message"]
    assert agent_catalog.requests == []


WEB_SEARCH = {"type": "web_search", "external_web_access": False}


def test_web_search_goes_to_a_responses_upstream(agent, agent_catalog):  # noqa: F811
    body = codex_body("fakeai/agent")
    body["tools"].append(WEB_SEARCH)
    assert agent.post("/responses", json=body).status_code == 200
    assert agent_catalog.requests[-1].body["tools"][-1] == WEB_SEARCH


@pytest.mark.parametrize("fmt", ["chat", "anthropic"])
def test_web_search_without_an_engine_is_400_saying_how_to_turn_it_off(agent, agent_catalog, settings, fmt):  # noqa: F811
    settings.GATEWAY_SEARXNG_URL = settings.GATEWAY_BRAVE_SEARCH_API_KEY = settings.GATEWAY_TAVILY_API_KEY = ""
    body = codex_body(f"{FORMATS[fmt]}/agent")
    body["tools"].append(WEB_SEARCH)
    response = agent.post("/responses", json=body)
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "tool type 'web_search'" in message and 'web_search = "disabled"' in message
    assert agent_catalog.requests == []


def test_web_search_runs_on_the_gateways_engine_when_one_is_configured(agent, agent_catalog, searxng):  # noqa: F811
    agent_catalog.script = [
        Reply(tool_name="web_search", tool_arguments=['{"query": "gateway"}'], finish="tool_calls"),
        Reply(pieces=["Found it."]),
    ]
    body = codex_body("fakechat/agent")
    body["tools"].append(WEB_SEARCH)
    response = agent.post("/responses", json=body)
    assert response.status_code == 200, response.text
    first = agent_catalog.requests[0].body
    assert "web_search" in [t["function"]["name"] for t in first["tools"]]
    assert len(searxng.requests) == 1 and response.json()["output"][-1]["content"][0]["text"] == "Found it."


def test_client_metadata_is_validated(agent, agent_catalog):  # noqa: F811
    response = agent.post("/responses", json=codex_body("fakeai/agent", client_metadata={"a": 1}))
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("client_metadata.a:")


def test_namespace_tool_is_validated(agent, agent_catalog):  # noqa: F811
    body = codex_body("fakeai/agent")
    body["tools"][1] = {"type": "namespace", "name": "ns", "tools": [{"type": "web_search"}]}
    response = agent.post("/responses", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("tools[1].tools[0].type:")


def test_client_metadata_is_recorded_on_the_generation(gateway_server, org, agent, agent_catalog):  # noqa: F811
    from tests.inference.conftest import generations

    response = agent.post("/responses", json=codex_body("fakechat/agent"))
    assert response.status_code == 200
    generations(1)
    headers = {"Authorization": f"Bearer {org.management_key}"}
    lookup = httpx.get(
        f"{gateway_server.url}/api/v1/generation", params={"id": response.json()["id"]}, headers=headers, timeout=30
    )
    assert lookup.json()["data"]["client_metadata"] == CLIENT_METADATA
    activity = httpx.get(f"{gateway_server.url}/api/v1/activity", headers=headers, timeout=30).json()
    assert activity["data"][0]["client_metadata"] == CLIENT_METADATA
