"""POST /api/v1/embeddings with the official openai SDK over the loopback server: the echo provider offline and
an OpenAI-compatible upstream (the fake upstream's /v1/embeddings), float and base64, dimensions, fallback,
errors, guardrail content filters, budget settlement and the one Generation row."""

from __future__ import annotations

import math
from decimal import Decimal

import httpx
import openai
import pytest

from budgets.models import SpendCounter
from guardrails import services as guardrail_services
from inference.embeddings.vectors import from_base64
from inference.models import Endpoint, Model
from tests.inference.conftest import add_endpoint, generations, wait_idle

KEY = "sk-platform-embeddings-0123456789"
PRICE = "0.0000001"


def embedding_model(slug: str, provider: str, **fields) -> str:
    add_endpoint(slug, provider, **fields)
    Model.objects.filter(slug=slug).update(output_modalities=["embeddings"])
    Endpoint.objects.filter(model__slug=slug).update(supported_parameters=["dimensions", "encoding_format", "user"])
    from inference.routing import clear_caches

    clear_caches()
    return slug


@pytest.fixture
def echo_embed(echo_catalog):
    return embedding_model("echo/echo-embed-1", "echo", prompt_price="0", completion_price="0")


@pytest.fixture
def upstream_embed(echo_catalog, fake_upstream, monkeypatch):
    """`fake/embed` on an OpenAI-compatible provider (the fake upstream), $0.0000001 per input token."""
    monkeypatch.setenv("FAKE_EMBED_KEY", KEY)
    return embedding_model(
        "fake/embed",
        "fake-embed",
        api_format="openai-chat",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_EMBED_KEY",
        prompt_price=PRICE,
        completion_price="0",
        upstream_model="text-embedding-fake",
    )


def _norm(vector) -> float:
    return math.sqrt(sum(v * v for v in vector))


def test_echo_vectors_offline_float_and_base64(sdk, echo_embed):
    default = sdk.embeddings.create(model=echo_embed, input="hello world")  # the SDK asks for base64 by default
    floats = sdk.embeddings.create(model=echo_embed, input="hello world", encoding_format="float")
    assert default.object == "list" and default.model == echo_embed
    vector = default.data[0].embedding
    assert len(vector) == 32 and abs(_norm(vector) - 1) < 1e-5
    assert floats.data[0].embedding == pytest.approx(vector, abs=1e-6)  # float32 on the base64 path
    assert default.usage.prompt_tokens == default.usage.total_tokens == 2  # echo counts words
    batch = sdk.embeddings.create(model=echo_embed, input=["hello world", "other", "hello world"], dimensions=8)
    assert [d.index for d in batch.data] == [0, 1, 2]
    assert all(len(d.embedding) == 8 for d in batch.data)
    assert batch.data[0].embedding == batch.data[2].embedding != batch.data[1].embedding
    tokens = sdk.embeddings.create(model=echo_embed, input=[[1, 2, 3], [4, 5]], encoding_format="float")
    assert len(tokens.data) == 2 and tokens.usage.prompt_tokens == 5
    single = sdk.embeddings.create(model=echo_embed, input=[7, 8, 9], encoding_format="float")
    assert len(single.data) == 1 and single.usage.prompt_tokens == 3


