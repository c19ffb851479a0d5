"""A member the gateway does not know, over the loopback server, in each wire format: forwarded as sent to an
upstream speaking the request's own format (whose 400 comes back as a provider error), a 400 naming it when the
request would be translated, and candidates that cannot carry it skipped in favour of one that can."""

from __future__ import annotations

import httpx
import pytest

from tests.inference.conftest import add_endpoint, wait_idle

KEY = "sk-platform-unknown-0123456789"
NEW = {"frobnicate": {"level": 3}}
HELLO = [{"role": "user", "content": "Say hello"}]
NATIVE = {"chat": "openai-chat", "responses": "openai-responses", "messages": "anthropic-messages"}
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}


def body_of(ingress: str, model: str) -> dict:
    if ingress == "responses":
        return {"model": model, "input": "Say hello", **NEW}
    if ingress == "messages":
        return {"model": model, "max_tokens": 50, "messages": HELLO, **NEW}
    return {"model": model, "messages": HELLO, **NEW}


@pytest.fixture
def gw(gateway_server, org, fake_upstream, transactional_db, monkeypatch):
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("FAKE_PROVIDER_KEY", KEY)

    def add(api_format: str, model: str, upstream: str = "fake-model", price: str = "0.000001") -> str:
        add_endpoint(
            model,
            f"fake-{api_format}",
            api_format=api_format,
            base_url=fake_upstream.base_url,
            api_key_env="FAKE_PROVIDER_KEY",
            upstream_model=upstream,
            prompt_price=price,
            completion_price=price,
        )
        clear_caches()
        return model

    client = httpx.Client(
        base_url=f"{gateway_server.url}/api",
        headers={"Authorization": f"Bearer {org.inference_key}"},
        timeout=30,
    )
    yield client, add
    client.close()
    wait_idle()


@pytest.mark.parametrize("ingress", ["chat", "responses", "messages"])
def test_unknown_member_goes_as_sent_to_a_same_format_upstream(gw, fake_upstream, ingress):
    client, add = gw
    model = add(NATIVE[ingress], f"fake/native-{ingress}")
    answer = client.post(PATHS[ingress], json=body_of(ingress, model))
    assert answer.status_code == 200, answer.text
    assert fake_upstream.last.body["frobnicate"] == {"level": 3}


@pytest.mark.parametrize("ingress", ["chat", "responses", "messages"])
def test_the_upstreams_own_400_comes_back_as_a_provider_error(gw, fake_upstream, ingress):
    client, add = gw
    model = add(NATIVE[ingress], f"fake/refuses-{ingress}", upstream="fail-400")
    answer = client.post(PATHS[ingress], json=body_of(ingress, model))
    assert answer.status_code == 400, answer.text
    assert fake_upstream.last.body["frobnicate"] == {"level": 3}
    error = answer.json()["error"]
    assert error["message"].startswith("Provider rejected the request")
    assert error["metadata"]["provider_name"] == f"fake-{NATIVE[ingress]}"


@pytest.mark.parametrize(
    ("ingress", "other"),
    [("chat", "anthropic-messages"), ("responses", "openai-chat"), ("messages", "openai-responses")],
)
def test_unknown_member_is_a_400_naming_it_when_translated(gw, fake_upstream, ingress, other):
    client, add = gw
    model = add(other, f"fake/translated-{ingress}")
    answer = client.post(PATHS[ingress], json=body_of(ingress, model))
    assert answer.status_code == 400, answer.text
    text = answer.text
    assert "frobnicate: unknown parameter" in text
    assert fake_upstream.requests == []


def test_candidates_that_cannot_carry_it_are_skipped(gw, fake_upstream):
    client, add = gw
    add("anthropic-messages", "fake/mixed", price="0.0000001")  # cheaper, but translated
    add("openai-chat", "fake/mixed", price="0.00001")
    answer = client.post(PATHS["chat"], json=body_of("chat", "fake/mixed"))
    assert answer.status_code == 200, answer.text
    assert answer.json()["provider"] == "fake-openai-chat"
    assert fake_upstream.last.body["frobnicate"] == {"level": 3}
    known = client.post(PATHS["chat"], json={"model": "fake/mixed", "messages": HELLO})
    assert known.json()["provider"] == "fake-anthropic-messages"  # without it, the usual (cheapest) order


def test_refused_members_say_why(gw):
    client, add = gw
    model = add("openai-chat", "fake/refused")
    answer = client.post(PATHS["chat"], json={"model": model, "messages": HELLO, "prediction": {"type": "content"}})
    assert answer.status_code == 400
    assert (
        answer.json()["error"]["message"]
        == "prediction: is not supported: the gateway does not offer predicted outputs"
    )
