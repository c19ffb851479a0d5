"""`auto-router` / `auto-beta-router` end to end through the loopback server: which model the upstream got, what
the client got (model, service_metadata), the Generation row, budgets, guardrails, pins, and the 400s."""

from __future__ import annotations

import time
from decimal import Decimal

import httpx
import pytest

from budgets import services as budget_services
from guardrails import services as guardrail_services
from metering.cost import usd_to_units
from tests.routers.conftest import CODE_PROMPT, TRIVIA_PROMPT, ask, generations, stage_of, upstream_of


def upstream_models(fake) -> list[str]:
    return [r.model for r in fake.requests]


@pytest.mark.parametrize(("tier", "chosen"), [("high", "big/large"), ("medium", "mid/coder"), ("low", "cheap/small")])
def test_cost_tier_picks_within_a_quality_band_of_the_best(client, router_catalog, tier, chosen):
    response = ask(client, CODE_PROMPT, [{"id": "auto-router", "cost_tier": tier}])
    assert response.status_code == 200, response.text
    assert upstream_models(router_catalog) == [upstream_of(chosen)]
    data = response.json()
    assert data["model"] == chosen
    stage = stage_of(data, "auto-router")
    assert stage["data"]["model"] == chosen and stage["data"]["category"] == "programming"
    assert stage["data"]["cost_tier"] == tier and stage["data"]["pinned"] is False
    assert {c["model"] for c in stage["data"]["candidates"]} == {"cheap/small", "mid/coder", "big/large", "trivia/sage"}
    [row] = generations(1)
    assert row.model == chosen and row.requested_model == "openrouter/auto"
    assert any(s.get("name") == "auto-router" for s in row.pipeline)


def test_the_prompt_category_selects_the_quality_score(client, router_catalog):
    response = ask(client, TRIVIA_PROMPT, [{"id": "auto-router"}])
    assert response.status_code == 200, response.text
    stage = stage_of(response.json(), "auto-router")
    assert stage["data"]["category"] == "trivia"
    assert response.json()["model"] == "trivia/sage"  # 0.95 for trivia (0.5 by default)
    assert upstream_models(router_catalog) == [upstream_of("trivia/sage")]


def test_model_slug_alone_and_the_beta_router_and_chat_completions(client, router_catalog, router_sdk):
    response = client.post("/responses", json={"model": "openrouter/auto", "input": CODE_PROMPT})
    assert response.status_code == 200 and response.json()["model"] == "mid/coder"
    beta = ask(client, CODE_PROMPT, [{"id": "auto-beta-router", "cost_tier": "high"}], model="openrouter/auto-beta")
    assert beta.status_code == 200 and beta.json()["model"] == "big/large"
    assert stage_of(beta.json(), "auto-beta-router")["data"]["model"] == "big/large"
    chat = router_sdk.chat.completions.create(
        model="openrouter/auto",
        messages=[{"role": "user", "content": CODE_PROMPT}],
        extra_body={"plugins": [{"id": "auto-router", "cost_tier": "low"}]},
    )
    assert chat.model == "cheap/small" and chat.choices[0].message.content == "Hello from the fake upstream."
    assert upstream_models(router_catalog) == [upstream_of(m) for m in ("mid/coder", "big/large", "cheap/small")]
    rows = generations(3)
    assert [r.model for r in rows] == ["mid/coder", "big/large", "cheap/small"]
    assert rows[0].requested_model == "openrouter/auto"


def test_allowed_and_excluded_patterns_and_context_length(client, router_catalog):
    plugin = {"id": "auto-router", "allowed_models": ["mid/*", "big/*"], "excluded_models": ["mid/*"]}
    response = ask(client, CODE_PROMPT, [plugin])
    assert response.status_code == 200 and response.json()["model"] == "big/large"
    stage = stage_of(response.json(), "auto-router")
    assert [c["model"] for c in stage["data"]["candidates"]] == ["big/large"]
    assert stage["data"]["excluded"] == {"mid/coder": "excluded_models"}
    long_prompt = CODE_PROMPT + " word" * 9000  # about 11,000 tokens: only big/large has the room
    response = ask(client, long_prompt, [{"id": "auto-router", "cost_tier": "low"}])
    assert response.status_code == 200 and response.json()["model"] == "big/large"
    excluded = stage_of(response.json(), "auto-router")["data"]["excluded"]
    assert set(excluded) == {"cheap/small", "mid/coder", "trivia/sage"}
    assert "exceeds its context length" in excluded["cheap/small"]
    compressed = ask(client, long_prompt, [{"id": "auto-router", "cost_tier": "low"}, {"id": "context-compression"}])
    assert compressed.status_code == 200 and compressed.json()["model"] == "cheap/small"  # the prompt is cut to fit
    assert router_catalog.last.model == upstream_of("cheap/small")
    assert len(router_catalog.last.raw) < 8000 * 4
    nothing = ask(client, CODE_PROMPT, [{"id": "auto-router", "allowed_models": ["nobody/*"]}])
    assert nothing.status_code == 404 and "auto-router" in nothing.json()["error"]["message"]
    assert upstream_models(router_catalog) == [upstream_of(m) for m in ("big/large", "big/large", "cheap/small")]


