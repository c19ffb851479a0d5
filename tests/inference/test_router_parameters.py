"""The public router API's parameters on POST /api/v1/chat/completions, over the loopback server: each sampling
parameter reaches an endpoint that declares it and is left out (and reported in `x-service-omitted-parameters`
and `service_metadata.omitted_parameters`) for one that does not; `provider.require_parameters`; `usage.include`
(LiteLLM's `openrouter/` provider sends it on every call); `transforms`; a top-level `cache_control`; `debug`."""

from __future__ import annotations

import httpx
import orjson
import pytest

from inference.models import Endpoint
from tests.inference.conftest import add_endpoint, wait_idle

KEY = "sk-platform-params-0123456789"
ALL = [
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "top_a",
    "frequency_penalty",
    "presence_penalty",
    "repetition_penalty",
    "seed",
    "logit_bias",
    "stop",
    "cache_control",
]
HELLO = [{"role": "user", "content": "Say hello"}]


@pytest.fixture
def gw(gateway_server, org, fake_upstream, transactional_db, monkeypatch):
    """`(post, add)`: POST a body to a data-plane path with the org's key; `add(api_format, model, provider,
    supported)` adds an endpoint on the fake upstream declaring `supported` (None: no declaration)."""
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("FAKE_PROVIDER_KEY", KEY)

    def add(api_format: str, model: str, provider: str, supported: list[str] | None, price: str = "0.000001"):
        endpoint = add_endpoint(
            model,
            provider,
            api_format=api_format,
            base_url=fake_upstream.base_url,
            api_key_env="FAKE_PROVIDER_KEY",
            upstream_model=model.split("/")[-1],
            prompt_price=price,
            completion_price=price,
        )
        if supported is not None:
            Endpoint.objects.filter(pk=endpoint.pk).update(supported_parameters=supported)
        clear_caches()
        return model

    client = httpx.Client(
        base_url=f"{gateway_server.url}/api/v1",
        headers={"Authorization": f"Bearer {org.inference_key}", "X-Service-Metadata": "enabled"},
        timeout=30,
    )

    def post(path: str, body: dict, **headers) -> httpx.Response:
        return client.post(path, json=body, headers=headers)

    yield post, add
    client.close()
    wait_idle()


PARAMETERS = [
    ("temperature", 0.3, "temperature", 0.3),
    ("top_p", 0.9, "top_p", 0.9),
    ("top_k", 5, "top_k", 5),
    ("min_p", 0.1, "min_p", 0.1),
    ("top_a", 0.2, "top_a", 0.2),
    ("frequency_penalty", 0.5, "frequency_penalty", 0.5),
    ("presence_penalty", 0.4, "presence_penalty", 0.4),
    ("repetition_penalty", 1.1, "repetition_penalty", 1.1),
    ("seed", 7, "seed", 7),
    ("logit_bias", {"50256": -100}, "logit_bias", {"50256": -100}),
    ("stop", "END", "stop", ["END"]),
]


@pytest.mark.parametrize(("name", "value", "sent_as", "sent"), PARAMETERS, ids=[p[0] for p in PARAMETERS])
def test_router_parameter_reaches_a_supporting_endpoint_and_is_left_out_elsewhere(
    gw, fake_upstream, name, value, sent_as, sent
):
    post, add = gw
    supporting = add("openai-chat", "fake/supports-all", "fake-chat-all", ALL)
    plain = add("openai-chat", "fake/supports-none", "fake-chat-none", ["max_tokens"])

    answer = post("/chat/completions", {"model": supporting, "messages": HELLO, name: value})
    assert answer.status_code == 200, answer.text
    assert fake_upstream.last.body[sent_as] == sent
    assert "x-service-omitted-parameters" not in answer.headers
    assert answer.json()["service_metadata"]["omitted_parameters"] == []

    answer = post("/chat/completions", {"model": plain, "messages": HELLO, name: value})
    assert answer.status_code == 200, answer.text
    assert sent_as not in fake_upstream.last.body
    assert answer.headers["x-service-omitted-parameters"] == name
    assert answer.json()["service_metadata"]["omitted_parameters"] == [name]


def test_an_endpoint_without_a_declaration_gets_what_its_format_carries(gw, fake_upstream):
    post, add = gw
    model = add("openai-chat", "fake/undeclared", "fake-chat-undeclared", None)
    answer = post("/chat/completions", {"model": model, "messages": HELLO, "seed": 3, "min_p": 0.2, "top_k": 4})
    assert answer.status_code == 200, answer.text
    body = fake_upstream.last.body
    assert (body["seed"], body["top_k"]) == (3, 4) and "min_p" not in body  # an extension only when declared
    assert answer.headers["x-service-omitted-parameters"] == "min_p"


