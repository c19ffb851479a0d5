"""docs/clients.md's LiteLLM recipes against a live gateway: its `openai/`, `anthropic/` and `openrouter/`
providers (the last one sends the router API's `usage: {"include": true}`)."""

from __future__ import annotations

import os

import pytest

# LiteLLM fetches its model price list from the network when imported, unless told to use its bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True)
def _litellm_quiet():
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True


def test_openai_and_anthropic_prefixes(run_recipe):
    done = run_recipe("litellm")
    assert done["via_openai"].choices[0].message.content == "Echo: Say hello"
    assert done["via_anthropic"].choices[0].message.content == "Echo: Say hello"


def test_openrouter_prefix(run_recipe):
    done = run_recipe("litellm-openrouter")
    assert done["via_router"].choices[0].message.content == "Echo: Say hello"
    assert done["via_router"].usage.completion_tokens == 3