def test_guardrails_narrow_the_pool(client, router_catalog, org):
    rail = guardrail_services.guardrail_create(
        organization=org.organization, data={"name": "no mid", "allowed_models": ["cheap/small", "big/large"]}
    )
    guardrail_services.guardrail_assign_keys(guardrail=rail, key_hashes=[org.inference_hash])
    response = ask(client, CODE_PROMPT, [{"id": "auto-router"}], model="openrouter/auto")
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "big/large"  # mid/coder would be chosen without the guardrail
    excluded = stage_of(response.json(), "auto-router")["data"]["excluded"]
    assert "guardrail" in excluded["mid/coder"] and "guardrail" in excluded["trivia/sage"]
    assert upstream_models(router_catalog) == [upstream_of("big/large")]


def test_the_budget_holds_the_chosen_model(client, router_catalog, org):
    budget_services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("0.1"))
    # big/large: 16,384 output tokens, $0.33 at worst
    refused = ask(client, CODE_PROMPT, [{"id": "auto-router", "cost_tier": "high"}])
    assert refused.status_code == 402, refused.text
    assert router_catalog.requests == []
    served = ask(client, CODE_PROMPT, [{"id": "auto-router"}])  # mid/coder: at most 8,000 output tokens, $0.02
    assert served.status_code == 200 and served.json()["model"] == "mid/coder"
    [row] = [r for r in generations(2) if r.status == "completed"]
    assert row.model == "mid/coder" and row.cost == Decimal("0.000026")  # 12 in × 1e-6 + 7 out × 2e-6
    assert settled_workspace_spend() == (usd_to_units(Decimal("0.000026")), 0)  # (spent, still held)


def settled_workspace_spend(timeout: float = 10.0) -> tuple[int, int]:
    """(spent, reserved) units of the workspace counters once every hold is settled (settlement is batched)."""
    from budgets.models import SpendCounter

    deadline = time.monotonic() + timeout
    while True:
        counters = list(SpendCounter.objects.filter(scope="workspace"))
        figures = (sum(c.spent_units for c in counters), sum(c.reserved_units for c in counters))
        if (figures[0] and not figures[1]) or time.monotonic() > deadline:
            return figures
        time.sleep(0.05)


def test_pin_model_keeps_the_choice_per_session_and_organization(client, router_catalog, gateway_server, other_org):
    plugins = [{"id": "auto-router"}]
    first = ask(client, CODE_PROMPT, plugins, session_id="s1")
    assert first.json()["model"] == "mid/coder"
    pinned = client.post(
        "/responses", json={"input": TRIVIA_PROMPT, "plugins": plugins}, headers={"x-session-id": "s1"}
    )
    assert pinned.json()["model"] == "mid/coder"  # trivia/sage without the pin
    assert stage_of(pinned.json(), "auto-router")["data"]["pinned"] is True
    assert ask(client, TRIVIA_PROMPT, plugins, session_id="s2").json()["model"] == "trivia/sage"
    unpinned = ask(client, TRIVIA_PROMPT, [{"id": "auto-router", "pin_model": False}], session_id="s1")
    assert unpinned.json()["model"] == "trivia/sage"
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {other_org.inference_key}"}
    ) as other:
        assert ask(other, TRIVIA_PROMPT, plugins, session_id="s1").json()["model"] == "trivia/sage"
    again = ask(client, TRIVIA_PROMPT, plugins, session_id="s1")
    assert again.json()["model"] == "mid/coder"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"plugins": [{"id": "auto-router", "cost_tier": "cheap"}]}, "plugins[0].cost_tier"),
        ({"plugins": [{"id": "auto-router", "min_coding_score": 0.5}]}, "plugins[0].min_coding_score"),
        ({"plugins": [{"id": "auto-router", "allowed_models": "openai/*"}]}, "plugins[0].allowed_models"),
        ({"plugins": [{"id": "auto-router", "excluded_models": [""]}]}, "plugins[0].excluded_models[0]"),
        ({"plugins": [{"id": "auto-router", "pin_model": "yes"}]}, "plugins[0].pin_model"),
        ({"plugins": [{"id": "auto-router", "enabled": 1}]}, "plugins[0].enabled"),
        ({"model": "mid/coder", "plugins": [{"id": "auto-router"}]}, "model"),
        ({"model": "openrouter/auto-beta", "plugins": [{"id": "auto-router"}]}, "model"),
        ({"models": ["mid/coder"], "plugins": [{"id": "auto-router"}]}, "models"),
        ({"plugins": [{"id": "auto-router"}, {"id": "pareto-router"}]}, "plugins[1]"),
    ],
)
def test_invalid_router_requests_are_400(client, router_catalog, body, field):
    response = client.post("/responses", json={"input": CODE_PROMPT, **body})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["metadata"]["field"] == field
    assert router_catalog.requests == []


def test_a_disabled_router_plugin_leaves_the_model_to_the_client(client, router_catalog):
    response = ask(client, CODE_PROMPT, [{"id": "auto-router", "enabled": False}], model="cheap/small")
    assert response.status_code == 200 and response.json()["model"] == "cheap/small"
    assert all(s.get("name") != "auto-router" for s in response.json()["service_metadata"]["pipeline"])


def test_the_router_through_anthropic_messages(client, router_catalog, gateway_server, org):
    import anthropic

    sdk = anthropic.Anthropic(base_url=f"{gateway_server.url}/api", api_key=org.inference_key, max_retries=0)
    message = sdk.messages.create(
        model="openrouter/auto",
        max_tokens=100,
        messages=[{"role": "user", "content": TRIVIA_PROMPT}],
    )
    assert message.model == "trivia/sage" and message.content[0].text == "Hello from the fake upstream."
    assert upstream_models(router_catalog) == [upstream_of("trivia/sage")]
    [row] = generations(1)
    assert row.model == "trivia/sage" and row.requested_model == "openrouter/auto" and row.ingress_format == "messages"