@pytest.mark.parametrize("encoding_format", ["float", "base64", None])
def test_openai_compatible_upstream(sdk, upstream_embed, fake_upstream, encoding_format):
    extra = {"encoding_format": encoding_format} if encoding_format else {}
    raw = sdk.embeddings.with_raw_response.create(
        model=upstream_embed, input=["first", "second"], dimensions=4, user="alice", **extra
    )
    answer = raw.parse()
    found = [d.embedding for d in answer.data]
    if encoding_format == "base64":  # asked explicitly: the SDK hands over the base64 strings as they came
        found = [from_base64(v) for v in found]
    # the fake lists the last input first; the answer is in input order
    assert found[0] == pytest.approx([0.1, 0.2, 0.3, 0.4], abs=1e-6)
    assert found[1] == pytest.approx([0.2, 0.4, 0.6, 0.8], abs=1e-6)
    assert answer.usage.prompt_tokens == 6 and answer.model == upstream_embed
    assert answer.usage.model_extra["cost"] == pytest.approx(6 * float(PRICE))
    sent = fake_upstream.last
    assert sent.path == "/v1/embeddings" and sent.auth == KEY
    assert sent.body["model"] == "text-embedding-fake" and sent.body["input"] == ["first", "second"]
    assert sent.body["dimensions"] == 4
    assert sent.body["encoding_format"] == (encoding_format or "base64")  # the SDK's default is base64
    assert sent.body["user"] not in ("alice", None) and len(sent.body["user"]) == 64  # hashed like safety_identifier

    rows = generations(1)
    assert len(rows) == 1
    row = rows[0]
    assert str(row.id) == raw.headers["x-request-id"]
    assert (row.ingress_format, row.status, row.model, row.provider) == (
        "embeddings",
        "completed",
        upstream_embed,
        "fake-embed",
    )
    assert (row.input_tokens, row.output_tokens, row.streamed) == (6, 0, False)
    assert row.cost == Decimal(PRICE) * 6 and row.output_modalities == ["embeddings"]


def test_generation_lookup_and_budget_settlement(gateway_server, org, sdk, upstream_embed, fake_upstream):
    response = org.client().put(
        f"/api/v1/workspaces/{org.workspace.slug}/budgets/daily", {"limit_usd": 1}, format="json"
    )
    assert response.status_code == 200
    fake_upstream.embedding_usage = False  # no usage from upstream: text charged at its UTF-8 bytes (the bound)
    http = httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}
    )
    answer = http.post("/embeddings", json={"model": upstream_embed, "input": ["12345678", "abcd"]}).json()
    assert answer["id"].startswith("emb_") and answer["usage"]["prompt_tokens"] == 12
    wait_idle()
    counter = SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval="daily")
    assert counter.spent_usd == Decimal(PRICE) * 12 and counter.reserved_units == 0
    generations(1)
    lookup = http.get("/generation", params={"id": answer["id"]}).json()["data"]
    assert lookup["ingress_format"] == "embeddings" and lookup["tokens_prompt"] == 12
    assert Decimal(str(lookup["total_cost"])) == Decimal(PRICE) * 12


def test_fallback_to_the_next_model(sdk, upstream_embed, echo_embed, fake_upstream):
    broken = embedding_model(
        "fake/broken-embed", "fake-embed", upstream_model="fail-503", prompt_price=PRICE, completion_price="0"
    )
    answer = sdk.embeddings.create(
        model=broken, input="hi there", encoding_format="float", extra_body={"models": [echo_embed]}
    )
    assert answer.model == echo_embed and len(answer.data[0].embedding) == 32
    assert [r.model for r in fake_upstream.requests] == ["fail-503"]


def test_upstream_errors_map_like_responses(sdk, upstream_embed, fake_upstream):
    for upstream, error in (("fail-400", openai.BadRequestError), ("fail-429", openai.RateLimitError)):
        embedding_model(f"fake/{upstream}", "fake-embed", upstream_model=upstream, prompt_price=PRICE)
        with pytest.raises(error):
            sdk.embeddings.create(model=f"fake/{upstream}", input="x")
    embedding_model("fake/garbage", "fake-embed", upstream_model="garbage-json", prompt_price=PRICE)
    with pytest.raises(openai.APIStatusError) as caught:
        sdk.embeddings.create(model="fake/garbage", input="x")
    assert caught.value.status_code == 502


