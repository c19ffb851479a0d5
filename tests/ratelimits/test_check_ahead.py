"""The rate-limit check sent ahead: while a key's last decision left room, its Redis check travels while the
budget hold is taken, and the decision is awaited before anything answers. Seen by a client and in the
database: the hold is taken before the Redis reply arrives; a refusal reads as if the check had come first
(429 with its headers, before a 402 of the hold, no Generation row, the hold released).

Needs Redis (REDIS_URL): without it the database holds the windows and the check is always awaited first.
"""

from __future__ import annotations

import os
import threading
import time
from decimal import Decimal

import httpx
import pytest

from accounts import services
from accounts.models import ApiKey, Workspace
from budgets.models import SpendCounter, SpendReservation
from gateway_project.policy_cache import bump_policy_version
from inference.models import Generation
from ratelimits import limiter, redis_store
from tests.fakes.tcp_blackhole import BlackholeProxy
from tests.inference.conftest import add_endpoint, wait_idle

REAL_REDIS = os.environ.get("REDIS_URL", "")
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not REAL_REDIS, reason="needs Redis (REDIS_URL)"),
]
BODY = {"model": "echo/echo-1", "input": "a b c", "max_output_tokens": 4}  # worst case $0.004


@pytest.fixture
def priced_echo(transactional_db):
    from inference.routing import clear_caches

    clear_caches()
    return add_endpoint("echo/echo-1", "echo", prompt_price="0", completion_price="0.001")


@pytest.fixture
def redis_proxy(settings):
    """The rate limits' Redis behind a proxy that can delay its replies; this process's clients start afresh."""
    host, port = REAL_REDIS.split("//")[1].split("/")[0].split(":")
    proxy = BlackholeProxy(host, int(port)).start()
    settings.GATEWAY_RATE_LIMIT_REDIS_URL = f"redis://127.0.0.1:{proxy.port}/{REAL_REDIS.rsplit('/', 1)[1]}"
    settings.GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS = 10_000
    _forget_clients()
    yield proxy
    wait_idle()
    proxy.stop()
    _forget_clients()


def _forget_clients() -> None:
    redis_store._clients.clear()
    redis_store._unsettled.clear()
    redis_store._leases.clear()
    limiter._room.clear()
    limiter.redis_health.reset()


def put_budget(org, limit: float) -> None:
    response = org.client().put(
        f"/api/v1/workspaces/{org.workspace.slug}/budgets/daily", {"limit_usd": limit}, format="json"
    )
    assert response.status_code == 200, response.content


def ask(gateway_server, key: str) -> httpx.Response:
    return httpx.post(
        f"{gateway_server.url}/api/v1/responses", json=BODY, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


def workspace_counter(org) -> SpendCounter:
    return SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval="daily")


def test_the_hold_is_taken_while_the_rate_limit_reply_travels(gateway_server, org, priced_echo, redis_proxy):
    put_budget(org, 5)
    ApiKey.objects.filter(hash=org.inference_hash).update(requests_per_minute=100)
    bump_policy_version()
    assert ask(gateway_server, org.inference_key).status_code == 200  # the key's window has room
    wait_idle()
    redis_proxy.reply_delay = 2.0
    answers: list[httpx.Response] = []
    sent = time.monotonic()
    thread = threading.Thread(target=lambda: answers.append(ask(gateway_server, org.inference_key)))
    thread.start()
    held_after = None
    while thread.is_alive() and held_after is None:
        if SpendReservation.objects.exists():
            held_after = time.monotonic() - sent
        time.sleep(0.01)
    thread.join()
    redis_proxy.reply_delay = 0.0
    # The hold was in the database while the check's reply was still held back by the proxy (2 s).
    assert held_after is not None and held_after < 1.5
    assert answers[0].status_code == 200 and answers[0].headers["x-ratelimit-remaining-requests"] == "98"
    assert time.monotonic() - sent >= 2.0
    wait_idle()
    assert not SpendReservation.objects.exists()
    assert workspace_counter(org).spent_usd == Decimal("0.008")


