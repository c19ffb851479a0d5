"""Scale-out: two gateway processes and two observability workers on one PostgreSQL and one Redis.

Two uvicorn subprocesses serve the whole ASGI app, two `run_observability_worker` subprocesses deliver,
all against the pytest PostgreSQL database and REDIS_URL. Budgets, the rankings rate limits, policy changes
(a disabled key, a guardrail PATCH) and trace deliveries must hold across them. Skipped without PostgreSQL
and Redis. The processes are started once for the module (about 3 s).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection

from inference.models import Generation
from observability.models import OutboxEntry
from tests.budgets.test_concurrency import database_url, wait_for_port
from tests.conftest import free_port
from tests.fakes.fake_receiver import FakeReceiver
from tests.inference.conftest import add_endpoint

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parents[2]
COST = Decimal("0.007")  # 7 output tokens of the fake upstream at $0.001, prompt free
SLOW_MODEL = "fake/slow-first-byte-300"
RANKINGS = "/api/v1/datasets/rankings-daily"


class Cluster:
    def __init__(self, urls: list[str], receiver: FakeReceiver) -> None:
        self.a, self.b = urls
        self.urls = urls
        self.receiver = receiver


def start(command: list[str], env: dict, log) -> subprocess.Popen:
    return subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=log, stderr=log)


@pytest.fixture(scope="module", autouse=True)
def _flush_retried_after_a_deadlock():
    """The cluster's processes keep querying the database (the observability workers poll every 0.1 s) while
    each test's teardown empties it (one TRUNCATE of every table): PostgreSQL can end that in a deadlock and
    pick the TRUNCATE as its victim (its transaction is rolled back). The flush is then tried again."""
    from django.core.management.commands import flush

    original = flush.Command.handle

    def handle(self, **options):
        for attempt in range(5):
            try:
                return original(self, **options)
            except CommandError as error:
                if attempt == 4 or "deadlock detected" not in str(error.__cause__):
                    raise
                time.sleep(0.2)

    flush.Command.handle = handle
    yield
    flush.Command.handle = original


@pytest.fixture(scope="module")
def cluster(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        vendor, settings_dict = connection.vendor, dict(connection.settings_dict)
    if vendor != "postgresql" or not settings.REDIS_URL:
        pytest.skip("needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL): the processes share them")
    env = {
        **os.environ,
        "DATABASE_URL": database_url(settings_dict),
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SECRET_KEY": "scale-out-test",
        "FAKE_UPSTREAM_KEY": "sk-fake",
        "GATEWAY_LOG_LEVEL": "WARNING",
        "GATEWAY_OBSERVABILITY_BACKOFF_BASE_SECONDS": "0",
    }
    receiver = FakeReceiver().start()
    processes, urls = [], []
    with tempfile.TemporaryFile() as log:
        try:
            for _ in range(2):
                port = free_port()
                command = [sys.executable, "-m", "uvicorn", "gateway_project.asgi:application", "--host", "127.0.0.1"]
                command += ["--port", str(port), "--lifespan", "off", "--log-level", "warning", "--no-access-log"]
                processes.append(start(command, env, log))
                urls.append(f"http://127.0.0.1:{port}")
            for process, url in zip(processes, urls, strict=True):
                wait_for_port(int(url.rsplit(":", 1)[1]), process, timeout=120)  # the shared machine may be busy
            for _ in range(2):
                command = [
                    sys.executable,
                    "manage.py",
                    "run_observability_worker",
                    "--poll-interval",
                    "0.1",
                    "--concurrency",
                    "4",
                ]
                processes.append(start(command, env, log))
            yield Cluster(urls, receiver)
            for process in processes:
                assert process.poll() is None, "a process of the cluster died during the tests"
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
            receiver.stop()
            log.seek(0)
            output = log.read().decode(errors="replace")
            if output.strip():
                print(output[-5000:])  # shown when a test failed


@pytest.fixture
def catalog(cluster, fake_upstream):
    from inference.routing import clear_caches

    clear_caches()
    add_endpoint("echo/echo-1", "echo")
    add_endpoint(
        SLOW_MODEL,
        "fake",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_UPSTREAM_KEY",
        prompt_price="0",
        completion_price="0.001",
    )
    cluster.receiver.requests.clear()
    return cluster


# How long another process may take to apply a pushed policy change (measured: well under 1 ms idle).
PUSH_WITHIN = 1.0


def call(url: str, key: str, method: str = "POST", path: str = "/api/v1/responses", **kwargs) -> httpx.Response:
    return httpx.request(method, f"{url}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=30, **kwargs)


def infer(url: str, key: str, model: str = "echo/echo-1") -> httpx.Response:
    return call(url, key, json={"model": model, "input": "hello", "max_output_tokens": 7})


def wait_for(predicate, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


async def fire(urls: list[str], key: str, count: int) -> list[int]:
    body = {"model": SLOW_MODEL, "input": "hello", "max_output_tokens": 7}
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=count)) as client:

        async def one(index: int) -> int:
            url = f"{urls[index % 2]}/api/v1/responses"
            return (await client.post(url, json=body, headers={"Authorization": f"Bearer {key}"})).status_code

        return await asyncio.gather(*(one(i) for i in range(count)))


def test_budget_is_never_overspent_by_two_processes(catalog, org, fake_upstream):
    admitted, sent = 5, 24
    response = call(
        catalog.a, org.management_key, "PUT", f"/api/v1/workspaces/{org.workspace.id}/budgets/daily",
        json={"limit_usd": float(COST * admitted)},
    )  # fmt: skip
    assert response.status_code == 200, response.text

    statuses = asyncio.run(fire(catalog.urls, org.inference_key, sent))

    assert statuses.count(200) == admitted and statuses.count(402) == sent - admitted, statuses
    assert len(fake_upstream.requests) == admitted  # refused requests never went upstream
    wait_for(lambda: Generation.objects.count() == admitted, what="the admitted requests' rows")
    assert sum(g.cost for g in Generation.objects.all()) == admitted * COST
    assert call(catalog.b, org.inference_key, json={"model": SLOW_MODEL, "input": "x"}).status_code == 402


def rankings_window(catalog, org) -> tuple[list[int], list[httpx.Response], bool]:
    """30 calls alternating between the processes, then one more on each; whether it all fit in one window."""
    from gateway_project.policy_cache import _redis_sync

    for key in _redis_sync().scan_iter("ratelimit:*"):
        _redis_sync().delete(key)
    window = int(time.time() // 60)
    statuses = [call(catalog.urls[i % 2], org.inference_key, "GET", RANKINGS).status_code for i in range(30)]
    refused = [call(url, org.inference_key, "GET", RANKINGS) for url in catalog.urls]
    return statuses, refused, int(time.time() // 60) == window


def test_rankings_rate_limit_is_shared_by_both_processes(catalog, org):
    statuses, refused, one_window = rankings_window(catalog, org)
    if not one_window:  # the fixed one-minute window turned during the calls: once more, in the new window
        statuses, refused, one_window = rankings_window(catalog, org)
    assert one_window
    assert statuses == [200] * 30
    for response in refused:
        assert response.status_code == 429 and response.json()["error"]["code"] == 429
        assert 0 < int(response.headers["retry-after"]) <= 60
    assert call(catalog.b, org.management_key, "GET", RANKINGS).status_code == 200  # the limit is per key


def infer_until(url: str, key: str, status: int, within: float = PUSH_WITHIN) -> httpx.Response:
    """Requests until one answers `status`: the process that made a change applies it to its next request,
    the others as soon as Redis pushes the new policy version (within milliseconds; `within` bounds it)."""
    deadline = time.monotonic() + within
    while (response := infer(url, key)).status_code != status and time.monotonic() < deadline:
        time.sleep(0.01)
    return response


def test_a_key_disabled_through_one_process_is_refused_by_the_other(catalog, org):
    assert infer(catalog.b, org.inference_key).status_code == 200  # B has the key cached
    patch = call(catalog.a, org.management_key, "PATCH", f"/api/v1/keys/{org.inference_hash}", json={"disabled": True})
    assert patch.status_code == 200 and patch.json()["data"]["disabled"] is True
    assert infer(catalog.a, org.inference_key).status_code == 401  # the process that made the change: at once
    refused = infer_until(catalog.b, org.inference_key, 401)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == 401
    patch = call(catalog.b, org.management_key, "PATCH", f"/api/v1/keys/{org.inference_hash}", json={"disabled": False})
    assert patch.status_code == 200
    assert infer(catalog.b, org.inference_key).status_code == 200
    assert infer_until(catalog.a, org.inference_key, 200).status_code == 200


def test_a_guardrail_patch_through_one_process_applies_in_both(catalog, org):
    for url in catalog.urls:
        assert infer(url, org.inference_key).status_code == 200  # both have the (empty) policy cached
    guardrail = f"/api/v1/guardrails/{org.workspace.default_guardrail_id}"
    patch = call(catalog.a, org.management_key, "PATCH", guardrail, json={"ignored_models": ["echo/echo-1"]})
    assert patch.status_code == 200, patch.text
    for url in catalog.urls:
        refused = infer_until(url, org.inference_key, 403)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == 403, refused.text
    patch = call(catalog.b, org.management_key, "PATCH", guardrail, json={"ignored_models": None})
    assert patch.status_code == 200, patch.text
    for url in catalog.urls:
        assert infer_until(url, org.inference_key, 200).status_code == 200


def settled_generation_ids(quiet: float = 1.0, timeout: float = 20.0) -> set[str]:
    """The Generation ids once no new row has appeared for `quiet` seconds: the server processes write a
    request's row after its answer, so rows of the previous test's requests can still be arriving."""
    deadline = time.monotonic() + timeout
    seen = {str(g) for g in Generation.objects.values_list("id", flat=True)}
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = {str(g) for g in Generation.objects.values_list("id", flat=True)}
        if now == seen:
            return now
        seen = now
    raise AssertionError("Generation rows kept arriving")


def test_each_generation_is_delivered_exactly_once_by_two_workers(catalog, org):
    earlier = settled_generation_ids()  # rows of earlier tests' requests, which have no destination
    destination = {"name": "hook", "type": "webhook", "config": {"url": f"{catalog.receiver.url}/hook"}}
    created = call(catalog.a, org.management_key, path="/api/v1/observability/destinations", json=destination)
    assert created.status_code == 201, created.text
    sent = 30
    for i in range(sent):
        assert infer(catalog.urls[i % 2], org.inference_key).status_code == 200

    wait_for(lambda: len(catalog.receiver.requests) >= sent, what="deliveries")
    time.sleep(1.0)  # a duplicate would arrive within the workers' poll interval
    ids = [r.json()["trace"]["id"] for r in catalog.receiver.requests]
    assert len(ids) == sent and len(set(ids)) == sent
    assert set(ids) == {str(g) for g in Generation.objects.values_list("id", flat=True)} - earlier
    assert set(OutboxEntry.objects.values_list("status", flat=True)) == {"delivered"}
    assert OutboxEntry.objects.filter(attempts=1).count() == sent
