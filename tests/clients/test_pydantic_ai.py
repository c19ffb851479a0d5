"""docs/clients.md's Pydantic AI recipe against a live gateway: a tool, then the typed output."""

from __future__ import annotations


def test_tool_and_output_type(run_recipe):
    done = run_recipe("pydantic-ai")
    weather = done["result"].output
    assert isinstance(weather, done["Weather"]) and weather.degrees == 18
