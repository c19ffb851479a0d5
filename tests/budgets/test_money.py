"""Money you can trust, through the real gateway on a loopback port and a fake provider that bills what it is
sent (tests/fakes/fake_upstream.py, `billing = "size"`): each case of the issue "Money you can trust" that
used to overspend or under-charge, with recorded spend <= the limit and the Generation row == the counter."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from decimal import Decimal

import httpx
import pytest

from budgets.models import SpendCounter, SpendReservation
from inference.models import Endpoint
from inference.routing import candidate_from_endpoint
from metering.estimate import worst_case_cost
from tests.budgets.test_e2e import put_budget
from tests.inference.conftest import add_endpoint, generations, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)
KEY_ENV = "FAKE_MONEY_KEY"
FORMATS = ("openai-responses", "openai-chat", "anthropic-messages")


@pytest.fixture
def fake(fake_upstream, monkeypatch, transactional_db):
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv(KEY_ENV, "sk-fake")
    fake_upstream.billing = "size"
    return fake_upstream


def priced(fake, upstream_model: str, *, api_format="openai-responses", price="0.00001", **fields) -> Endpoint:
    """A fake endpoint at `price` per input and output token, with extra catalog fields."""
    slug = f"money/{upstream_model}-{api_format}"
    endpoint = add_endpoint(
        slug,
        f"money-{api_format}",
        api_format=api_format,
        base_url=fake.base_url,
        api_key_env=KEY_ENV,
        prompt_price=price,
        completion_price=price,
        upstream_model=upstream_model,
    )
    if fields:
        Endpoint.objects.filter(pk=endpoint.pk).update(**fields)
        endpoint.refresh_from_db()
    return endpoint


def hold_of(endpoint: Endpoint, body: dict) -> Decimal:
    endpoint = Endpoint.objects.select_related("model", "provider").get(pk=endpoint.pk)
    return worst_case_cost(body, [candidate_from_endpoint(endpoint)])


def counter(org) -> SpendCounter:
    wait_idle()
    return SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval="daily")


async def post_all(gateway_server, key: str, bodies: list[dict]) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=len(bodies))) as client:
        url = f"{gateway_server.url}/api/v1/responses"
        return await asyncio.gather(*(client.post(url, json=body, headers=headers) for body in bodies))


def test_a_large_json_schema_counts_and_is_refused_past_the_budget(gateway_server, org, fake):
    """Was: a 700 KB text.format.schema admitted 20 times on a $0.01 budget (372x): the estimate skipped it."""
    endpoint = priced(fake, "schema", max_output_tokens=50, context_length=1_000_000)
    schema = {"type": "object", "properties": {f"field_{i}": {"type": "string"} for i in range(1400)}}
    text = {"format": {"type": "json_schema", "name": "big", "schema": schema}}
    body = {"model": endpoint.model.slug, "input": "hi", "text": text}
    put_budget(org, "daily", 0.5)
    one = hold_of(endpoint, body)
    assert Decimal("0.25") < one < Decimal("0.5")  # ~90 KB of schema: at most one fits

    answers = asyncio.run(post_all(gateway_server, org.inference_key, [body] * 8))

    assert sorted(a.status_code for a in answers) == [200] + [402] * 7
    [row] = generations(1)
    assert row.input_tokens * 4 >= len(fake.last.raw)  # the provider billed the schema ...
    assert row.cost <= one  # ... and that stayed within the request's hold
    assert counter(org).spent_usd == row.cost <= Decimal("0.5")


def test_exactly_the_budgeted_number_of_streams_pass_and_spend_stays_within(gateway_server, org, fake):
    """Was: 11 of 50 streams passed a budget for 10 (prompt framing made each cost more than its estimate).
    The provider holds its first byte for 2 s, so every request is admitted or refused while the first ten are in
    flight (with 300 ms, a loaded machine let early streams settle below their holds and admit a few more)."""
    endpoint = priced(fake, "slow-first-byte-2000", price="0.000001")
    body = {"model": endpoint.model.slug, "input": "123456789", "max_output_tokens": 20, "stream": True}
    limit = hold_of(endpoint, body) * 10
    put_budget(org, "daily", float(limit))

    answers = asyncio.run(post_all(gateway_server, org.inference_key, [body] * 30))

    assert [a.status_code for a in answers].count(200) == 10
    rows = generations(10)
    assert all(r.output_tokens == 20 and not r.usage_estimated for r in rows)  # the model wrote to its cap
    assert counter(org).spent_usd == sum(r.cost for r in rows) <= limit


def test_a_cut_stream_is_charged_within_its_output_cap_and_hold(gateway_server, org, fake):
    """Was: clients leaving after 19 of 20 deltas were charged 29 output tokens for a cap of 20."""
    endpoint = priced(fake, "slow-stream-50", price="0.001")
    fake.reply_pieces = ["a long piece of streamed text " * 3] * 20
    body = {"model": endpoint.model.slug, "input": "go", "max_output_tokens": 20, "stream": True}
    put_budget(org, "daily", 5)
    with httpx.Client(timeout=10) as client:
        headers = {"Authorization": f"Bearer {org.inference_key}"}
        url = f"{gateway_server.url}/api/v1/responses"
        with client.stream("POST", url, json=body, headers=headers) as response:
            deltas = 0
            for line in response.iter_lines():
                deltas += "response.output_text.delta" in line
                if deltas == 19:
                    break
    [row] = generations(1)
    assert row.status == "cancelled" and row.usage_estimated
    assert row.output_tokens == 20  # what was streamed counts, within the cap sent upstream
    assert row.cost <= hold_of(endpoint, body) and counter(org).spent_usd == row.cost


def test_a_stream_cut_at_the_response_size_limit_is_charged_at_most_its_hold(gateway_server, org, fake, settings):
    """Was: $82.50 charged on a $1 budget whose hold was $0.0002 (the streamed bytes were priced uncapped)."""
    settings.GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES = 50_000  # about 45 frames: the stream is well under way
    endpoint = priced(fake, "slow-stream-20", price="0.000001")
    fake.reply_pieces = ["x" * 1000] * 100
    body = {"model": endpoint.model.slug, "input": "go", "max_output_tokens": 30, "stream": True}
    put_budget(org, "daily", 1)
    with httpx.Client(timeout=10) as client:
        headers = {"Authorization": f"Bearer {org.inference_key}"}
        with client.stream("POST", f"{gateway_server.url}/api/v1/responses", json=body, headers=headers) as response:
            text = "".join(response.iter_lines())
    assert "response.output_text.delta" in text and "response.failed" in text, text[:300]
    [row] = generations(1)
    assert (row.status, row.usage_estimated, row.output_tokens) == ("failed", True, 30)
    assert row.cost <= hold_of(endpoint, body) and counter(org).spent_usd == row.cost


@pytest.mark.parametrize("api_format", FORMATS)
@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_without_usage_is_charged_from_the_estimate_and_marked(
    gateway_server, org, fake, api_format, stream, caplog
):
    """Was: recorded at $0, budget untouched, nothing logged."""
    fake.omit_usage = True
    endpoint = priced(fake, "no-usage", api_format=api_format, max_output_tokens=64)
    body = {"model": endpoint.model.slug, "input": "hello there", "stream": stream}
    put_budget(org, "daily", 5)
    with caplog.at_level(logging.WARNING, logger="gateway.accounting"):
        with httpx.Client(timeout=10) as client:
            headers = {"Authorization": f"Bearer {org.inference_key}"}
            response = client.post(f"{gateway_server.url}/api/v1/responses", json=body, headers=headers)
        assert response.status_code == 200
        [row] = generations(1)
    assert row.usage_estimated and row.status == "completed"
    assert 0 < row.output_tokens <= 64 and row.input_tokens >= len(b"hello there")
    assert row.cost == (row.input_tokens + row.output_tokens) * Decimal("0.00001")
    assert counter(org).spent_usd == row.cost
    assert "without usage" in caplog.text
    if not stream:
        assert response.json()["usage"]["cost"] == float(row.cost)


@pytest.mark.parametrize("api_format", FORMATS)
def test_the_output_cap_the_hold_assumed_is_sent_upstream(gateway_server, org, fake, api_format):
    """Was: the hold assumed the endpoint's cap, but nothing sent it: the provider could write far more."""
    endpoint = priced(fake, "capped", api_format=api_format, max_output_tokens=77)
    put_budget(org, "daily", 5)
    with httpx.Client(timeout=10) as client:
        headers = {"Authorization": f"Bearer {org.inference_key}"}
        body = {"model": endpoint.model.slug, "input": "hello"}
        assert client.post(f"{gateway_server.url}/api/v1/responses", json=body, headers=headers).status_code == 200
        body["max_output_tokens"] = 500  # more than the endpoint's cap: lowered to it
        assert client.post(f"{gateway_server.url}/api/v1/responses", json=body, headers=headers).status_code == 200
    sent = [r.body for r in fake.requests]
    cap_field = {"openai-responses": "max_output_tokens", "openai-chat": "max_tokens"}.get(api_format, "max_tokens")
    assert [b[cap_field] for b in sent] == [77, 77]
    rows = generations(2)
    assert all(r.output_tokens == 77 for r in rows)
    assert counter(org).spent_usd == sum(r.cost for r in rows)


