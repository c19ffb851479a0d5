"""The server-tool loop and plugins through /chat/completions and /messages: the official openai and anthropic
SDKs against the loopback gateway, the fake upstream scripted to call the tools, the fake web as the search
engine and the pages fetched. JSON and streamed; what the format cannot carry is a 400 naming it."""

from __future__ import annotations

import anthropic
import pytest

from tests.fakes.fake_web import page
from tests.inference.conftest import generations
from tests.servertools.conftest import MODEL, call, text
from tests.servertools.test_tool_search import catalog_of_tools
from tests.servertools.test_web_fetch import ARTICLE, loopback_allowed  # noqa: F401  (fixture)

URL = "https://weather.example.com/paris"
CITED = f"Sunny, per [weather.example.com]({URL})."
SEARCH = [call("web_search", '{"query": "paris weather"}'), text("Sunny, per ", CITED[11:])]
ASK = [{"role": "user", "content": "Weather in Paris?"}]
CHAT_MODEL = "fakechat/agent"  # served by the fake upstream in the openai-chat format


@pytest.fixture
def claude(gateway_server, org, agent_catalog):
    yield anthropic.Anthropic(base_url=f"{gateway_server.url}/api", api_key=org.inference_key, max_retries=0)
    from tests.inference.conftest import wait_idle

    wait_idle()


def _upstream_saw_the_search(agent_catalog):
    first, second = agent_catalog.requests
    assert [t["name"] for t in first.body["tools"]] == ["web_search"]
    assert [i["type"] for i in second.body["input"]][-2:] == ["function_call", "function_call_output"]
    assert URL in second.body["input"][-1]["output"]


# -- /chat/completions ------------------------------------------------------------------------------------


def test_chat_json_searches_and_cites(agent_sdk, agent_catalog, searxng):
    agent_catalog.script = list(SEARCH)
    completion = agent_sdk.chat.completions.create(
        model=MODEL, messages=ASK, tools=[{"type": "service:web_search", "parameters": {"max_results": 2}}]
    )
    message = completion.choices[0].message
    assert message.content == CITED and completion.choices[0].finish_reason == "stop"
    [annotation] = message.annotations
    assert annotation.type == "url_citation" and annotation.url_citation.url == URL
    assert annotation.url_citation.title == "Paris weather today"
    assert (annotation.url_citation.start_index, annotation.url_citation.end_index) == (
        CITED.index("["),
        len(CITED) - 1,
    )
    assert message.tool_calls is None
    assert completion.usage.prompt_tokens == 24 and completion.usage.completion_tokens == 7
    assert completion.usage.model_extra["server_tool_use"] == {"web_search_requests": 1, "web_fetch_requests": 0}
    _upstream_saw_the_search(agent_catalog)
    assert searxng.searches() == ["paris weather"]
    [row] = generations(1)
    assert row.ingress_format == "chat-completions" and row.tool_calls == 1 and row.input_tokens == 24


