"""Recorded spend stays within every limit under a realistic mix, across two gateway processes on PostgreSQL.

80 requests at once, alternating between two uvicorn processes sharing the database, against a workspace
budget, a key limit and a guardrail limit that each admit about a dozen worst cases. The fake provider bills
by size (tests/fakes/fake_upstream.py) and writes to the output cap it is sent; the mix (seeded): JSON and
streamed requests on the three wire formats, one of which answers without usage; providers that fail after
they had the request (a 200 that is not JSON; no answer or first event in time); json_schema bodies, image
parts and tools; a quarter of the clients go away while their request is in flight (a stream after 0 to 6
deltas, a JSON request 0 to 0.6 s after the provider got it). Afterwards every counter and the sum of
the Generation costs of every limit's scope are within that limit, no hold is left, and `budgets_reconcile`
finds the counters equal to the record.
"""

from __future__ import annotations

import asyncio
import random
import time
from decimal import Decimal

import httpx
import pytest
from django.core.management import call_command

from budgets.models import SpendCounter, SpendReservation
from inference.models import Endpoint, Generation
from metering.cost import usd_to_units
from tests.budgets.test_concurrency import two_gateways  # noqa: F401  (fixture)
from tests.inference.conftest import add_endpoint

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REQUESTS = 80
LIMIT = Decimal("0.04")
MODELS = {  # slug -> (wire format, upstream model)
    "mix/responses": ("openai-responses", "slow-first-byte-800"),
    "mix/chat-no-usage": ("openai-chat", "no-usage/slow-stream-120"),
    "mix/messages": ("anthropic-messages", "slow-stream-120"),
}
# Providers that fail after they had the request, which they may bill (charged the hold, not re-sent): a 200 that
# is not JSON (JSON and stream requests), and an answer not in time (its provider's limits are 0.4 s: a JSON
# answer past `total`, a stream's first event past `first_byte`). About one request in eight, and requests 0-3.
FAULTY = {
    "mix/garbage": ("openai-chat", "garbage-json"),
    "mix/late": ("anthropic-messages", "slow-first-event-3000"),
}
LATE_LIMITS = {"first_byte": 0.4, "total": 0.4}
SCHEMA = {
    "format": {
        "type": "json_schema",
        "name": "answer",
        "schema": {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(100)}},
    }
}
IMAGE = {"type": "input_image", "image_url": "data:image/png;base64," + "iVBORw0KGgo" * 200, "detail": "high"}
TOOLS = [{"type": "function", "name": "lookup", "description": "Look it up", "parameters": {"type": "object"}}]


@pytest.fixture
def mixed_endpoints(fake_upstream):
    fake_upstream.billing = "size"
    fake_upstream.reply_pieces = ["word "] * 8
    for slug, (api_format, upstream) in {**MODELS, **FAULTY}.items():
        endpoint = add_endpoint(
            slug,
            f"p-{slug.split('/')[1]}",
            api_format=api_format,
            base_url=fake_upstream.base_url,
            api_key_env="FAKE_UPSTREAM_KEY",
            prompt_price="0.000001",
            completion_price="0.00001",
            upstream_model=upstream,
            timeouts=LATE_LIMITS if slug == "mix/late" else {},
        )
        Endpoint.objects.filter(pk=endpoint.pk).update(max_output_tokens=40, max_image_tokens=1000)
    return fake_upstream


def body(rng: random.Random, index: int) -> dict:
    text = f"Request {index}. " + "Tell me about money. " * rng.randint(1, 30)
    content = [{"type": "input_text", "text": text}] + ([IMAGE] if rng.random() < 0.3 else [])
    model = rng.choice(list(MODELS)) if rng.random() >= 0.125 else rng.choice(list(FAULTY))
    if index < 4:  # among the first sent: admitted before the limits fill up
        model = list(FAULTY)[index % 2]
    out = {"model": model, "input": [{"role": "user", "content": content}]}
    if rng.random() < 0.3:
        out["text"] = SCHEMA
    if rng.random() < 0.2:
        out["tools"] = TOOLS
    if rng.random() < 0.5:
        out["max_output_tokens"] = rng.randint(5, 60)
    out["stream"] = rng.random() < 0.5
    return out


async def upstream_got(fake, index: int) -> None:
    marker = f"Request {index}. ".encode()
    while not any(marker in r.raw for r in list(fake.requests)):
        await asyncio.sleep(0.01)


async def one(client: httpx.AsyncClient, url: str, key: str, payload: dict, leave, fake, index: int) -> str:
    """One request; `leave` = None (stay), a number of deltas to read before leaving (stream), or seconds to
    wait after the provider got the request before leaving (JSON): both leave while it is in flight."""
    headers = {"Authorization": f"Bearer {key}"}
    async with client.stream("POST", f"{url}/api/v1/responses", json=payload, headers=headers) as response:
        if leave is None or response.status_code != 200:
            await response.aread()
            return str(response.status_code)
        if payload["stream"]:
            deltas = 0
            async for line in response.aiter_lines():
                deltas += "output_text.delta" in line
                if deltas > leave:
                    return "left"
            return "200"
    return "200"


