"""GET /api/v1/models, /models/{vendor}/{name} and /models/{vendor}/{name}/endpoints over the loopback server,
with the official openai SDK (`client.models.list()`, `client.models.retrieve()`) and raw HTTP."""

from __future__ import annotations

import httpx
import openai
import pytest

from guardrails import services as guardrail_services
from inference.models import Endpoint, Model
from tests.inference.conftest import add_endpoint


@pytest.fixture
def catalog(echo_catalog):
    """echo/echo-1 (free), a text model on two providers, a tools model, an embeddings model."""
    cheap = add_endpoint("acme/chat-1", "cheapco", prompt_price="0.0000001", completion_price="0.0000002", zdr=True)
    dear = add_endpoint("acme/chat-1", "dearco", prompt_price="0.000003", completion_price="0.000015")
    cheap.supported_parameters, cheap.context_length, cheap.max_output_tokens = ["temperature"], 4000, 1000
    cheap.cached_prompt_price = "0.00000005"
    cheap.save()
    dear.supported_parameters = ["temperature", "tools"]
    dear.save()
    Model.objects.filter(slug="acme/chat-1").update(name="Acme Chat 1", input_modalities=["text", "image"])
    add_endpoint("other/tooler", "dearco", prompt_price="0.000001", completion_price="0.000001")
    Endpoint.objects.filter(model__slug="other/tooler").update(supported_parameters=["tools", "tool_choice"])
    add_endpoint("acme/embed-1", "cheapco", prompt_price="0.00000002", completion_price="0")
    Model.objects.filter(slug="acme/embed-1").update(output_modalities=["embeddings"])
    add_endpoint("acme/disabled", "cheapco")
    Model.objects.filter(slug="acme/disabled").update(enabled=False)
    return echo_catalog


def _get(http: httpx.Client, path: str, **params) -> httpx.Response:
    return http.get(path, params=params)


def test_openai_sdk_lists_and_retrieves_models(sdk, catalog):
    models = list(sdk.models.list())
    ids = [m.id for m in models]
    assert ids == ["acme/chat-1", "acme/embed-1", "echo/echo-1", "other/tooler"]
    chat = models[0]
    assert chat.object == "model" and chat.owned_by == "acme" and isinstance(chat.created, int)
    retrieved = sdk.models.retrieve("acme/chat-1")
    assert retrieved.id == "acme/chat-1" and retrieved.owned_by == "acme"
    # the canonical slug names the same model
    assert sdk.models.retrieve("acme/chat-1-2026").id == "acme/chat-1"
    with pytest.raises(openai.NotFoundError, match="Model 'acme/nope' does not exist"):
        sdk.models.retrieve("acme/nope")
    with pytest.raises(openai.NotFoundError):
        sdk.models.retrieve("acme/disabled")


def test_model_object_has_catalog_fields(http, catalog):
    body = _get(http, "/models").json()
    assert body["object"] == "list"
    chat = next(m for m in body["data"] if m["id"] == "acme/chat-1")
    assert chat["name"] == "Acme Chat 1" and chat["canonical_slug"] == "acme/chat-1-2026"
    assert chat["architecture"] == {
        "modality": "text+image->text",
        "input_modalities": ["text", "image"],
        "output_modalities": ["text"],
        "tokenizer": None,
        "instruct_type": None,
    }
    # pricing, context and limits of the cheapest endpoint (the first routing tries); decimal strings
    assert chat["pricing"] == {"prompt": "0.0000001", "completion": "0.0000002", "input_cache_read": "0.00000005"}
    assert chat["context_length"] == 4000
    assert chat["top_provider"] == {
        "provider": "cheapco",
        "context_length": 4000,
        "max_completion_tokens": 1000,
        "is_moderated": False,  # the key's guardrails filter no content
    }
    assert chat["supported_parameters"] == ["temperature", "tools"]  # union over the endpoints
    assert chat["links"] == {"details": "/api/v1/models/acme/chat-1/endpoints"}
    echo = next(m for m in body["data"] if m["id"] == "echo/echo-1")
    assert echo["pricing"] == {"prompt": "0.000001", "completion": "0.000002"}
    assert echo["context_length"] == 8000  # the model's, when the endpoint sets none


def test_filters(http, catalog):
    def ids(**params):
        response = _get(http, "/models", **params)
        assert response.status_code == 200, response.text
        return [m["id"] for m in response.json()["data"]]

    assert ids(supported_parameters="tools") == ["acme/chat-1", "other/tooler"]
    assert ids(supported_parameters="tools,tool_choice") == ["other/tooler"]
    assert ids(supported_parameters="temperature, tools") == ["acme/chat-1"]
    assert ids(output_modalities="embeddings") == ["acme/embed-1"]
    assert ids(output_modalities="text") == ["acme/chat-1", "echo/echo-1", "other/tooler"]
    assert ids(output_modalities="text,embeddings") == ids(output_modalities="all") == ids()


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"output_modalities": "smell"}, "output_modalities"),
        ({"input_modalities": "text,smell"}, "input_modalities"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"sort": "intelligence-high-to-low"}, "sort"),
        ({"sort": "cheapest"}, "sort"),
        ({"min_coding_index": "1"}, "min_coding_index"),
        ({"region": "asia"}, "region"),
        ({"zdr": "false"}, "zdr"),
        ({"min_price": "x"}, "min_price"),
        ({"arch": "GPT"}, "arch"),
        ({"output_modalities": ""}, "output_modalities"),
        ({"supported_parameters": " , "}, "supported_parameters"),
        ({"category": "programming"}, "category"),
    ],
)
def test_bad_query_is_400_naming_it(http, catalog, params, field):
    response = _get(http, "/models", **params)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"].startswith(f"{field}:") and error["metadata"]["field"] == field


