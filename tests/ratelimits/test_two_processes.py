"""Two gateway processes, one key (or two keys of one workspace limit): 3x the limit in one minute admits
exactly the limit.

Two uvicorn subprocesses serve the whole ASGI app against the pytest PostgreSQL database, with the
rate-limit windows in Redis, then in the database once that Redis went away (a stopped TCP proxy in front
of it), and in the database of a deployment without Redis. Requests are sent at once, alternating between
the processes; the fake upstream answers slowly, so every admitted request still holds its tokens while the
others arrive. About 25 s per test: starting two uvicorn processes dominates.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlparse

import httpx
import pytest
from django.conf import settings
from django.db import connection

from accounts import services
from accounts.models import ApiKey
from ratelimits.models import RateLimitEntry
from tests.budgets.test_concurrency import BASE_DIR, database_url, wait_for_port
from tests.conftest import free_port
from tests.fakes.tcp_proxy import TcpProxy
from tests.inference.conftest import add_endpoint

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LIMIT = 10
# Slow enough that every admitted request still holds its worst case when the last one arrives (a settled
# request frees the difference between its hold and its usage, which may admit more: that is the design).
BODY = {"model": "fake/slow-first-byte-1500", "input": "hello", "max_output_tokens": 20}


def _gateways(env_overrides: dict[str, str]):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL): two processes share the database")
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "DJANGO_SECRET_KEY": "ratelimit-test",
        "FAKE_UPSTREAM_KEY": "sk-fake",
        "GATEWAY_LOG_LEVEL": "ERROR",
        **env_overrides,
    }
    processes, urls = [], []
    with tempfile.TemporaryFile() as log:
        try:
            for _ in range(2):
                port = free_port()
                command = [sys.executable, "-m", "uvicorn", "gateway_project.asgi:application", "--host", "127.0.0.1"]
                command += ["--port", str(port), "--lifespan", "off", "--log-level", "warning", "--no-access-log"]
                processes.append(subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=log, stderr=log))
                urls.append(f"http://127.0.0.1:{port}")
            for process, url in zip(processes, urls, strict=True):
                wait_for_port(int(url.rsplit(":", 1)[1]), process)
            yield urls
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    process.kill()


@pytest.fixture
def slow_endpoint(transactional_db, fake_upstream):
    return add_endpoint(
        "fake/slow-first-byte-1500",
        "fake",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_UPSTREAM_KEY",
    )


@pytest.fixture
def redis_proxy():
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")
    target = urlparse(settings.REDIS_URL)
    proxy = TcpProxy(target.port or 6379, target.hostname or "127.0.0.1").start()
    yield proxy, f"redis://127.0.0.1:{proxy.port}{target.path or '/0'}"
    proxy.stop()


async def fire(urls: list[str], key: str | list[str], count: int) -> list[httpx.Response]:
    """`count` requests at once, alternating between the processes (and, given several keys, between the keys:
    each key goes to both processes)."""
    keys = [key] if isinstance(key, str) else key
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=count)) as client:

        async def one(index: int) -> httpx.Response:
            headers = {"Authorization": f"Bearer {keys[(index // 2) % len(keys)]}"}
            return await client.post(f"{urls[index % 2]}/api/v1/responses", json=BODY, headers=headers)

        return await asyncio.gather(*(one(i) for i in range(count)))


def new_key(org, **limits) -> tuple[str, str]:
    organization = ApiKey.objects.get(hash=org.inference_hash).organization
    created = services.api_key_create(organization=organization, name="limited", **limits)
    return created.raw_key, created.api_key.hash


def check_answers(answers: list[httpx.Response], dimension: str, limit: int) -> None:
    statuses = [answer.status_code for answer in answers]
    assert statuses.count(200) == LIMIT and statuses.count(429) == 2 * LIMIT, statuses
    for answer in answers:
        assert answer.headers[f"x-ratelimit-limit-{dimension}"] == str(limit)
        assert int(answer.headers[f"x-ratelimit-remaining-{dimension}"]) >= 0
        assert answer.headers[f"x-ratelimit-reset-{dimension}"]
        if answer.status_code == 429:
            assert 1 <= int(answer.headers["retry-after"]) <= 60
            assert answer.json()["error"]["metadata"]["rate_limit"]["limit_type"] == dimension


def requests_scenario(urls: list[str], org, fake_upstream) -> str:
    """3x the request limit at once: exactly the limit admitted, and only those went upstream."""
    fake_upstream.requests.clear()
    raw, key_hash = new_key(org, requests_per_minute=LIMIT)
    check_answers(asyncio.run(fire(urls, raw, 3 * LIMIT)), "requests", LIMIT)
    assert len(fake_upstream.requests) == LIMIT
    return f"api-key:{key_hash}"


def workspace_scenario(urls: list[str], org, fake_upstream) -> str:
    """A workspace limit shared by two keys of it (without limits of their own), 3x the limit at once over both
    keys and both processes: exactly the limit admitted, the 429s name the workspace."""
    fake_upstream.requests.clear()
    organization = ApiKey.objects.get(hash=org.inference_hash).organization
    workspace = services.workspace_create(organization=organization, name="limited", requests_per_minute=LIMIT)
    raws = [
        services.api_key_create(organization=organization, name=f"member-{i}", workspace=workspace).raw_key
        for i in range(2)
    ]
    answers = asyncio.run(fire(urls, raws, 3 * LIMIT))
    check_answers(answers, "requests", LIMIT)
    assert len(fake_upstream.requests) == LIMIT
    for answer in answers:
        if answer.status_code == 429:
            assert answer.json()["error"]["metadata"]["rate_limit"]["scope"] == "workspace"
    return f"workspace:{workspace.id}"


def tokens_scenario(urls: list[str], org, fake_upstream) -> tuple[str, list[int], int]:
    """3x the token limit at once (in worst-case holds): exactly the limit admitted."""
    probe, _ = new_key(org, tokens_per_minute=10_000_000)
    probes = asyncio.run(fire(urls, probe, 2))  # warms both processes up, too
    # One request's worst case: what the first admitted of the two saw remaining.
    held = 10_000_000 - max(int(answer.headers["x-ratelimit-remaining-tokens"]) for answer in probes)
    fake_upstream.requests.clear()
    raw, key_hash = new_key(org, tokens_per_minute=LIMIT * held)
    answers = asyncio.run(fire(urls, raw, 3 * LIMIT))
    check_answers(answers, "tokens", LIMIT * held)
    assert len(fake_upstream.requests) == LIMIT
    used = sorted(answer.json()["usage"]["total_tokens"] for answer in answers if answer.status_code == 200)
    assert used[-1] < held
    return f"api-key:{key_hash}", used, held


def settled_in_database(scope_key: str, used: list[int]) -> list[int]:
    """The tokens of the scope's entries once every request settled (after its answer went out)."""
    entries = RateLimitEntry.objects.filter(scope_key=scope_key)
    deadline = time.monotonic() + 10
    while sorted(entries.values_list("tokens", flat=True)) != used and time.monotonic() < deadline:
        time.sleep(0.05)
    return sorted(entries.values_list("tokens", flat=True))