async def leave_json(client, url, key, payload, delay, fake, index) -> str:
    task = asyncio.ensure_future(one(client, url, key, payload, None, fake, index))
    waiter = asyncio.ensure_future(upstream_got(fake, index))
    done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:  # refused (402) before reaching the provider
        waiter.cancel()
        return task.result()
    await asyncio.sleep(delay)
    task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        return "left"


async def warm_up(urls: list[str], key: str) -> None:
    """First requests of a fresh process load the app, the catalog and connections: not what is measured."""
    async with httpx.AsyncClient(timeout=60) as client:
        for url in urls * 3:
            payload = {"model": "mix/responses", "input": "warm", "max_output_tokens": 1}
            headers = {"Authorization": f"Bearer {key}"}
            response = await client.post(f"{url}/api/v1/responses", json=payload, headers=headers)
            assert response.status_code == 200


async def fire(urls: list[str], key: str, fake) -> list[str]:
    rng = random.Random(15)
    calls = []
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=REQUESTS)) as client:
        for index in range(REQUESTS):
            payload, url = body(rng, index), urls[index % 2]
            if rng.random() >= 0.25 or index < 4:  # the first four (faulty providers) stay for their failure
                calls.append(one(client, url, key, payload, None, fake, index))
            elif payload["stream"]:
                calls.append(one(client, url, key, payload, rng.randint(0, 6), fake, index))
            else:
                calls.append(leave_json(client, url, key, payload, rng.uniform(0, 0.6), fake, index))
        return await asyncio.gather(*calls)


def wait_quiet() -> None:
    """Until no hold is left and the Generation count stopped moving (both processes finished)."""
    deadline, last, stable_since = time.monotonic() + 30, -1, time.monotonic()
    while time.monotonic() < deadline:
        count = Generation.objects.count()
        if count != last or SpendReservation.objects.filter(reaped_at__isnull=True).exists():
            last, stable_since = count, time.monotonic()
        elif time.monotonic() - stable_since > 1.0:
            return
        time.sleep(0.1)
    raise AssertionError("the gateways did not settle")


def put_limits(org) -> str:
    client = org.client()
    workspace = org.workspace.id
    budget = client.put(f"/api/v1/workspaces/{workspace}/budgets/daily", {"limit_usd": 0.05}, format="json")
    assert budget.status_code == 200, budget.content
    key = client.patch(f"/api/v1/keys/{org.inference_hash}", {"limit": 0.045}, format="json")
    assert key.status_code == 200, key.content
    guardrail = client.post(
        "/api/v1/guardrails", {"name": "money", "limit_usd": float(LIMIT), "reset_interval": "daily"}, format="json"
    )
    assert guardrail.status_code == 201, guardrail.content
    guardrail_id = guardrail.json()["data"]["id"]
    assigned = client.post(
        f"/api/v1/guardrails/{guardrail_id}/assignments/keys", {"key_hashes": [org.inference_hash]}, format="json"
    )
    assert assigned.status_code == 200, assigned.content
    return guardrail_id


def test_mixed_traffic_on_two_processes_never_records_spend_above_a_limit(two_gateways, org, mixed_endpoints):  # noqa: F811
    asyncio.run(warm_up(two_gateways, org.inference_key))
    wait_quiet()
    Generation.objects.all().delete()
    guardrail_id = put_limits(org)

    outcomes = asyncio.run(fire(two_gateways, org.inference_key, mixed_endpoints))

    assert set(outcomes) <= {"200", "402", "502", "524", "left"}, outcomes
    assert outcomes.count("200") >= 5 and outcomes.count("402") >= 10, outcomes
    wait_quiet()
    rows = list(Generation.objects.all())
    assert len(rows) >= outcomes.count("200")
    assert any(r.usage_estimated and r.status == "completed" for r in rows)  # answers without usage
    # failed after the provider had it (a 200 not JSON, no answer or first event in time): charged, estimated
    faulty = [r for r in rows if r.status == "failed"]
    assert faulty and all(r.usage_estimated and r.cost > 0 and r.error_code in (502, 524) for r in faulty), outcomes
    assert {r.model for r in faulty} <= set(FAULTY)
    # clients that went away mid-flight (which of the JSON and streamed leavers were admitted varies by run)
    assert any(r.status == "cancelled" for r in rows), outcomes
    limits = {
        ("workspace", str(org.workspace.id)): Decimal("0.05"),
        ("api-key", org.inference_hash): Decimal("0.045"),
        ("guardrail", f"{guardrail_id}:key:{org.inference_hash}"): LIMIT,
    }
    total = sum(r.cost for r in rows)
    for (scope, scope_id), limit in limits.items():
        counter = SpendCounter.objects.get(scope=scope, scope_id=scope_id)
        assert counter.reserved_units == 0
        assert counter.spent_units <= usd_to_units(limit, round_up=False), (scope, counter.spent_usd, limit)
        assert total <= limit
    assert total > LIMIT / 2  # the limits were reached for
    call_command("budgets_reconcile")  # raises CommandError when a counter differs from the Generation rows
