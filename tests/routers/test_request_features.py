"""`modalities` (image output), `image_config`, `prompt_cache_options` and `prompt` end to end: forwarded to the
endpoints whose wire format carries them, the others left out, 400 naming the field when none can."""

from __future__ import annotations

import pytest

from inference.models import Model
from tests.fakes.fake_formats import Reply
from tests.routers.conftest import KEY_ENV, add_endpoint, generations

PNG = "iVBORw0KGgoAAAANSUhEUg=="
PROMPT = {"id": "pmpt_123", "variables": {"city": "Paris"}}
CACHE = {"mode": "explicit", "ttl": "30m"}


@pytest.fixture
def feature_catalog(router_catalog):
    from inference.routing import clear_caches

    base = {"base_url": router_catalog.base_url, "api_key_env": KEY_ENV}
    # img/painter: a cheap Responses endpoint (no image output through it) and a dearer Chat Completions one
    add_endpoint("img/painter", "painter-resp", api_format="openai-responses", upstream_model="painter-r",
                 prompt_price="0.0000001", **base)  # fmt: skip
    add_endpoint("img/painter", "painter-chat", api_format="openai-chat", upstream_model="painter-c",
                 prompt_price="0.000001", **base)  # fmt: skip
    Model.objects.filter(slug="img/painter").update(output_modalities=["text", "image"])
    # mix/writer: a cheap Anthropic endpoint and a dearer Responses one
    add_endpoint("mix/writer", "writer-claude", api_format="anthropic-messages", upstream_model="writer-a",
                 prompt_price="0.0000001", **base)  # fmt: skip
    add_endpoint("mix/writer", "writer-resp", api_format="openai-responses", upstream_model="writer-r",
                 prompt_price="0.000001", **base)  # fmt: skip
    add_endpoint("only/claude", "only-claude", api_format="anthropic-messages", upstream_model="claude-only", **base)
    clear_caches()
    return router_catalog


def post(client, model, **extra):
    return client.post("/responses", json={"model": model, "input": "Paint a red square.", **extra})


def test_image_output_goes_to_the_endpoint_that_can_and_comes_back(client, feature_catalog):
    feature_catalog.script = [Reply(pieces=["Here it is."], images=[f"data:image/png;base64,{PNG}"])]
    config = {"aspect_ratio": "16:9"}
    response = post(client, "img/painter", modalities=["image", "text"], image_config=config)
    assert response.status_code == 200, response.text
    [request] = feature_catalog.requests
    assert request.path == "/v1/chat/completions" and request.model == "painter-c"
    assert request.body["modalities"] == ["image", "text"] and request.body["image_config"] == config
    output = response.json()["output"]
    image = next(i for i in output if i["type"] == "image_generation_call")
    assert image["result"] == PNG and image["output_format"] == "png" and image["status"] == "completed"
    assert output[0]["content"][0]["text"] == "Here it is."
    [row] = generations(1)
    assert row.status == "completed" and row.provider == "painter-chat"


def test_image_output_refusals_name_the_field(client, feature_catalog):
    cases = [
        (post(client, "cheap/small", modalities=["image"]), "modalities"),
        (post(client, "cheap/small", modalities=["image"], image_config={"size": "1K"}), "image_config"),
        (post(client, "img/painter", image_config={"aspect_ratio": "1:1"}), "image_config"),
        (post(client, "img/painter", modalities=["image"], stream=True), "modalities"),
    ]
    for response, field in cases:
        assert response.status_code == 400, response.text
        assert response.json()["error"]["metadata"]["field"] == field
    assert feature_catalog.requests == []
    text_only = post(client, "img/painter", modalities=["text"])
    assert text_only.status_code == 200
    assert feature_catalog.last.model == "painter-r" and "modalities" not in feature_catalog.last.body


def test_a_stored_prompt_goes_only_to_providers_that_store_prompts(client, feature_catalog):
    response = post(client, "mix/writer", prompt=PROMPT)
    assert response.status_code == 200, response.text
    [request] = feature_catalog.requests
    assert request.path == "/v1/responses" and request.model == "writer-r" and request.body["prompt"] == PROMPT
    refused = post(client, "only/claude", prompt=PROMPT)
    assert refused.status_code == 400 and refused.json()["error"]["metadata"]["field"] == "prompt"
    assert "store prompts" in refused.json()["error"]["message"]
    without = post(client, "mix/writer")
    assert without.status_code == 200 and feature_catalog.last.model == "writer-a"  # the cheaper endpoint again
    assert len(feature_catalog.requests) == 2


def test_prompt_cache_options_are_forwarded_with_their_breakpoints(client, feature_catalog):
    marked = [
        {
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "A long shared prefix.",
                    "prompt_cache_breakpoint": {"mode": "explicit"},
                },
                {"type": "input_text", "text": "The question."},
            ],
        }
    ]
    response = client.post("/responses", json={"model": "mix/writer", "input": marked, "prompt_cache_options": CACHE})
    assert response.status_code == 200, response.text
    [request] = feature_catalog.requests
    assert request.model == "writer-r" and request.body["prompt_cache_options"] == CACHE
    assert request.body["input"][0]["content"][0]["prompt_cache_breakpoint"] == {"mode": "explicit"}
    plain = client.post("/responses", json={"model": "cheap/small", "input": marked})
    assert plain.status_code == 200 and "prompt_cache_breakpoint" not in plain.text
    assert "prompt_cache_breakpoint" not in feature_catalog.last.body["input"][0]["content"][0]
    refused = post(client, "only/claude", prompt_cache_options=CACHE)
    assert refused.status_code == 400 and refused.json()["error"]["metadata"]["field"] == "prompt_cache_options"
    assert len(feature_catalog.requests) == 2


def test_the_auto_router_keeps_to_models_that_can_answer(client, feature_catalog):
    feature_catalog.script = [Reply(pieces=["Done."], images=[f"data:image/png;base64,{PNG}"])]
    response = client.post(
        "/responses",
        json={"model": "openrouter/auto", "input": "Paint a red square.", "modalities": ["image", "text"]},
    )
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "img/painter" and feature_catalog.last.model == "painter-c"


def test_image_output_through_chat_completions(router_sdk, feature_catalog):
    feature_catalog.script = [Reply(pieces=["Here it is."], images=[f"data:image/png;base64,{PNG}"])]
    chat = router_sdk.chat.completions.create(
        model="img/painter",
        messages=[{"role": "user", "content": "Paint a red square."}],
        extra_body={"modalities": ["image", "text"], "image_config": {"aspect_ratio": "1:1"}},
    )
    message = chat.choices[0].message
    assert message.content == "Here it is."
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    assert message.model_extra["images"] == [image]
    [request] = feature_catalog.requests
    assert request.model == "painter-c" and request.body["image_config"] == {"aspect_ratio": "1:1"}
    import openai

    with pytest.raises(openai.BadRequestError) as refused:
        router_sdk.chat.completions.create(
            model="cheap/small", messages=[{"role": "user", "content": "Paint."}], extra_body={"modalities": ["image"]}
        )
    assert refused.value.body["metadata"]["field"] == "modalities"
    assert len(feature_catalog.requests) == 1