def test_endpoints_of_a_model(http, catalog):
    response = _get(http, "/models/acme/chat-1/endpoints")
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["id"] == "acme/chat-1" and data["architecture"]["output_modalities"] == ["text"]
    first, second = data["endpoints"]
    assert [first["provider"], second["provider"]] == ["cheapco", "dearco"]  # routing order: cheapest first
    assert first == {
        "name": "Cheapco | acme/chat-1",
        "model_id": "acme/chat-1",
        "model_name": "Acme Chat 1",
        "provider": "cheapco",
        "provider_name": "Cheapco",
        "tag": "cheapco",
        "context_length": 4000,
        "max_completion_tokens": 1000,
        "max_prompt_tokens": None,
        "pricing": {"prompt": "0.0000001", "completion": "0.0000002", "input_cache_read": "0.00000005"},
        "is_free": False,
        "quantization": None,
        "service_tier": None,
        "supported_parameters": ["temperature"],
        "supports_tool_choice": {"auto": False, "none": False, "required": False, "function": False},
        "supports_implicit_caching": True,  # a cache-read price and no cache-write price
        "supports_diarization": False,
        "native_tools": {},
        "zdr": True,
        "data_policy": {"zdr": True, "trains_on_data": False, "publishes_prompts": False},
        "regions": ["global", "us", "europe"],
        # no traffic yet: no figures (tests/sdk/test_router_catalog.py measures them)
        "uptime_last_5m": None,
        "uptime_last_30m": None,
        "uptime_last_1d": None,
        "latency_last_30m": None,
        "throughput_last_30m": None,
    }
    assert (
        data["description"]
        == "Acme Chat 1 by acme: text+image->text, 4000 tokens of context; served here by Cheapco, Dearco."
    )
    assert second["zdr"] is False and second["context_length"] == 8000
    missing = _get(http, "/models/acme/nope/endpoints")
    assert missing.status_code == 404 and missing.json()["error"]["message"] == "Model 'acme/nope' does not exist"
    assert _get(http, "/models/acme/chat-1/endpoints", sort="price").status_code == 400


def test_guardrail_of_the_key_hides_what_it_may_not_use(http, sdk, org, catalog):
    guardrail = guardrail_services.guardrail_create(
        organization=org.organization,
        data={"name": "no dearco, no echo", "ignored_providers": ["dearco"], "ignored_models": ["echo/echo-1"]},
    )
    guardrail_services.guardrail_assign_keys(guardrail=guardrail, key_hashes=[org.inference_hash])
    assert [m.id for m in sdk.models.list()] == ["acme/chat-1", "acme/embed-1"]  # tooler is only on dearco
    chat = sdk.models.retrieve("acme/chat-1")
    assert chat.model_extra["supported_parameters"] == ["temperature"]  # dearco's parameters are not offered
    endpoints = _get(http, "/models/acme/chat-1/endpoints").json()["data"]["endpoints"]
    assert [e["provider"] for e in endpoints] == ["cheapco"]
    for hidden in ("echo/echo-1", "other/tooler"):
        assert _get(http, f"/models/{hidden}").status_code == 404
        assert _get(http, f"/models/{hidden}/endpoints").status_code == 404
    # a ZDR guardrail keeps only zero-retention endpoints
    guardrail_services.guardrail_update(guardrail=guardrail, data={"ignored_models": [], "enforce_zdr": True})
    endpoints = _get(http, "/models/acme/chat-1/endpoints").json()["data"]["endpoints"]
    assert [e["provider"] for e in endpoints] == ["cheapco"]
    # the management key has no guardrail: it sees everything
    everything = httpx.get(
        f"{str(http.base_url).rstrip('/')}/models", headers={"Authorization": f"Bearer {org.management_key}"}
    )
    assert len(everything.json()["data"]) == 4


def test_needs_a_key(gateway_server, catalog):
    response = httpx.get(f"{gateway_server.url}/api/v1/models")
    assert response.status_code == 401 and response.json()["error"]["code"] == 401


@pytest.mark.django_db
def test_openapi_documents_the_catalog_reads():
    from rest_framework.test import APIClient

    document = APIClient().get("/api/v1/openapi.json").json()
    listing = document["paths"]["/api/v1/models"]["get"]
    from inference.catalog_params import ModelsQuerySerializer

    assert {p["name"] for p in listing["parameters"]} == set(ModelsQuerySerializer().fields)
    assert {"supported_parameters", "output_modalities", "offset", "limit", "sort"} <= set(
        ModelsQuerySerializer().fields
    )
    assert {"200", "400", "401"} <= listing["responses"].keys()
    assert "get" in document["paths"]["/api/v1/models/{vendor}/{name}"]
    assert "404" in document["paths"]["/api/v1/models/{vendor}/{name}/endpoints"]["get"]["responses"]
    for path in ("/model/{author}/{slug}", "/models/count", "/endpoints/zdr", "/providers", "/embeddings/models",
                 "/credits", "/generation"):  # fmt: skip
        assert {"200", "401"} <= document["paths"][f"/api/v1{path}"]["get"]["responses"].keys(), path