def test_a_refused_check_sent_ahead_reads_as_if_it_came_first(gateway_server, org, priced_echo, redis_proxy):
    put_budget(org, 5)
    Workspace.objects.filter(pk=org.workspace.id).update(requests_per_minute=4)
    bump_policy_version()
    wait_idle()
    organization = ApiKey.objects.get(hash=org.inference_hash).organization
    second, third = (services.api_key_create(organization=organization, name=n).raw_key for n in ("b", "c"))
    # Each of these keys' last decision leaves room (3, then 2 requests left): their next checks go ahead.
    assert ask(gateway_server, org.inference_key).status_code == 200
    assert ask(gateway_server, third).status_code == 200
    assert [ask(gateway_server, second).status_code for _ in range(2)] == [200, 200]  # the window is full
    wait_idle()
    before = workspace_counter(org)

    refused = ask(gateway_server, org.inference_key)  # sent ahead on the stale hint, refused by Redis
    assert refused.status_code == 429
    assert refused.json()["error"]["metadata"]["rate_limit"]["scope"] == "workspace"
    assert refused.headers["x-ratelimit-limit-requests"] == "4"
    assert refused.headers["x-ratelimit-remaining-requests"] == "0"
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    wait_idle()
    after = workspace_counter(org)
    assert (after.spent_units, after.reserved_units) == (before.spent_units, 0)  # the hold, if any, released
    assert not SpendReservation.objects.exists()
    assert Generation.objects.count() == 4  # the refusal is not a recorded request

    # The hold itself refused (the budget is spent) while the check sent ahead refuses too: the 429 comes first.
    put_budget(org, 0.016)
    refused = ask(gateway_server, third)
    assert refused.status_code == 429, refused.json()
    assert refused.headers["x-ratelimit-remaining-requests"] == "0"
    wait_idle()
    assert Generation.objects.count() == 4 and not SpendReservation.objects.exists()
    # Once the window has room again the budget speaks: a 402 (checked here with a key of its own).
    assert workspace_counter(org).spent_usd == Decimal("0.016")


@pytest.fixture
def http_endpoint(transactional_db, fake_upstream, monkeypatch):
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("FAKE_UPSTREAM_KEY", "sk-fake")
    add_endpoint(
        "fake/slow-first-byte-400",  # the answer starts 0.4 s after the request arrived (seen by the test)
        "fake",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_UPSTREAM_KEY",
        prompt_price="0",
        completion_price="0.001",
    )
    return fake_upstream


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_over_http_the_request_is_written_only_once_the_checks_passed(
    gateway_server, org, http_endpoint, redis_proxy, stream
):
    """The upstream request is built while the checks travel and written once they passed; a refusal sends
    nothing upstream."""
    put_budget(org, 5)
    ApiKey.objects.filter(hash=org.inference_hash).update(requests_per_minute=3)
    bump_policy_version()
    body = {"model": "fake/slow-first-byte-400", "input": "a b c", "max_output_tokens": 4, "stream": stream}

    def post() -> httpx.Response:
        return httpx.post(
            f"{gateway_server.url}/api/v1/responses",
            json=body,
            headers={"Authorization": f"Bearer {org.inference_key}"},
            timeout=30,
        )

    assert post().status_code == 200  # the key's window has room: the next check goes ahead
    wait_idle()
    redis_proxy.reply_delay = 1.0
    answers: list[httpx.Response] = []
    sent = time.monotonic()
    thread = threading.Thread(target=lambda: answers.append(post()))
    thread.start()
    arrived_after = None
    while thread.is_alive() and arrived_after is None:
        if len(http_endpoint.requests) == 2:
            arrived_after = time.monotonic() - sent
        time.sleep(0.005)
    thread.join()
    redis_proxy.reply_delay = 0.0
    assert answers[0].status_code == 200, answers[0].text
    assert arrived_after is not None and arrived_after >= 1.0  # not before the check's reply came back
    assert answers[0].headers["x-ratelimit-remaining-requests"] == "1"

    assert post().status_code == 200
    wait_idle()
    refused = post()  # the window is full: refused, and nothing reached the upstream
    assert refused.status_code == 429, refused.text
    assert len(http_endpoint.requests) == 3
    wait_idle()
    assert Generation.objects.count() == 3 and not SpendReservation.objects.exists()