TIERS = {"priority": "2", "flex": "0.5", "fast": "6"}


@pytest.mark.parametrize(
    ("extra", "held", "multiplier"),
    [
        ({}, 6, 1),  # auto: the account's default may be any tier, so held at the dearest; priced at 1x
        ({"service_tier": "priority"}, 2, 2),
        ({"service_tier": "flex"}, 1, Decimal("0.5")),  # held at no less than 1x
        ({"speed": "fast"}, None, None),
    ],
)
def test_tiers_are_priced_by_the_endpoint_multipliers(gateway_server, org, fake, extra, held, multiplier):
    """Was: service_tier priority / fast and messages speed fast billed at base prices."""
    fake.billing = "fixed"  # 12 input tokens (4 cached), 7 output (2 reasoning); no tier reported
    endpoint = priced(fake, "tiered", price="0.001", tier_multipliers=TIERS, max_output_tokens=10)
    put_budget(org, "daily", 5)
    body = {"model": endpoint.model.slug, "input": "hello", **extra}
    tiered = candidate_from_endpoint(Endpoint.objects.select_related("model", "provider").get(pk=endpoint.pk))
    untiered = replace(tiered, tier_multipliers=())
    with httpx.Client(timeout=10) as client:
        headers = {"Authorization": f"Bearer {org.inference_key}"}
        response = client.post(f"{gateway_server.url}/api/v1/responses", json=body, headers=headers)
    if "speed" in extra:  # not a Responses field (the Messages ingress carries it): refused, nothing spent
        assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "speed"
        return
    assert worst_case_cost(body, [tiered]) == worst_case_cost(body, [untiered]) * held
    assert response.status_code == 200, response.text
    [row] = generations(1)
    assert row.cost == 19 * Decimal("0.001") * multiplier == counter(org).spent_usd
    assert not SpendReservation.objects.exists()


