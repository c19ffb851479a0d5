"""The server-tool loop leaves no reference cycle either (tests/inference/test_reference_cycles.py says why it
matters): a web search and the answer after it, JSON and streamed, and a plugin (response healing)."""

from __future__ import annotations

from tests.inference.test_reference_cycles import _request_garbage
from tests.servertools.conftest import MODEL, call, text


def test_a_server_tool_turn_leaves_no_cycle(agent, agent_catalog, searxng):
    body = {"model": MODEL, "input": "Weather in Paris?", "tools": [{"type": "service:web_search"}]}

    def search_then_answer() -> None:
        for stream in (False, True):
            agent_catalog.script = [call("web_search", '{"query": "paris weather"}'), text("Sunny.")]
            response = agent.post("/responses", json={**body, "stream": stream})
            assert response.status_code == 200, response.text
            response.read()

    search_then_answer()  # warm
    assert _request_garbage(search_then_answer) == {}


def test_a_plugin_leaves_no_cycle(agent, agent_catalog):
    body = {
        "model": MODEL,
        "input": "Give me JSON.",
        "text": {"format": {"type": "json_object"}},
        "plugins": [{"id": "response-healing"}],
    }

    def heal() -> None:
        agent_catalog.script = [text('```json\n{"a": 1,}\n```')]
        response = agent.post("/responses", json=body)
        assert response.status_code == 200, response.text

    heal()
    assert _request_garbage(heal) == {}
