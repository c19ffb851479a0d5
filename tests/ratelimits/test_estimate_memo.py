"""The body walk of the worst-case bound shared by the policy steps of one request (metering/estimate.py)."""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

from metering import estimate
from tests.budgets.conftest import candidate

BODY = {"model": "vendor/model", "input": [{"role": "user", "content": "hello " * 50}], "max_output_tokens": 10}


def test_request_prompt_walks_the_body_once_per_body_object():
    ctx = SimpleNamespace(body=dict(BODY), extras={})
    candidates = [candidate(prompt="0.001", context_length=100_000), candidate(max_output_tokens=300)]
    with mock.patch.object(estimate, "_prompt", wraps=estimate._prompt) as walk:
        prompt = estimate.request_prompt(ctx)
        assert estimate.request_prompt(ctx) is prompt and walk.call_count == 1
        tokens = estimate.worst_case_tokens(ctx.body, candidates, prompt=prompt)
        cost = estimate.worst_case_cost(ctx.body, candidates, prompt=estimate.request_prompt(ctx))
        assert walk.call_count == 1
    # The same figures as a walk of its own.
    assert tokens == estimate.worst_case_tokens(ctx.body, candidates)
    assert cost == estimate.worst_case_cost(ctx.body, candidates)
    # A step that replaces the body gets a fresh walk.
    ctx.body = {**BODY, "input": "a much longer input " * 100}
    assert estimate.request_prompt(ctx).text_tokens > prompt.text_tokens
