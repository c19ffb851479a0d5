"""docs/clients.md's instructor recipe against a live gateway: TOOLS, JSON, JSON_SCHEMA and RESPONSES_TOOLS
modes on the OpenAI SDK and ANTHROPIC_TOOLS on the Anthropic SDK."""

from __future__ import annotations


def test_modes(run_recipe):
    done = run_recipe("instructor")
    city = {"name": "Paris has 2100000 inhabitants", "population": 2100000}
    assert {mode: value.model_dump() for mode, value in done["cities"].items()} == dict.fromkeys(
        ["TOOLS", "JSON", "JSON_SCHEMA", "RESPONSES_TOOLS", "ANTHROPIC_TOOLS"], city
    )
