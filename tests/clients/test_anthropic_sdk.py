"""docs/clients.md's Anthropic SDK recipe against a live gateway: a tool loop over /messages."""

from __future__ import annotations

from tests.inference.conftest import generations


def test_tool_loop(run_recipe):
    done = run_recipe("anthropic-sdk")
    assert done["answer"] == "Echo: get_weather returned 18 degrees in Paris"
    rows = generations(2)
    assert [(r.ingress_format, r.tool_calls) for r in rows] == [("messages", 1), ("messages", 0)]
