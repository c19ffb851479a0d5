"""docs/clients.md's router SDK (`openrouter`) recipe against a live gateway: chat and responses."""

from __future__ import annotations


def test_chat_and_responses(run_recipe):
    done = run_recipe("openrouter-sdk")
    assert done["completion"].choices[0].message.content == "Echo: Say hello"
    assert done["response"].output[0].content[0].text == "Echo: Say hello"