@pytest.mark.parametrize("api_format", FORMATS)
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("requested", "reported", "multiplier"), [(None, "priority", 2), ("priority", "default", 1)])
def test_a_request_is_priced_at_the_tier_the_provider_reports(
    gateway_server, org, fake, api_format, stream, requested, reported, multiplier
):
    """Was: priced at the requested tier: an `auto` request the provider served at priority was billed at 1x."""
    if api_format == "anthropic-messages" and reported == "default":
        reported = "standard"  # Anthropic's name of the default tier
    fake.billing, fake.service_tier = "fixed", reported
    endpoint = priced(
        fake, "tiered", api_format=api_format, price="0.001", tier_multipliers=TIERS, max_output_tokens=10
    )
    body = {"model": endpoint.model.slug, "input": "hello", "stream": stream}
    if requested:
        body["service_tier"] = requested
    put_budget(org, "daily", 5)
    with httpx.Client(timeout=10) as client:
        headers = {"Authorization": f"Bearer {org.inference_key}"}
        response = client.post(f"{gateway_server.url}/api/v1/responses", json=body, headers=headers)
    assert response.status_code == 200, response.text
    [row] = generations(1)
    assert row.cost == 19 * Decimal("0.001") * multiplier == counter(org).spent_usd
    assert row.cost <= hold_of(endpoint, body)


