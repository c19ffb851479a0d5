"""The price sheet of an endpoint: catalog validation (no silent $0), and the cost of usage with cache reads,
cache writes (5 minutes, 1 hour), reasoning, a per-request fee and tier multipliers."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from inference.catalog_loader import CatalogError, load_catalog
from inference.models import Endpoint
from inference.pipeline.context import Usage
from inference.providers.anthropic_parse import parse_usage as anthropic_usage
from inference.providers.openai_chat_parse import parse_usage as chat_usage
from inference.providers.openai_responses import parse_usage as responses_usage
from metering.prices import usage_cost
from tests.budgets.conftest import candidate


def catalog(**endpoint) -> dict:
    return {
        "providers": [{"slug": "p", "api_format": "echo"}],
        "models": [{"slug": "p/m"}],
        "endpoints": [{"model": "p/m", "provider": "p", **endpoint}],
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        ({"completion_price": "0.1"}, "'prompt_price' is required (or mark the endpoint 'is_free: true')"),
        ({"prompt_price": "0.1"}, "'completion_price' is required"),
        ({"prompt_price": "x", "completion_price": "1"}, "'prompt_price' must be a decimal string"),
        ({"prompt_price": "-1", "completion_price": "1"}, "must be a finite number, not negative"),
        ({"prompt_price": "1", "completion_price": "1", "tier_multipliers": ["priority"]}, "'tier_multipliers' must"),
        ({"prompt_price": "1", "completion_price": "1", "tier_multipliers": {"fast": "NaN"}}, "tier_multipliers.fast"),
        ({"prompt_price": "1", "completion_price": "1", "max_image_tokens": 0}, "'max_image_tokens' must be"),
        ({"prompt_price": "1", "completion_price": "1", "is_free": "yes"}, "'is_free' must be a boolean"),
    ],
)
def test_an_endpoint_without_a_valid_price_is_refused_at_load(endpoint, message):
    with pytest.raises(CatalogError) as refused:
        load_catalog(catalog(**endpoint))
    assert message in str(refused.value) and str(refused.value).startswith("endpoints[0]")
    assert not Endpoint.objects.exists()  # all or nothing


@pytest.mark.django_db
def test_free_is_explicit_and_the_whole_sheet_loads():
    load_catalog(catalog(is_free=True))
    assert Endpoint.objects.get().is_free and Endpoint.objects.get().prompt_price == 0
    sheet = {
        "prompt_price": "0.000003",
        "completion_price": "0.000015",
        "cached_prompt_price": "0.0000003",
        "cache_write_5m_price": "0.00000375",
        "cache_write_1h_price": "0.000006",
        "reasoning_price": "0.00002",
        "request_price": "0.001",
        "tier_multipliers": {"priority": "1.8", "fast": 6},
        "max_image_tokens": 1600,
        "max_file_tokens": 100000,
    }
    load_catalog(catalog(**sheet), update=True)
    row = Endpoint.objects.get()
    assert (row.cache_write_1h_price, row.request_price, row.max_image_tokens) == (
        Decimal("0.000006"),
        Decimal("0.001"),
        1600,
    )
    assert row.tier_multipliers == {"priority": "1.8", "fast": "6"} and row.max_audio_tokens is None


def test_every_price_of_the_sheet_applies():
    sheet = replace(
        candidate("0.000003", "0.000015"),
        cached_prompt_price=Decimal("0.0000003"),
        cache_write_5m_price=Decimal("0.00000375"),
        cache_write_1h_price=Decimal("0.000006"),
        reasoning_price=Decimal("0.00002"),
        request_price=Decimal("0.001"),
        tier_multipliers=(("priority", Decimal("2")),),
    )
    usage = Usage(
        input_tokens=1000,
        cached_tokens=100,
        cache_write_5m_tokens=200,
        cache_write_1h_tokens=300,
        output_tokens=50,
        reasoning_tokens=20,
    )
    tokens = (
        400 * Decimal("0.000003")
        + 100 * Decimal("0.0000003")
        + 200 * Decimal("0.00000375")
        + 300 * Decimal("0.000006")
        + 30 * Decimal("0.000015")
        + 20 * Decimal("0.00002")
    )
    assert usage_cost(sheet, usage) == tokens + Decimal("0.001")
    assert usage_cost(sheet, usage, "priority") == tokens * 2 + Decimal("0.001")
    assert usage_cost(sheet, usage, "flex") == tokens + Decimal("0.001")  # not listed: 1x
    assert usage_cost(replace(sheet, is_free=True), usage) == 0
    assert usage_cost(sheet, replace(usage, cost=Decimal("0.5"))) == Decimal("0.5")  # the provider's figure wins


def test_empty_prices_fall_back_to_the_base_ones():
    base = candidate("0.001", "0.002")
    usage = Usage(input_tokens=10, cached_tokens=2, cache_write_5m_tokens=3, cache_write_1h_tokens=4, output_tokens=5)
    assert usage_cost(base, usage) == 10 * Decimal("0.001") + 5 * Decimal("0.002")
    only_5m = replace(base, cache_write_5m_price=Decimal("0.01"))  # the 1 hour write costs the 5 minute price
    assert usage_cost(only_5m, usage) == 3 * Decimal("0.001") + 7 * Decimal("0.01") + 5 * Decimal("0.002")


def test_anthropic_cache_writes_are_split_by_duration():
    usage = anthropic_usage(
        {
            "input_tokens": 10,
            "cache_read_input_tokens": 20,
            "cache_creation_input_tokens": 70,
            "cache_creation": {"ephemeral_5m_input_tokens": 30, "ephemeral_1h_input_tokens": 40},
            "output_tokens": 5,
        }
    )
    assert (usage.input_tokens, usage.cached_tokens, usage.cache_write_5m_tokens, usage.cache_write_1h_tokens) == (
        100,
        20,
        30,
        40,
    )
    assert anthropic_usage({"input_tokens": 1, "cache_creation_input_tokens": 9}).cache_write_5m_tokens == 9


def test_an_answer_without_usage_is_told_apart_from_zero_usage():
    for parse in (anthropic_usage, chat_usage, responses_usage):
        assert parse(None).reported is False
    assert responses_usage({"input_tokens": 0, "output_tokens": 0}).reported is True
