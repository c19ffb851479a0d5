"""The budget cannot be overspent by parallel requests served by two gateway processes sharing PostgreSQL.

Two uvicorn subprocesses serve the whole ASGI app against the pytest PostgreSQL database; 50 requests are
sent at once, alternating between them, against a budget that covers exactly 10. The fake upstream answers
slowly, so the admitted requests are all in flight (holding their reservations) while the others arrive.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from django.db import connection

from budgets.models import SpendCounter, SpendReservation
from inference.models import Generation
from tests.conftest import free_port
from tests.inference.conftest import add_endpoint

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parents[2]
REQUESTS = 50
ADMITTED = 10
COST = Decimal("0.007")  # the fake upstream reports 7 output tokens; $0.001 each, prompt tokens free


def database_url(settings_dict: dict) -> str:
    user = quote(settings_dict.get("USER") or "", safe="")
    password = quote(settings_dict.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{settings_dict['NAME']}"


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gateway process exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("gateway process did not start")


@pytest.fixture
def two_gateways(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL): two processes share the spend counters")
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "DJANGO_SECRET_KEY": "concurrency-test",
        "FAKE_UPSTREAM_KEY": "sk-fake",
        "GATEWAY_LOG_LEVEL": "WARNING",
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
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()


async def fire(urls: list[str], key: str, refusal: str) -> list[int]:
    body = {"model": "fake/slow-first-byte-400", "input": "hello", "max_output_tokens": 7}
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=REQUESTS)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def one(index: int) -> int:
            response = await client.post(f"{urls[index % 2]}/api/v1/responses", json=body, headers=headers)
            if response.status_code == 402:
                assert response.json()["error"]["message"].startswith(refusal)
            return response.status_code

        return await asyncio.gather(*(one(i) for i in range(REQUESTS)))


@pytest.fixture
def slow_endpoint(fake_upstream):
    return add_endpoint(
        "fake/slow-first-byte-400",
        "fake",
        api_format="openai-responses",
        base_url=fake_upstream.base_url,
        api_key_env="FAKE_UPSTREAM_KEY",
        prompt_price="0",
        completion_price="0.001",
    )


def wait_settled(expected_rows: int) -> None:
    deadline = time.monotonic() + 15
    while Generation.objects.count() < expected_rows or SpendReservation.objects.exists():
        assert time.monotonic() < deadline, "settlement did not finish"
        time.sleep(0.05)


def put_budget(org, limit: Decimal) -> None:
    response = org.client().put(
        f"/api/v1/workspaces/{org.workspace.id}/budgets/daily", {"limit_usd": float(limit)}, format="json"
    )
    assert response.status_code == 200


def test_fifty_parallel_requests_on_two_processes_admit_exactly_ten(two_gateways, org, fake_upstream, slow_endpoint):
    limit = COST * ADMITTED
    put_budget(org, limit)

    statuses = asyncio.run(fire(two_gateways, org.inference_key, "Workspace 'default' daily budget"))

    assert statuses.count(200) == ADMITTED, statuses
    assert statuses.count(402) == REQUESTS - ADMITTED, statuses
    assert len(fake_upstream.requests) == ADMITTED  # refused requests never went upstream
    wait_settled(ADMITTED)
    recorded = sum(g.cost for g in Generation.objects.all())
    counter = SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval="daily")
    assert recorded <= limit and recorded == ADMITTED * COST
    assert counter.spent_usd == recorded and counter.reserved_units == 0


def test_two_limits_at_once_hold_together_without_deadlock(two_gateways, org, fake_upstream, slow_endpoint):
    """The key's limit (7 requests) binds before the workspace budget (10): every reservation locks both rows."""
    put_budget(org, COST * ADMITTED)
    response = org.client().patch(f"/api/v1/keys/{org.inference_hash}", {"limit": float(COST * 7)}, format="json")
    assert response.status_code == 200

    statuses = asyncio.run(fire(two_gateways, org.inference_key, "API key 'inference' limit"))

    assert statuses.count(200) == 7 and statuses.count(402) == REQUESTS - 7, statuses
    assert len(fake_upstream.requests) == 7
    wait_settled(7)
    recorded = sum(g.cost for g in Generation.objects.all())
    assert recorded == 7 * COST
    for scope, scope_id in (("workspace", str(org.workspace.id)), ("api-key", org.inference_hash)):
        counter = SpendCounter.objects.get(scope=scope, scope_id=scope_id)
        assert counter.spent_usd == recorded and counter.reserved_units == 0