def test_anthropic_fast_mode_is_sent_and_priced_at_the_fast_tier(gateway_server, org, fake):
    """Was: Messages `speed: fast` priced at the fast tier but never sent upstream (silently standard speed)."""
    import anthropic

    fake.billing, fake.service_tier = "fixed", "fast"  # the answer's usage reports speed: fast
    endpoint = priced(fake, "tiered", api_format="anthropic-messages", price="0.001", tier_multipliers=TIERS)
    put_budget(org, "daily", 5)
    client = anthropic.Anthropic(base_url=f"{gateway_server.url}/api", api_key=org.inference_key, max_retries=0)
    client.messages.create(
        model=endpoint.model.slug,
        max_tokens=10,
        messages=[{"role": "user", "content": "hello"}],
        extra_body={"speed": "fast"},
    )
    sent = fake.requests[-1]
    assert sent.body["speed"] == "fast" and "fast-mode-2026-02-01" in sent.headers.get("anthropic-beta", "")
    [row] = generations(1)
    assert row.cost == 19 * Decimal("0.001") * 6 == counter(org).spent_usd


@pytest.mark.parametrize("path", ["/responses", "/chat/completions"])
def test_speed_is_refused_where_the_contract_does_not_define_it(gateway_server, org, fake, path):
    endpoint = priced(fake, "tiered", tier_multipliers=TIERS)
    body = {"model": endpoint.model.slug, "speed": "fast"}
    body |= {"input": "hi"} if path == "/responses" else {"messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=10) as client:
        headers = {"Authorization": f"Bearer {org.inference_key}"}
        response = client.post(f"{gateway_server.url}/api/v1{path}", json=body, headers=headers)
    assert response.status_code == 400 and "speed" in response.json()["error"]["message"]
    assert not fake.requests


@pytest.mark.parametrize(
    ("upstream_model", "status"),
    [("fail-524", 524), ("cut-stream", 502)],  # the provider's edge gave up on a working origin; a body cut short
)
@pytest.mark.parametrize("api_format", FORMATS)
def test_a_json_call_that_failed_after_it_was_sent_is_charged_its_hold(
    gateway_server, org, fake, api_format, upstream_model, status
):
    """Was: recorded at $0, although the provider may bill a request it worked on."""
    endpoint = priced(fake, upstream_model, api_format=api_format, max_output_tokens=64)
    body = {"model": endpoint.model.slug, "input": "hello there"}
    put_budget(org, "daily", 5)
    with httpx.Client(timeout=30) as client:
        headers = {"Authorization": f"Bearer {org.inference_key}"}
        response = client.post(f"{gateway_server.url}/api/v1/responses", json=body, headers=headers)
    assert response.status_code == status, response.text
    [row] = generations(1)
    assert row.status == "failed" and row.usage_estimated and row.provider == endpoint.provider.slug
    assert row.output_tokens == 64  # the whole output cap: the answer it may have billed
    assert row.cost == hold_of(endpoint, body) and counter(org).spent_usd == row.cost


def with_backup(fake, endpoint: Endpoint) -> Endpoint:
    """A second, dearer provider of the same model that would answer: routing's next candidate."""
    backup = add_endpoint(
        endpoint.model.slug,
        f"money-backup-{endpoint.provider.api_format}",
        api_format=endpoint.provider.api_format,
        base_url=fake.base_url,
        api_key_env=KEY_ENV,
        prompt_price="0.00002",
        completion_price="0.00002",
        upstream_model="good",
    )
    Endpoint.objects.filter(pk=backup.pk).update(max_output_tokens=endpoint.max_output_tokens)
    return backup


def assert_charged_its_hold_once(fake, org, endpoint: Endpoint, body: dict, upstream_model: str, error_code: int):
    """The one Generation row of a call the provider may have billed: failed, on the first provider, its whole
    output cap, charged its worst case on that endpoint (its hold), the counter exactly that; nothing re-sent."""
    assert [r.model for r in fake.requests] == [upstream_model]  # the backup ("good") got nothing
    [row] = generations(1)
    assert (row.status, row.error_code, row.provider) == ("failed", error_code, endpoint.provider.slug)
    assert row.usage_estimated and row.output_tokens == 64  # the whole output cap: what it may have billed
    assert row.cost == hold_of(endpoint, body) > 0
    spent = counter(org)
    assert spent.spent_usd == row.cost and spent.reserved_units == 0
    assert not SpendReservation.objects.exists()


@pytest.mark.parametrize("upstream_model", ["slow-first-byte-3000", "slow-first-event-3000"])
@pytest.mark.parametrize("api_format", FORMATS)
def test_a_stream_without_its_first_event_in_time_is_charged_its_hold_and_not_re_sent(
    gateway_server, org, fake, settings, api_format, upstream_model
):
    """Was: sent to the next candidate and recorded at $0, although the first provider had the request (no head
    in time, or a 200 head and no event) and may bill it: the fallback paid twice, the first bill unrecorded."""
    settings.GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT = 0.3
    endpoint = priced(fake, upstream_model, api_format=api_format, max_output_tokens=64)
    with_backup(fake, endpoint)
    body = {"model": endpoint.model.slug, "input": "hello there", "stream": True}
    put_budget(org, "daily", 5)
    with httpx.Client(timeout=30) as client:
        headers = {"Authorization": f"Bearer {org.inference_key}"}
        response = client.post(f"{gateway_server.url}/api/v1/responses", json=body, headers=headers)
    assert response.status_code == 524, response.text
    assert response.headers["content-type"].startswith("application/json")  # nothing was streamed yet
    error = response.json()["error"]
    assert error["code"] == 524 and error["metadata"]["error_type"] == "timeout"
    assert error["metadata"]["provider_name"] == endpoint.provider.slug
    assert_charged_its_hold_once(fake, org, endpoint, body, upstream_model, 524)


@pytest.mark.parametrize(
    ("upstream_model", "stream"),
    [("garbage-json", False), ("garbage-json", True), ("malformed-sse", True)],
    # 200 application/json that is not JSON (also to a stream request); a 200 stream whose frame is not JSON
)
@pytest.mark.parametrize("api_format", FORMATS)
def test_a_200_answer_that_cannot_be_read_is_charged_its_hold_and_not_re_sent(
    gateway_server, org, fake, api_format, upstream_model, stream
):
    """Was: sent to the next candidate and recorded at $0, although the provider answered success (it did the
    work and may bill it)."""
    endpoint = priced(fake, upstream_model, api_format=api_format, max_output_tokens=64)
    with_backup(fake, endpoint)
    body = {"model": endpoint.model.slug, "input": "hello there", "stream": stream}
    put_budget(org, "daily", 5)
    with httpx.Client(timeout=30) as client:
        headers = {"Authorization": f"Bearer {org.inference_key}"}
        response = client.post(f"{gateway_server.url}/api/v1/responses", json=body, headers=headers)
    assert response.status_code == 502, response.text  # before any event: the envelope, even to a stream
    error = response.json()["error"]
    assert error["code"] == 502 and "malformed upstream" in error["message"]
    assert error["metadata"]["provider_name"] == endpoint.provider.slug
    assert_charged_its_hold_once(fake, org, endpoint, body, upstream_model, 502)
