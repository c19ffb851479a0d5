"""The router SDK's catalog operations (`models`, `endpoints`, `providers`, `embeddings.list_models`) over the
live gateway, parsed by the SDK's typed models; the figures come from the catalog and from Generation rows
written here with known statuses and timings."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from django.utils import timezone
from openrouter import errors

from guardrails import services as guardrail_services
from inference.models import Endpoint, Generation, GenerationStatus, Model
from tests.inference.conftest import add_endpoint


@pytest.fixture
def catalog(transactional_db):
    """echo/echo-1; acme/chat-1 on a cheap ZDR provider and a dear one; an embeddings model."""
    from inference.routing import clear_caches

    clear_caches()
    add_endpoint("echo/echo-1", "echo")
    cheap = add_endpoint("acme/chat-1", "cheapco", prompt_price="0.0000001", completion_price="0.0000002", zdr=True)
    cheap.supported_parameters, cheap.context_length, cheap.max_output_tokens = (
        ["temperature", "tool_choice"],
        4000,
        1000,
    )
    cheap.cached_prompt_price = "0.00000005"
    cheap.save()
    add_endpoint("acme/chat-1", "dearco", prompt_price="0.000003", completion_price="0.000015", regions=["us"])
    Model.objects.filter(slug="acme/chat-1").update(name="Acme Chat 1", input_modalities=["text", "image"])
    add_endpoint("acme/embed-1", "cheapco", prompt_price="0.00000002", completion_price="0")
    Model.objects.filter(slug="acme/embed-1").update(output_modalities=["embeddings"])
    return cheap


def test_models_list_pages_with_total_count_and_links(sdk, catalog):
    first = sdk.models.list()  # what the SDK always sends: offset=0&limit=500
    assert [m.id for m in first.result.data] == ["acme/chat-1", "acme/embed-1", "echo/echo-1"]
    assert first.result.total_count == 3 and first.result.links.next is None
    chat = first.result.data[0]
    assert (chat.pricing.prompt, chat.pricing.completion, chat.pricing.input_cache_read) == (
        "0.0000001",
        "0.0000002",
        "0.00000005",
    )
    assert chat.top_provider.is_moderated is False and chat.top_provider.context_length == 4000
    assert chat.default_parameters is None and chat.per_request_limits is None and chat.supported_voices is None
    assert chat.links.details == "/api/v1/models/acme/chat-1/endpoints"
    assert chat.architecture.input_modalities == ["text", "image"] and chat.context_length == 4000

    page = sdk.models.list(limit=2)
    assert [m.id for m in page.result.data] == ["acme/chat-1", "acme/embed-1"]
    assert page.result.total_count == 3 and page.result.links.next == "/api/v1/models?offset=2&limit=2"
    second = page.next()  # the SDK's own paging: offset=2
    assert [m.id for m in second.result.data] == ["echo/echo-1"] and second.result.links.next is None
    assert second.next() is None


def test_models_list_filters_and_sorts(sdk, catalog):
    def ids(**params):
        return [m.id for m in sdk.models.list(**params).result.data]

    assert ids(sort="pricing-high-to-low") == ["echo/echo-1", "acme/chat-1", "acme/embed-1"]
    assert ids(sort="pricing-low-to-high") == ["acme/embed-1", "acme/chat-1", "echo/echo-1"]
    assert ids(sort="context-high-to-low")[0] in ("acme/embed-1", "echo/echo-1")  # 8000 before chat's 4000
    assert ids(q="CHAT") == ["acme/chat-1"]
    assert ids(model_authors="acme", output_modalities="text") == ["acme/chat-1"]
    assert ids(providers="Dearco") == ["acme/chat-1"]
    assert ids(zdr="true") == ["acme/chat-1", "acme/embed-1"]
    assert ids(region="eu") == ["acme/chat-1", "acme/embed-1", "echo/echo-1"]
    assert ids(input_modalities="image") == ["acme/chat-1"]
    assert ids(max_price=0.5) == ["acme/chat-1", "acme/embed-1"]  # $/M prompt tokens: 0.1 and 0.02, echo's 1
    assert ids(min_output_price=0.1, max_output_price=1) == ["acme/chat-1"]
    assert ids(context=5000) == ["acme/embed-1", "echo/echo-1"]
    assert ids(supported_parameters="tool_choice") == ["acme/chat-1"]
    assert ids(max_age_days=0) == ids()  # every model entered the catalog today
    with pytest.raises(errors.BadRequestResponseError, match="category: not supported"):
        sdk.models.list(category="programming")
    with pytest.raises(errors.BadRequestResponseError, match="sort: 'coding-high-to-low' is not supported"):
        sdk.models.list(sort="coding-high-to-low")


def test_models_get_and_count(sdk, inference_sdk, org, catalog):
    model = sdk.models.get(author="acme", slug="chat-1").data
    assert model.id == "acme/chat-1" and model.name == "Acme Chat 1" and model.top_provider.is_moderated is False
    with pytest.raises(errors.NotFoundResponseError):
        sdk.models.get(author="acme", slug="nope")
    assert sdk.models.count().data.count == 3
    assert sdk.models.count(output_modalities="embeddings").data.count == 1
    # a guardrail filtering the key's content: its requests to every endpoint are moderated
    guardrail = guardrail_services.guardrail_create(
        organization=org.organization,
        data={"name": "pii", "content_filter_builtins": [{"slug": "email", "action": "redact"}]},
    )
    guardrail_services.guardrail_assign_keys(guardrail=guardrail, key_hashes=[org.inference_hash])
    assert inference_sdk.models.get(author="acme", slug="chat-1").data.top_provider.is_moderated is True


def _row(org, endpoint: Endpoint, ago: timedelta, status: str, *, error_code=None, ttft=None, latency=None, tokens=0):
    return Generation.objects.create(
        organization=org.organization,
        key_hash=org.inference_hash,
        endpoint=endpoint,
        model=endpoint.model.slug,
        provider=endpoint.provider.slug,
        status=status,
        error_code=error_code,
        ttft_ms=ttft,
        latency_ms=latency,
        output_tokens=tokens,
        created_at=timezone.now() - ago,
    )


def test_endpoints_uptime_and_latency_from_traffic(sdk, org, catalog):
    now = timedelta(seconds=1)
    for ttft in (100, 200, 300, 400):  # 100 output tokens in the second after the first token: 100 tokens/s
        _row(org, catalog, now, GenerationStatus.COMPLETED, ttft=ttft, latency=ttft + 1000, tokens=100)
    _row(org, catalog, timedelta(minutes=10), GenerationStatus.FAILED, error_code=502)  # down
    _row(org, catalog, now, GenerationStatus.FAILED, error_code=400)  # the request's own fault: not counted
    _row(org, catalog, now, GenerationStatus.CANCELLED)  # the client left: not counted
    _row(org, catalog, timedelta(hours=2), GenerationStatus.FAILED, error_code=429)  # down, a day's window only

    data = sdk.endpoints.list(author="acme", slug="chat-1").data
    assert data.id == "acme/chat-1" and data.description.startswith("Acme Chat 1 by acme")
    cheap, dear = data.endpoints
    assert (cheap.tag, cheap.provider_name, cheap.model_name) == ("cheapco", "Cheapco", "Acme Chat 1")
    assert (cheap.uptime_last_5m, cheap.uptime_last_30m, cheap.uptime_last_1d) == (100.0, 80.0, 66.67)
    assert (cheap.latency_last_30m.p50, cheap.latency_last_30m.p90) == (250.0, 370.0)  # interpolated percentiles
    assert cheap.throughput_last_30m.p50 == 100.0
    assert cheap.pricing.prompt == "0.0000001" and cheap.context_length == 4000
    assert cheap.supports_tool_choice.required is True and cheap.supports_implicit_caching is True
    assert dear.uptime_last_1d is None and dear.latency_last_30m is None  # no traffic: no figures
    assert dear.supports_tool_choice.auto is False and dear.context_length == 8000

    zdr = sdk.endpoints.list_zdr_endpoints().data
    assert [e.name for e in zdr] == ["Cheapco | acme/chat-1", "Cheapco | acme/embed-1"]
    assert zdr[0].uptime_last_30m == 80.0


def test_providers_and_embedding_models(sdk, catalog):
    providers = sdk.providers.list().data
    assert [(p.slug, p.name) for p in providers] == [("cheapco", "Cheapco"), ("dearco", "Dearco"), ("echo", "Echo")]
    assert providers[0].privacy_policy_url is None
    listed = sdk.embeddings.list_models()
    assert [m.id for m in listed.result.data] == ["acme/embed-1"] and listed.result.total_count == 1
    assert listed.result.data[0].architecture.output_modalities == ["embeddings"]


def test_raw_json_for_plain_http_clients(gateway_server, org, catalog):
    headers = {"Authorization": f"Bearer {org.inference_key}"}
    base = f"{gateway_server.url}/api/v1"
    listing = httpx.get(f"{base}/models", params={"offset": 1, "limit": 1}, headers=headers).json()
    assert listing["object"] == "list" and listing["total_count"] == 3
    assert [m["id"] for m in listing["data"]] == ["acme/embed-1"]
    assert listing["links"] == {"next": "/api/v1/models?offset=2&limit=1"}
    assert httpx.get(f"{base}/models/count", headers=headers).json() == {"data": {"count": 3}}
    assert httpx.get(f"{base}/model/acme/chat-1", headers=headers).json()["data"]["id"] == "acme/chat-1"
    providers = httpx.get(f"{base}/providers", headers=headers).json()["data"]
    assert providers[0] == {
        "slug": "cheapco",
        "name": "Cheapco",
        "privacy_policy_url": None,
        "terms_of_service_url": None,
        "status_page_url": None,
        "zdr": True,
        "trains_on_data": False,
        "publishes_prompts": False,
        "regions": ["global", "us", "europe"],
    }
    refused = httpx.get(f"{base}/providers", params={"x": "1"}, headers=headers)
    assert refused.status_code == 400 and refused.json()["error"]["metadata"]["field"] == "x"


def test_models_sorted_by_their_traffic(sdk, org, catalog):
    now = timedelta(seconds=1)
    echo = Endpoint.objects.get(model__slug="echo/echo-1")
    for _ in range(2):  # acme/chat-1: 2 requests, 200 tokens, first token at 300 ms, 100 tokens/s
        _row(org, catalog, now, GenerationStatus.COMPLETED, ttft=300, latency=1300, tokens=100)
    _row(org, echo, now, GenerationStatus.COMPLETED, ttft=100, latency=2100, tokens=500)  # 1 request, 250 tokens/s

    def ids(sort):
        return [m.id for m in sdk.models.list(sort=sort).result.data]

    assert ids("most-popular") == ["acme/chat-1", "echo/echo-1", "acme/embed-1"]  # no traffic: last
    assert ids("top-weekly") == ["echo/echo-1", "acme/chat-1", "acme/embed-1"]
    assert ids("latency-low-to-high") == ["echo/echo-1", "acme/chat-1", "acme/embed-1"]
    assert ids("throughput-high-to-low") == ["echo/echo-1", "acme/chat-1", "acme/embed-1"]
    assert ids("newest")[0] == "acme/embed-1"  # the last model added to the catalog
