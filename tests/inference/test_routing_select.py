"""Candidate selection from a catalog snapshot: models, provider preferences, filters, ordering (no I/O)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gateway_project.api.errors import GatewayError
from inference.pipeline.context import Candidate, Context, EndpointFilter
from inference.routing import clear_caches, remember_session, select_candidates


def cand(model: str, provider: str, prompt: str = "0.000001", completion: str = "0.000002", **flags) -> Candidate:
    fields = dict(
        endpoint_id=uuid.uuid4(),
        model_slug=model,
        canonical_slug=model,
        vendor=model.split("/")[0],
        public=True,
        provider_slug=provider,
        provider_name=provider,
        api_format="echo",
        base_url="",
        platform_key_env="",
        upstream_model=model,
        prompt_price=Decimal(prompt),
        completion_price=Decimal(completion),
        cached_prompt_price=None,
        is_free=False,
        context_length=None,
        max_output_tokens=None,
        supported_parameters=(),
        zdr=False,
        trains_on_data=False,
        publishes_prompts=False,
        regions=("global",),
        input_modalities=("text",),
        output_modalities=("text",),
    )
    fields.update(flags)
    return Candidate(**fields)


SNAPSHOT = {
    "a/one": [
        cand("a/one", "cheap", "0.000001", "0.000001", trains_on_data=True),
        cand(
            "a/one",
            "mid",
            "0.000002",
            "0.000002",
            zdr=True,
            supported_parameters=("temperature", "tools"),
            api_format="openai-chat",
        ),
        cand("a/one", "dear", "0.000005", "0.000005", zdr=True),
    ],
    "b/two": [cand("b/two", "cheap", "0.0000001", "0.0000001"), cand("b/two", "mid", "0.000003", "0.000003")],
}


def ctx(**body) -> Context:
    return Context(
        request_id=str(uuid.uuid4()),
        created_at=datetime.now(UTC),
        started=time.perf_counter(),
        method="POST",
        path="/api/v1/responses",
        host="",
        headers={},
        raw_body=b"",
        body=body,
        session_id=body.get("session_id"),
    )


def picked(**body) -> list[tuple[str, str]]:
    return [(c.model_slug, c.provider_slug) for c in select_candidates(ctx(**body), SNAPSHOT)]


def test_default_is_cheapest_first_then_fallback_models():
    assert picked(model="a/one", models=["b/two"]) == [
        ("a/one", "cheap"),
        ("a/one", "mid"),
        ("a/one", "dear"),
        ("b/two", "cheap"),
        ("b/two", "mid"),
    ]


def test_models_only_and_duplicates():
    assert picked(models=["b/two", "a/one", "b/two"])[:2] == [("b/two", "cheap"), ("b/two", "mid")]


def test_unknown_model_404_unknown_fallback_skipped_and_missing_model_400():
    assert picked(model="a/one", models=["zz/none"]) == picked(model="a/one")  # the unknown fallback is skipped
    with pytest.raises(GatewayError) as caught:
        picked(model="zz/none", models=["a/one"])
    assert caught.value.status == 404 and "zz/none" in caught.value.message
    with pytest.raises(GatewayError) as caught:
        picked(input="hi")
    assert caught.value.status == 400 and caught.value.metadata == {"field": "model"}


def test_order_puts_providers_first():
    assert picked(model="a/one", provider={"order": ["dear", "mid"]}) == [
        ("a/one", "dear"),
        ("a/one", "mid"),
        ("a/one", "cheap"),
    ]


def test_allow_fallbacks_false():
    assert picked(model="a/one", provider={"allow_fallbacks": False}) == [("a/one", "cheap")]
    assert picked(model="a/one", provider={"order": ["dear", "mid"], "allow_fallbacks": False}) == [
        ("a/one", "dear"),
        ("a/one", "mid"),
    ]


def test_only_and_ignore():
    assert picked(model="a/one", provider={"only": ["mid", "dear"]}) == [("a/one", "mid"), ("a/one", "dear")]
    assert picked(model="a/one", provider={"ignore": ["cheap"]}) == [("a/one", "mid"), ("a/one", "dear")]


def test_data_collection_deny_and_zdr():
    assert picked(model="a/one", provider={"data_collection": "deny"}) == [("a/one", "mid"), ("a/one", "dear")]
    assert picked(model="a/one", provider={"zdr": True}) == [("a/one", "mid"), ("a/one", "dear")]


def test_require_parameters():
    assert picked(model="a/one", temperature=0.5, provider={"require_parameters": True}) == [("a/one", "mid")]
    assert len(picked(model="a/one", temperature=0.5)) == 3


def test_max_price_per_million_tokens():
    assert picked(model="a/one", provider={"max_price": {"prompt": 2, "completion": 2}}) == [
        ("a/one", "cheap"),
        ("a/one", "mid"),
    ]


def test_max_price_per_request_compares_the_fixed_fee():
    snapshot = {
        "a/one": [
            cand("a/one", "fee", "0.000001", "0.000001", request_price=Decimal("0.02")),
            cand("a/one", "nofee", "0.000002", "0.000002"),
        ]
    }
    chosen = select_candidates(ctx(model="a/one", provider={"max_price": {"request": 0.01}}), snapshot)
    assert [c.provider_slug for c in chosen] == ["nofee"]
    assert [c.provider_slug for c in select_candidates(ctx(model="a/one"), snapshot)] == ["fee", "nofee"]


def test_sort_partition_none_and_route_alias():
    cross = [("b/two", "cheap"), ("a/one", "cheap"), ("a/one", "mid"), ("b/two", "mid"), ("a/one", "dear")]
    assert picked(model="a/one", models=["b/two"], provider={"sort": {"by": "price", "partition": "none"}}) == cross
    assert picked(model="a/one", models=["b/two"], route="sort") == cross
    assert picked(model="a/one", models=["b/two"], route="fallback")[0] == ("a/one", "cheap")


def test_nothing_left_says_why():
    with pytest.raises(GatewayError) as caught:
        picked(model="a/one", provider={"only": ["nobody"]})
    assert caught.value.status == 404 and "provider.only" in caught.value.message
    c = ctx(model="a/one")
    c.endpoint_filters.append(EndpointFilter("blocked by guardrail 'strict'", lambda cand: cand.provider_slug == "x"))
    with pytest.raises(GatewayError) as caught:
        select_candidates(c, SNAPSHOT)
    assert "blocked by guardrail 'strict'" in caught.value.message
    assert caught.value.metadata == {"reason": "blocked by guardrail 'strict'"}


def test_endpoint_filters_remove_candidates():
    c = ctx(model="a/one")
    c.endpoint_filters.append(EndpointFilter("no cheap", lambda cand: cand.provider_slug != "cheap"))
    assert [x.provider_slug for x in select_candidates(c, SNAPSHOT)] == ["mid", "dear"]


def test_sticky_session_tries_last_endpoint_first():
    clear_caches()
    remember_session(ctx(session_id="sess-9"), SNAPSHOT["a/one"][2])
    assert picked(model="a/one", session_id="sess-9")[0] == ("a/one", "dear")
    assert picked(model="a/one", session_id="other")[0] == ("a/one", "cheap")
    assert picked(model="a/one", session_id="sess-9", provider={"order": ["mid"]})[0] == ("a/one", "mid")
    clear_caches()