def test_require_parameters_keeps_only_endpoints_supporting_every_one(gw, fake_upstream):
    post, add = gw
    add("openai-chat", "fake/two-endpoints", "fake-cheap", ["max_tokens"], price="0.0000001")
    add("openai-chat", "fake/two-endpoints", "fake-dear", ["max_tokens", "temperature", "seed"], price="0.00001")
    body = {"model": "fake/two-endpoints", "messages": HELLO, "temperature": 0.2, "seed": 1}

    cheap = post("/chat/completions", body)  # without require_parameters: the cheaper one, parameters left out
    assert cheap.json()["provider"] == "fake-cheap"
    assert cheap.headers["x-service-omitted-parameters"] == "seed, temperature"

    required = post("/chat/completions", {**body, "provider": {"require_parameters": True}})
    assert required.status_code == 200, required.text
    assert required.json()["provider"] == "fake-dear"
    assert (fake_upstream.last.body["temperature"], fake_upstream.last.body["seed"]) == (0.2, 1)

    none = post("/chat/completions", {**body, "top_a": 0.5, "provider": {"require_parameters": True}})
    assert none.status_code == 404
    assert "require_parameters" in none.json()["error"]["message"]
    assert "seed, temperature, top_a" in none.json()["error"]["message"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_usage_include_as_litellm_openrouter_sends_it(gw, fake_upstream, stream):
    """The body LiteLLM's `openrouter/` provider sends (`usage: {include: true}` on every call)."""
    post, add = gw
    model = add("openai-chat", "fake/litellm", "fake-chat-litellm", ALL)
    body = {"model": model, "messages": HELLO, "usage": {"include": True}}
    if stream:
        body["stream"] = True
    answer = post("/chat/completions", body)
    assert answer.status_code == 200, answer.text
    assert "usage" not in fake_upstream.last.body or fake_upstream.last.body["usage"] != {"include": True}
    if stream:
        chunks = [orjson.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: {")]
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["cost"] > 0  # the usage chunk
    else:
        assert answer.json()["usage"]["cost"] > 0


def test_usage_include_false_removes_nothing(gw):
    post, add = gw
    model = add("openai-chat", "fake/usage-false", "fake-chat-usage", ALL)
    answer = post("/chat/completions", {"model": model, "messages": HELLO, "usage": {"include": False}})
    assert answer.status_code == 200 and answer.json()["usage"]["cost"] > 0
    streamed = post(
        "/chat/completions", {"model": model, "messages": HELLO, "stream": True, "usage": {"include": False}}
    )
    assert '"usage"' not in streamed.text  # as without it: the usage chunk comes with stream_options.include_usage
    wrong = post("/chat/completions", {"model": model, "messages": HELLO, "usage": {"include": True, "x": 1}})
    assert wrong.status_code == 400 and wrong.json()["error"]["metadata"]["field"] == "usage.x"


def test_transforms_middle_out_is_the_context_compression_plugin(gw, fake_upstream):
    post, add = gw
    model = add("openai-chat", "fake/compressed", "fake-chat-compress", ALL)
    Endpoint.objects.filter(model__slug=model).update(context_length=200)
    from inference.routing import clear_caches

    clear_caches()
    long = " ".join(f"word{i}" for i in range(2000))
    answer = post("/chat/completions", {"model": model, "messages": [{"role": "user", "content": long}]})
    assert answer.status_code == 200, answer.text  # without it, the prompt goes as it is
    assert fake_upstream.last.body["messages"][0]["content"] == long
    compressed = post(
        "/chat/completions",
        {"model": model, "messages": [{"role": "user", "content": long}], "transforms": ["middle-out"]},
    )
    assert compressed.status_code == 200, compressed.text
    sent = fake_upstream.last.body["messages"][0]["content"]
    assert "removed by context-compression" in sent and len(sent) < len(long)
    assert "transforms" not in fake_upstream.last.body
    stages = [stage["name"] for stage in compressed.json()["service_metadata"]["pipeline"]]
    assert "context-compression" in stages
    assert post("/chat/completions", {"model": model, "messages": HELLO, "transforms": []}).status_code == 200
    bad = post("/chat/completions", {"model": model, "messages": HELLO, "transforms": ["squeeze"]})
    assert bad.status_code == 400 and bad.json()["error"]["metadata"]["field"] == "transforms[0]"


def test_top_level_cache_control(gw, fake_upstream):
    post, add = gw
    mark = {"type": "ephemeral"}
    chat = add("openai-chat", "fake/cache-chat", "fake-chat-cache", ALL)
    anthropic = add("anthropic-messages", "fake/cache-claude", "fake-claude-cache", None)
    plain = add("openai-chat", "fake/cache-plain", "fake-chat-nocache", ["max_tokens"])
    body = {"messages": [{"role": "system", "content": "Be brief."}, *HELLO], "cache_control": mark}

    answer = post("/chat/completions", {**body, "model": chat})  # declared: on the last text part
    assert answer.status_code == 200, answer.text
    last = fake_upstream.last.body["messages"][-1]
    assert last["content"] == [{"type": "text", "text": "Say hello", "cache_control": mark}]
    assert "cache_control" not in fake_upstream.last.body

    assert post("/chat/completions", {**body, "model": anthropic}).status_code == 200  # on the last block
    assert fake_upstream.last.body["messages"][-1]["content"][-1]["cache_control"] == mark

    answer = post("/chat/completions", {**body, "model": plain})  # caches by itself: left out, reported
    assert answer.headers["x-service-omitted-parameters"] == "cache_control"
    assert "cache_control" not in orjson.dumps(fake_upstream.last.body).decode()


def test_debug_echo_upstream_body_on_chat_completions(gw):
    post, add = gw
    model = add("openai-chat", "fake/debug", "fake-chat-debug", ALL)
    body = {"model": model, "messages": HELLO, "stream": True, "debug": {"echo_upstream_body": True}}
    answer = post("/chat/completions", body)
    first = orjson.loads(next(line[6:] for line in answer.text.splitlines() if line.startswith("data: {")))
    assert first["choices"] == [] and first["debug"]["echo_upstream_body"]["model"] == "debug"
    assert first["debug"]["echo_upstream_body"]["messages"] == HELLO
    answer = post("/chat/completions", {**body, "stream": False})  # a JSON answer carries it as a member
    assert answer.json()["debug"]["echo_upstream_body"]["messages"] == HELLO
    plain = post("/chat/completions", {"model": model, "messages": HELLO})
    assert "debug" not in plain.json()


RESPONSES_MEMBERS = [
    ({"min_p": 0.1}, "min_p", 0.1),
    ({"top_a": 0.2}, "top_a", 0.2),
    ({"repetition_penalty": 1.2}, "repetition_penalty", 1.2),
]


@pytest.mark.parametrize(("extra", "sent_as", "sent"), RESPONSES_MEMBERS, ids=[m[1] for m in RESPONSES_MEMBERS])
def test_router_parameter_on_responses(gw, fake_upstream, extra, sent_as, sent):
    post, add = gw
    supporting = add("openai-chat", "fake/r-supports-all", "fake-r-chat-all", ALL)
    plain = add("openai-responses", "fake/r-responses", "fake-r-responses", None)
    answer = post("/responses", {"model": supporting, "input": "Say hello", **extra})
    assert answer.status_code == 200, answer.text
    assert fake_upstream.last.body[sent_as] == sent
    answer = post("/responses", {"model": plain, "input": "Say hello", **extra})
    assert answer.status_code == 200, answer.text
    assert sent_as not in fake_upstream.last.body
    assert answer.json()["service_metadata"]["omitted_parameters"] == [sent_as]


def test_usage_and_transforms_on_responses(gw, fake_upstream):
    post, add = gw
    model = add("openai-responses", "fake/r-usage", "fake-r-usage", None)
    answer = post("/responses", {"model": model, "input": "Say hello", "usage": {"include": True}})
    assert answer.status_code == 200 and answer.json()["usage"]["cost"] > 0
    assert "usage" not in fake_upstream.last.body
    bad = post("/responses", {"model": model, "input": "Say hello", "usage": {"include": "yes"}})
    assert bad.status_code == 400 and bad.json()["error"]["metadata"]["field"] == "usage.include"
    Endpoint.objects.filter(model__slug=model).update(context_length=200)
    from inference.routing import clear_caches

    clear_caches()
    long = " ".join(f"word{i}" for i in range(2000))
    answer = post("/responses", {"model": model, "input": long, "transforms": ["middle-out"]})
    assert answer.status_code == 200, answer.text
    assert "removed by context-compression" in str(fake_upstream.last.body["input"])
    assert "transforms" not in fake_upstream.last.body


@pytest.mark.django_db
def test_every_default_catalog_endpoint_declares_its_parameters_and_models_filter_on_them(org):
    from inference.catalog_loader import read_catalog_file
    from inference.routing import clear_caches

    catalog = read_catalog_file("catalog/default.yaml")
    assert all(entry.get("supported_parameters") for entry in catalog["endpoints"])
    from inference.catalog_loader import load_catalog

    load_catalog(catalog)
    clear_caches()
    client = org.client(org.inference_key)
    tools = client.get("/api/v1/models", {"supported_parameters": "tools"}).json()["data"]
    assert {m["id"] for m in tools} >= {
        "anthropic/claude-3.5-haiku",
        "anthropic/claude-sonnet-4",
        "meta-llama/llama-3.3-70b-instruct",
        "openai/gpt-4.1",
        "openai/gpt-4o-mini",
    }
    seeded = client.get("/api/v1/models", {"supported_parameters": "seed,min_p"}).json()["data"]
    assert [m["id"] for m in seeded] == ["meta-llama/llama-3.3-70b-instruct"]


def test_logprobs_come_back_from_an_endpoint_that_supports_them(gw, fake_upstream):
    post, add = gw
    supporting = add("openai-chat", "fake/logprobs", "fake-chat-logprobs", [*ALL, "logprobs", "top_logprobs"])
    plain = add("openai-chat", "fake/no-logprobs", "fake-chat-no-logprobs", ["max_tokens"])
    body = {"messages": HELLO, "logprobs": True, "top_logprobs": 2}
    answer = post("/chat/completions", {**body, "model": supporting})
    assert answer.status_code == 200, answer.text
    assert (fake_upstream.last.body["logprobs"], fake_upstream.last.body["top_logprobs"]) == (True, 2)
    content = answer.json()["choices"][0]["logprobs"]["content"]
    assert [entry["token"] for entry in content] == answer.json()["choices"][0]["message"]["content"].split()
    assert len(content[0]["top_logprobs"]) == 2
    answer = post("/chat/completions", {**body, "model": plain})
    assert answer.json()["choices"][0]["logprobs"] is None and "logprobs" not in fake_upstream.last.body
    assert answer.headers["x-service-omitted-parameters"] == "top_logprobs"
    streamed = post("/chat/completions", {**body, "model": supporting, "stream": True})
    assert streamed.status_code == 400 and streamed.json()["error"]["metadata"]["field"] == "logprobs"
    alone = post("/chat/completions", {"messages": HELLO, "model": supporting, "top_logprobs": 2})
    assert alone.status_code == 400 and alone.json()["error"]["metadata"]["field"] == "top_logprobs"


def test_include_reasoning(gw, fake_upstream):
    post, add = gw
    model = add("openai-chat", "fake/reasoner", "fake-chat-reasoner", ALL)
    answer = post("/chat/completions", {"model": model, "messages": HELLO, "include_reasoning": True})
    assert answer.status_code == 200, answer.text
    assert fake_upstream.last.body["reasoning_effort"] == "medium"
    refused = post("/chat/completions", {"model": model, "messages": HELLO, "include_reasoning": False})
    assert refused.status_code == 400 and refused.json()["error"]["metadata"]["field"] == "include_reasoning"


def test_router_parameters_of_a_messages_request(gw, fake_upstream):
    post, add = gw
    responses = add("openai-responses", "fake/m-responses", "fake-m-responses", None)
    claude = add("anthropic-messages", "fake/m-claude", "fake-m-claude", None)
    body = {"max_tokens": 50, "messages": HELLO, "top_k": 3, "stop_sequences": ["END"], "temperature": 0.5}
    answer = post("/messages", {**body, "model": responses})
    assert answer.status_code == 200, answer.text
    sent = fake_upstream.last.body
    assert "top_k" not in sent and "stop" not in sent and sent["temperature"] == 0.5
    assert answer.headers["x-service-omitted-parameters"] == "stop, top_k"
    answer = post("/messages", {**body, "model": claude})
    assert answer.status_code == 200 and "x-service-omitted-parameters" not in answer.headers
    sent = fake_upstream.last.body
    assert (sent["top_k"], sent["stop_sequences"], sent["temperature"]) == (3, ["END"], 0.5)


def test_a_stream_names_what_was_left_out_in_its_head(gw, fake_upstream):
    post, add = gw
    plain = add("openai-chat", "fake/s-plain", "fake-s-plain", ["max_tokens"])
    answer = post("/chat/completions", {"model": plain, "messages": HELLO, "stream": True, "seed": 4, "top_a": 0.1})
    assert answer.status_code == 200 and answer.text.rstrip().endswith("data: [DONE]")
    assert answer.headers["x-service-omitted-parameters"] == "seed, top_a"
    assert "seed" not in fake_upstream.last.body and "top_a" not in fake_upstream.last.body