def test_chat_stream_sends_text_of_every_turn_then_annotations_and_usage(agent_sdk, agent_catalog, searxng):
    agent_catalog.script = [call("web_search", '{"query": "paris weather"}'), text("Sunny, per ", CITED[11:])]
    chunks = list(
        agent_sdk.chat.completions.create(
            model=MODEL,
            messages=ASK,
            tools=[{"type": "service:web_search"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == CITED
    annotated = [c.choices[0].delta.model_extra.get("annotations") for c in chunks if c.choices]
    [annotations] = [a for a in annotated if a]
    assert annotations[0]["url_citation"]["url"] == URL
    assert annotations[0]["url_citation"]["end_index"] == len(CITED) - 1
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    usage = chunks[-1].usage
    assert usage.prompt_tokens == 24 and usage.model_extra["server_tool_use"]["web_search_requests"] == 1
    _upstream_saw_the_search(agent_catalog)
    [row] = generations(1)
    assert row.streamed and row.tool_calls == 1 and row.input_tokens == 24


def test_chat_turns_are_separated_and_client_calls_end_the_loop(agent_sdk, agent_catalog, searxng):
    # The openai-chat fake answers a tool call with text when the script gives both.
    agent_catalog.script = [
        call("web_search", '{"query": "paris"}'),
        call("book_table", '{"city": "Paris"}', call_id="call_2"),
    ]
    agent_catalog.script[0].pieces = ["Searching."]
    tools = [
        {"type": "service:web_search"},
        {"type": "function", "function": {"name": "book_table", "parameters": {"type": "object"}}},
    ]
    completion = agent_sdk.chat.completions.create(model=CHAT_MODEL, messages=ASK, tools=tools)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    [tool_call] = choice.message.tool_calls
    assert tool_call.function.name == "book_table" and tool_call.id == "call_2"
    assert choice.message.content == "Searching."
    agent_catalog.script = [
        call("web_search", '{"query": "paris"}'),
        text("Found it."),
    ]
    agent_catalog.script[0].pieces = ["Searching."]
    chunks = list(agent_sdk.chat.completions.create(model=CHAT_MODEL, messages=ASK, tools=tools, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Searching.\n\nFound it."


def test_chat_plugin_web_and_server_tool_choice(agent, agent_catalog, searxng):
    agent_catalog.script = [text(CITED)]
    body = {"model": MODEL, "messages": ASK, "plugins": [{"id": "web", "max_results": 1}]}
    response = agent.post("/chat/completions", json=body)
    assert response.status_code == 200, response.text
    message = response.json()["choices"][0]["message"]
    assert message["annotations"][0]["url_citation"]["url"] == URL
    system = agent_catalog.requests[0].body["input"][0]
    assert system["role"] == "system" and URL in system["content"]
    agent_catalog.script = list(SEARCH)
    body = {"model": MODEL, "messages": ASK, "tools": [{"type": "service:web_search"}]}
    body["tool_choice"] = {"type": "service:web_search"}
    response = agent.post("/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert agent_catalog.requests[1].body["tool_choice"] == {"type": "function", "name": "web_search"}


def test_chat_max_tool_calls_and_stop_conditions_bound_the_loop(agent, agent_catalog, searxng):
    agent_catalog.script = [call("web_search", '{"query": "a"}'), text("Done.")]
    body = {"model": MODEL, "messages": ASK, "tools": [{"type": "service:web_search"}], "max_tool_calls": 1}
    response = agent.post("/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert agent_catalog.requests[-1].body["tool_choice"] == "none"
    agent_catalog.script = [call("web_search", '{"query": "a"}'), text("Done.")]
    body = {**body, "stop_server_tools_when": [{"type": "has_tool_call", "tool_name": "web_search"}]}
    body.pop("max_tool_calls")
    response = agent.post("/chat/completions", json=body, headers={"X-Service-Metadata": "enabled"})
    assert response.status_code == 200, response.text
    stage = next(s for s in response.json()["service_metadata"]["pipeline"] if s["type"] == "server_tools")
    assert stage["data"]["stopped_by"] == "has_tool_call"


def test_chat_deferred_tools_and_tool_search(agent, agent_catalog):
    deferred = [{"type": "function", "function": {**t, "type": None}} for t in catalog_of_tools(20)]
    for tool in deferred:
        tool["function"].pop("type")
    tools = [
        {"type": "function", "function": {"name": "now", "description": "The current time"}},
        {"type": "service:tool_search"},
        *deferred,
    ]
    agent_catalog.script = [call("tool_search", '{"query": "forecast for a city"}'), call("getForecast", "{}")]
    response = agent.post("/chat/completions", json={"model": MODEL, "messages": ASK, "tools": tools})
    assert response.status_code == 200, response.text
    first, second = agent_catalog.requests
    assert "getForecast" not in [t["name"] for t in first.body["tools"]]
    assert "getForecast" in [t["name"] for t in second.body["tools"]]
    assert response.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "getForecast"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tools": [{"type": "service:web_search", "name": "x"}]}, "tools[0].name"),
        ({"tools": [{"type": "service:code_interpreter"}]}, "tools[0].type"),
        ({"tools": [{"type": "web_search_preview"}]}, "tools[0].type"),
        ({"tool_choice": {"type": "service:web_search", "x": 1}}, "tool_choice.x"),
        ({"max_tool_calls": 31}, "max_tool_calls"),
        ({"plugins": [{"id": "web", "max_results": 0}]}, "plugins[0].max_results"),
    ],
)
def test_chat_invalid_server_tool_fields_are_400(agent, agent_catalog, searxng, body, field):
    response = agent.post("/chat/completions", json={"model": MODEL, "messages": ASK, **body})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["metadata"]["field"] == field
    assert agent_catalog.requests == []


def test_chat_no_engine_is_a_400_naming_the_tool(agent, agent_catalog, settings):
    settings.GATEWAY_SEARXNG_URL = ""
    settings.GATEWAY_BRAVE_SEARCH_API_KEY = ""
    body = {"model": MODEL, "messages": ASK, "tools": [{"type": "service:web_search"}]}
    response = agent.post("/chat/completions", json=body)
    assert response.status_code == 400
    assert "needs a web search engine" in response.json()["error"]["message"]


# -- /messages ------------------------------------------------------------------------------------------

NATIVE_SEARCH = {"type": "web_search_20250305", "name": "web_search"}


def test_messages_json_has_server_tool_blocks_and_citations(claude, agent_catalog, searxng):
    agent_catalog.script = list(SEARCH)
    message = claude.messages.create(model=MODEL, max_tokens=256, messages=ASK, tools=[NATIVE_SEARCH])
    use, result, answer = message.content
    assert use.type == "server_tool_use" and use.name == "web_search" and use.input == {"query": "paris weather"}
    assert use.id == "srvtoolu_call_1"
    assert result.type == "web_search_tool_result" and result.tool_use_id == use.id
    assert [r.url for r in result.content] == [r["url"] for r in searxng.results]
    assert result.content[0].type == "web_search_result" and result.content[0].title == "Paris weather today"
    assert answer.type == "text" and answer.text == CITED
    [citation] = answer.citations
    assert citation.type == "web_search_result_location" and citation.url == URL
    assert citation.cited_text == f"[weather.example.com]({URL})"
    assert message.stop_reason == "end_turn"
    assert message.usage.server_tool_use.web_search_requests == 1
    assert message.usage.input_tokens + message.usage.cache_read_input_tokens == 24  # Anthropic counts reads apart
    assert message.usage.output_tokens == 7
    _upstream_saw_the_search(agent_catalog)
    [row] = generations(1)
    assert row.ingress_format == "messages" and row.tool_calls == 1


def test_messages_stream_events_and_final_message(claude, agent_catalog, searxng):
    agent_catalog.script = list(SEARCH)
    with claude.messages.stream(model=MODEL, max_tokens=256, messages=ASK, tools=[NATIVE_SEARCH]) as stream:
        events = list(stream)
        final = stream.get_final_message()
    starts = [e.content_block.type for e in events if e.type == "content_block_start"]
    assert starts == ["server_tool_use", "web_search_tool_result", "text"]
    deltas = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert "input_json_delta" in deltas and deltas[-1] == "citations_delta"
    use, result, answer = final.content
    assert use.input == {"query": "paris weather"} and result.content[0].url == searxng.results[0]["url"]
    assert answer.text == CITED and answer.citations[0].url == URL
    assert final.usage.server_tool_use.web_search_requests == 1 and final.usage.output_tokens == 7
    assert final.stop_reason == "end_turn"
    [row] = generations(1)
    assert row.streamed and row.tool_calls == 1


def test_messages_history_with_server_blocks_is_replayed(claude, agent_catalog, searxng):
    agent_catalog.script = list(SEARCH)
    first = claude.messages.create(model=MODEL, max_tokens=256, messages=ASK, tools=[NATIVE_SEARCH])
    agent_catalog.script = [text("Still sunny.")]
    history = [*ASK, {"role": "assistant", "content": first.content}, {"role": "user", "content": "And now?"}]
    again = claude.messages.create(model=MODEL, max_tokens=256, messages=history, tools=[NATIVE_SEARCH])
    assert again.content[0].text == "Still sunny."
    replayed = agent_catalog.requests[-1].body["input"]
    kinds = [i.get("type") for i in replayed]
    assert kinds[1:3] == ["function_call", "function_call_output"]
    assert replayed[1]["name"] == "web_search" and replayed[1]["call_id"] == "call_1"
    assert URL in replayed[2]["output"]
    # Without the tool in the request the server blocks are left out (no provider knows them).
    agent_catalog.script = [text("Fine.")]
    claude.messages.create(model=MODEL, max_tokens=256, messages=history)
    assert "function_call" not in [i.get("type") for i in agent_catalog.requests[-1].body["input"]]


def test_messages_web_fetch_and_tool_search_blocks(claude, agent_catalog, fake_web, loopback_allowed):  # noqa: F811
    fake_web.pages["paris"] = page(ARTICLE)
    url = f"{fake_web.url}/pages/paris"
    agent_catalog.script = [call("web_fetch", f'{{"url": "{url}"}}'), text(f"Chestnuts bloom in April ({url}).")]
    tools = [{"type": "web_fetch_20250910", "name": "web_fetch"}]
    message = claude.messages.create(model=MODEL, max_tokens=256, messages=ASK, tools=tools)
    use, result, answer = message.content
    assert use.name == "web_fetch" and result.type == "web_fetch_tool_result"
    assert result.content.type == "web_fetch_result" and result.content.url == url
    assert "chestnut trees bloom in April" in result.content.content.source.data
    assert answer.citations[0].url == url
    assert message.usage.server_tool_use.web_fetch_requests == 1
    deferred = catalog_of_tools(10)
    tools = [
        {"name": "now", "description": "The current time", "input_schema": {"type": "object"}},
        {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
        *[
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"], "defer_loading": True}
            for t in deferred
        ],
    ]
    agent_catalog.script = [call("tool_search", '{"query": "forecast for a city"}'), call("getForecast", "{}")]
    with claude.messages.stream(model=MODEL, max_tokens=256, messages=ASK, tools=tools) as stream:
        final = stream.get_final_message()
    use, result, tool_use = final.content
    assert use.name == "tool_search_tool_bm25" and result.type == "tool_search_tool_result"
    assert "getForecast" in [r.tool_name for r in result.content.tool_references]
    assert tool_use.type == "tool_use" and tool_use.name == "getForecast" and final.stop_reason == "tool_use"


@pytest.mark.parametrize(
    ("tool", "field"),
    [
        ({**NATIVE_SEARCH, "max_uses": 0}, "tools[0].max_uses"),
        ({**NATIVE_SEARCH, "max_uses": 3, "blocked_domains": ["x.com"]}, "tools[0].blocked_domains"),
        ({**NATIVE_SEARCH, "allowed_domains": ["example.com"]}, "tools[0].allowed_domains"),
        ({"type": "web_search_20250305", "name": "search"}, "tools[0].name"),
        ({"type": "code_execution_20250522", "name": "code_execution"}, "tools[0].type"),
        ({"type": "service:web_search", "parameters": {"engine": "google"}}, "tools[0].parameters.engine"),
    ],
)
def test_messages_refused_server_tool_options_name_the_field(claude, agent_catalog, searxng, tool, field):
    with pytest.raises(anthropic.BadRequestError) as raised:
        claude.messages.create(model=MODEL, max_tokens=64, messages=ASK, tools=[tool])
    assert raised.value.body["error"]["metadata"]["field"] == field
    assert agent_catalog.requests == []


def test_messages_plugin_web_cites_in_the_text_block(claude, agent_catalog, searxng):
    agent_catalog.script = [text(CITED)]
    message = claude.messages.create(
        model=MODEL, max_tokens=64, messages=ASK, extra_body={"plugins": [{"id": "web", "max_results": 1}]}
    )
    [block] = message.content
    assert block.text == CITED and block.citations[0].url == URL
    assert message.usage.server_tool_use.web_search_requests == 0
    assert URL in agent_catalog.requests[0].body["input"][0]["content"]


def test_messages_max_uses_bounds_the_loop(claude, agent_catalog, searxng):
    """Claude Code's WebSearch tool asks for `{type: web_search_20250305, name: web_search, max_uses: 8}`: the
    bound becomes the loop's max_tool_calls (the last turn may not call the tool)."""
    agent_catalog.script = [call("web_search", '{"query": "a"}'), text("Done.")]
    tools = [{**NATIVE_SEARCH, "max_uses": 1}]
    message = claude.messages.create(model=MODEL, max_tokens=64, messages=ASK, tools=tools)
    assert [b.type for b in message.content] == ["server_tool_use", "web_search_tool_result", "text"]
    assert agent_catalog.requests[-1].body["tool_choice"] == "none"
    with pytest.raises(anthropic.BadRequestError) as raised:
        fetch = {"type": "web_fetch_20250910", "name": "web_fetch"}
        claude.messages.create(model=MODEL, max_tokens=64, messages=ASK, tools=[tools[0], fetch])
    assert raised.value.body["error"]["metadata"]["field"] == "tools[0].max_uses"


@pytest.mark.parametrize("stream", [False, True])
def test_messages_loop_answer_reports_the_context_edits_it_applied(claude, agent_catalog, searxng, stream):
    """A server-tool loop on a provider without context management: the gateway applies the edits to every turn
    and the answer's `context_management.applied_edits` says what the last turn's request had cleared."""
    from inference.ingress.context_edits import PLACEHOLDER
    from tests.inference.test_context_edits import MANAGEMENT, _history
    from tests.inference.test_messages import TOOL

    agent_catalog.script = list(SEARCH)
    kwargs = {"model": MODEL, "max_tokens": 256, "messages": _history(3), "tools": [TOOL, NATIVE_SEARCH]}
    kwargs |= {"context_management": MANAGEMENT, "betas": ["context-management-2025-06-27"]}
    if stream:
        with claude.beta.messages.stream(**kwargs) as events:
            deltas = [e.model_dump() for e in events if e.type == "message_delta"]
            message = events.get_final_message()
        assert deltas[-1]["context_management"]["applied_edits"][0]["type"] == "clear_tool_uses_20250919"
    else:
        message = claude.beta.messages.create(**kwargs)
    assert [b.type for b in message.content] == ["server_tool_use", "web_search_tool_result", "text"]
    first, last = agent_catalog.requests
    for sent in (first, last):
        outputs = [i["output"] for i in sent.body["input"] if i["type"] == "function_call_output"]
        assert outputs[:2] == [PLACEHOLDER] * 2 and "context_management" not in sent.body
    cleared = [i for i in last.body["input"] if i["type"] == "function_call_output" and i["output"] == PLACEHOLDER]
    [applied] = message.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919" and applied.cleared_tool_uses == len(cleared) >= 2
