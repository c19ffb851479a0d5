"""docs/clients.md's LangChain recipe against a live gateway: ChatOpenAI over Chat Completions and over
Responses, ChatAnthropic over Messages; `with_structured_output` and a tool loop on each."""

from __future__ import annotations

from tests.inference.conftest import generations


def test_structured_output_and_tool_loop(run_recipe):
    done = run_recipe("langchain")
    city = done["City"](name="Paris has 2100000 inhabitants", population=2100000)
    assert done["cities"] == [city, city, city]
    assert done["answers"] == ["Echo: get_weather returned 18 degrees in Paris"] * 3
    formats = sorted(r.ingress_format for r in generations(9))
    assert formats == ["chat-completions"] * 3 + ["messages"] * 3 + ["responses"] * 3
