"""docs/clients.md's OpenAI SDK recipes against a live gateway: Chat Completions, Responses, both `parse`
helpers, and a tool loop."""

from __future__ import annotations

from tests.inference.conftest import generations


def test_chat_responses_and_parse(run_recipe):
    done = run_recipe("openai-sdk")
    assert done["completion"].choices[0].message.content == "Echo: Say hello"
    assert done["response"].output_text == "Echo: Say hello"
    city_type = done["City"]
    assert done["city"] == city_type(name="Paris has 2100000 inhabitants", population=2100000)
    assert done["parsed_response"].output_parsed == done["city"]
    rows = generations(4)
    assert sorted(r.ingress_format for r in rows) == ["chat-completions", "chat-completions", "responses", "responses"]


def test_tool_loop(run_recipe):
    done = run_recipe("openai-tools")
    assert done["answer"] == "Echo: get_weather returned 18 degrees and sunny in Paris"
    assert [r.tool_calls for r in generations(2)] == [1, 0]