@pytest.mark.parametrize("upstream_model", ["garbage-json", "slow-first-byte-3000"])
def test_a_call_the_provider_may_bill_is_charged_and_not_sent_again(
    gateway_server, org, echo_catalog, fake_upstream, settings, upstream_model, monkeypatch
):
    # A 200 that is not JSON, or no answer within the total limit after the send: the provider may bill it, so
    # it is charged its input bound (marked estimated) and not sent to the model's next endpoint (paying twice).
    settings.GATEWAY_UPSTREAM_TOTAL_TIMEOUT = 0.5
    monkeypatch.setenv("FAKE_EMBED_KEY", KEY)
    base = {"api_format": "openai-chat", "base_url": fake_upstream.base_url, "api_key_env": "FAKE_EMBED_KEY"}
    embedding_model("fake/flaky-embed", "flaky-embed", upstream_model=upstream_model, prompt_price=PRICE, **base)
    embedding_model("fake/flaky-embed", "backup-embed", upstream_model="good", prompt_price="0.000001", **base)
    response = org.client().put(
        f"/api/v1/workspaces/{org.workspace.slug}/budgets/daily", {"limit_usd": 1}, format="json"
    )
    assert response.status_code == 200
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as http:
        body = {"model": "fake/flaky-embed", "input": ["12345678", "abcd"]}
        answer = http.post("/embeddings", json=body, headers={"Authorization": f"Bearer {org.inference_key}"})
    assert answer.status_code == (502 if upstream_model == "garbage-json" else 524), answer.text
    assert answer.json()["error"]["metadata"]["provider_name"] == "flaky-embed"
    assert [r.model for r in fake_upstream.requests] == [upstream_model]  # the backup ("good") got nothing
    [row] = generations(1)
    assert (row.status, row.provider, row.usage_estimated, row.input_tokens) == ("failed", "flaky-embed", True, 12)
    assert row.cost == Decimal(PRICE) * 12
    wait_idle()
    counter = SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval="daily")
    assert counter.spent_usd == row.cost and counter.reserved_units == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"input": "x"}, "model"),
        ({"model": "echo/echo-embed-1"}, "input"),
        ({"model": "echo/echo-embed-1", "input": ""}, "input"),
        ({"model": "echo/echo-embed-1", "input": []}, "input"),
        ({"model": "echo/echo-embed-1", "input": ["a", ""]}, "input[1]"),
        ({"model": "echo/echo-embed-1", "input": ["a", [1]]}, "input[1]"),
        ({"model": "echo/echo-embed-1", "input": [[1], []]}, "input[1]"),
        ({"model": "echo/echo-embed-1", "input": [1, -2]}, "input[1]"),
        ({"model": "echo/echo-embed-1", "input": "x", "dimensions": 0}, "dimensions"),
        ({"model": "echo/echo-embed-1", "input": "x", "encoding_format": "int8"}, "encoding_format"),
        ({"model": "echo/echo-embed-1", "input": "x", "input_type": "query"}, "input_type"),
        ({"model": "echo/echo-embed-1", "input": "x", "stream": True}, "stream"),
        ({"model": "@preset/mine", "input": "x"}, "model"),
        ({"model": "echo/echo-1", "input": "x"}, "model"),  # a text model
    ],
)
def test_bad_requests_are_400_naming_the_field(http, echo_embed, body, field):
    response = http.post("/embeddings", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["metadata"]["field"] == field and error["message"].startswith(f"{field}:")


def test_kinds_and_parameters_the_endpoint_cannot_honour(http, echo_embed):
    answer = http.post("/responses", json={"model": echo_embed, "input": "hi"})
    assert answer.status_code == 400
    assert "is an embeddings model; use POST /api/v1/embeddings" in answer.json()["error"]["message"]
    Endpoint.objects.filter(model__slug=echo_embed).update(supported_parameters=[])
    from inference.routing import clear_caches

    clear_caches()
    refused = http.post("/embeddings", json={"model": echo_embed, "input": "hi", "dimensions": 8})
    assert refused.status_code == 400 and refused.json()["error"]["metadata"]["field"] == "dimensions"
    assert http.post("/embeddings", json={"model": echo_embed, "input": "hi"}).status_code == 200
    assert http.get("/embeddings").status_code == 405


def test_guardrail_content_filters_see_every_input(sdk, http, org, upstream_embed, fake_upstream):
    guardrail = guardrail_services.guardrail_create(
        organization=org.organization,
        data={
            "name": "secrets",
            "content_filters": [
                {"pattern": r"BLOCKME", "action": "block"},
                {"pattern": r"acct-\d+", "action": "redact", "label": "[ACCOUNT]"},
            ],
        },
    )
    guardrail_services.guardrail_assign_keys(guardrail=guardrail, key_hashes=[org.inference_hash])
    with pytest.raises(openai.PermissionDeniedError, match="blocked by guardrail 'secrets'"):
        sdk.embeddings.create(model=upstream_embed, input=["fine", "please BLOCKME"])
    assert not fake_upstream.requests
    sdk.embeddings.create(model=upstream_embed, input=["fine", "my acct-1234 here"])
    assert fake_upstream.last.body["input"] == ["fine", "my [ACCOUNT] here"]
    sdk.embeddings.create(model=upstream_embed, input="acct-99")
    assert fake_upstream.last.body["input"] == "[ACCOUNT]"
    tokens = http.post("/embeddings", json={"model": upstream_embed, "input": [[1, 2, 3]]})
    assert tokens.status_code == 403 and tokens.json()["error"]["metadata"]["field"] == "input"
    assert "cannot read token ids" in tokens.json()["error"]["message"]
    assert len(fake_upstream.requests) == 2


@pytest.mark.django_db
def test_openapi_documents_the_operation():
    from rest_framework.test import APIClient

    from inference.embeddings.schema import CHECKERS

    document = APIClient().get("/api/v1/openapi.json").json()
    operation = document["paths"]["/api/v1/embeddings"]["post"]
    assert {"200", "400", "401", "402", "403", "429", "502"} <= operation["responses"].keys()
    request = document["components"]["schemas"]["EmbeddingsRequest"]
    assert request["properties"].keys() == CHECKERS.keys() and request["additionalProperties"] is False
    assert "EmbeddingsList" in document["components"]["schemas"]


@pytest.mark.django_db
def test_catalog_loader_rules_for_embeddings_models():
    from inference.catalog_loader import CatalogError, load_catalog, load_catalog_file

    load_catalog_file("catalog/default.yaml")
    assert Model.objects.get(slug="openai/text-embedding-3-small").output_modalities == ["embeddings"]
    base = {
        "providers": [{"slug": "claude", "api_format": "anthropic-messages", "base_url": "https://api.anthropic.com"}],
        "models": [{"slug": "v/emb", "output_modalities": ["embeddings"]}],
    }
    with pytest.raises(CatalogError, match="has no embeddings API"):
        load_catalog({**base, "endpoints": [{"model": "v/emb", "provider": "claude"}]})
    with pytest.raises(CatalogError, match="cannot be combined"):
        load_catalog({"models": [{"slug": "v/mixed", "output_modalities": ["text", "embeddings"]}]})
    with pytest.raises(CatalogError, match="output_modalities"):
        load_catalog({"models": [{"slug": "v/odd", "output_modalities": ["smell"]}]})


def test_budget_hold_counts_token_ids():
    from dataclasses import replace

    from metering.estimate import input_token_bound
    from tests.budgets.conftest import candidate

    endpoint = replace(candidate(), output_modalities=("embeddings",))
    # an embeddings model bills its input alone: token ids exactly, text at its UTF-8 bytes, + 4 per input
    assert input_token_bound({"model": "m", "input": [[1, 2, 3], [4, 5]]}, endpoint) == 5 + 2 * 4
    assert input_token_bound({"model": "m", "input": [7, 8, 9, 10]}, endpoint) == 4 + 4
    assert input_token_bound({"model": "m", "input": ["abcdef", "é"]}, endpoint) == 6 + 2 + 2 * 4
    assert input_token_bound({"model": "m", "input": "abc"}, endpoint) == 3 + 4


def test_rate_limits_apply_and_hold_no_output_tokens(sdk, org, echo_embed):
    # the hold is the input alone (an embeddings model has no output tokens), not input + context length
    response = org.client().patch(
        f"/api/v1/keys/{org.inference_hash}", {"requests_per_minute": 2, "tokens_per_minute": 100}, format="json"
    )
    assert response.status_code == 200, response.content
    first = sdk.embeddings.with_raw_response.create(model=echo_embed, input="a few words here")
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    sdk.embeddings.create(model=echo_embed, input="again")
    with pytest.raises(openai.RateLimitError):
        sdk.embeddings.create(model=echo_embed, input="third")
