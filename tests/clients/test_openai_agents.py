"""docs/clients.md's OpenAI Agents SDK recipe against a live gateway: a tool loop with a string model slug
through a MultiProvider that keeps the slug whole, and `output_type` with an explicit Chat Completions model."""

from __future__ import annotations

import pytest

from tests.inference.conftest import generations


def test_tool_loop_and_output_type(run_recipe):
    done = run_recipe("openai-agents")
    assert done["answer"] == "Echo: get_weather returned 18 degrees in Paris"
    assert done["weather"] == done["Weather"](city="18 degrees in Paris", degrees=18)
    rows = generations(4)
    assert {r.requested_model for r in rows} == {"echo/echo-1"}
    assert sorted(r.ingress_format for r in rows) == ["chat-completions", "chat-completions", "responses", "responses"]


def test_the_default_prefix_map_reads_the_vendor_as_a_provider():
    """Why the recipe needs its MultiProvider: the SDK's default map refuses the gateway's slugs."""
    from agents import MultiProvider, UserError

    with pytest.raises(UserError, match="Unknown prefix: echo"):
        MultiProvider().get_model("echo/echo-1")