def test_redis_then_redis_down(redis_proxy, slow_endpoint, org, fake_upstream):
    """Windows in Redis; then Redis goes away (its TCP proxy stops): the database takes over, still exact."""
    proxy, url = redis_proxy
    for urls in _gateways({"GATEWAY_RATE_LIMIT_REDIS_URL": url}):
        scope = requests_scenario(urls, org, fake_upstream)
        assert not RateLimitEntry.objects.filter(scope_key=scope).exists()  # held in Redis
        scope = workspace_scenario(urls, org, fake_upstream)
        assert not RateLimitEntry.objects.filter(scope_key=scope).exists()
        tokens_scope, _, _ = tokens_scenario(urls, org, fake_upstream)
        assert not RateLimitEntry.objects.filter(scope_key=tokens_scope).exists()

        proxy.stop()
        scope = requests_scenario(urls, org, fake_upstream)
        assert RateLimitEntry.objects.filter(scope_key=scope).count() == LIMIT  # held in the database
        scope = workspace_scenario(urls, org, fake_upstream)
        assert RateLimitEntry.objects.filter(scope_key=scope).count() == LIMIT
        tokens_scope, used, _ = tokens_scenario(urls, org, fake_upstream)
        assert settled_in_database(tokens_scope, used) == used  # held from the estimate, settled to usage


def test_database_path_without_redis(slow_endpoint, org, fake_upstream):
    for urls in _gateways({"REDIS_URL": "", "GATEWAY_RATE_LIMIT_REDIS_URL": ""}):
        scope = requests_scenario(urls, org, fake_upstream)
        assert RateLimitEntry.objects.filter(scope_key=scope).count() == LIMIT
        scope = workspace_scenario(urls, org, fake_upstream)
        assert RateLimitEntry.objects.filter(scope_key=scope).count() == LIMIT
        tokens_scope, used, _ = tokens_scenario(urls, org, fake_upstream)
        assert settled_in_database(tokens_scope, used) == used
