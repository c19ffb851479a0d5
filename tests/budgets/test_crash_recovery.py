"""A gateway process killed with 12 streams in flight: every request that held a budget gets its Generation row.

A real uvicorn subprocess serves the app against the pytest PostgreSQL database with a short hold lifetime
(`GATEWAY_BUDGET_RESERVATION_TTL=3`); 12 streams are in flight against a slow fake upstream when the process is
killed with SIGKILL (no shutdown, no `finally`). The holds are its requests' only trace: each carries what the
request's row needs (budgets/recovery.py). Once they expired (the dead process no longer renews them), a
restarted process reaps them on its own (its budget keeper, budgets/keeper.py; the operator's `budgets_reap` does
the same): 12 rows `interrupted`, each costing its hold, and the counter agrees with the rows
(`budgets_reconcile` finds no drift). A process alive renews its holds: a stream longer than the TTL keeps its
hold and is charged its cost, once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from io import StringIO

import httpx
import pytest
from django.core.management import call_command
from django.db import connection

from budgets.models import SpendCounter, SpendReservation
from inference.models import Generation
from tests.budgets.test_concurrency import BASE_DIR, database_url, put_budget, wait_for_port
from tests.conftest import free_port
from tests.inference.conftest import add_endpoint

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TTL = 3
STREAMS = 12
SLOW = "fake/slow-stream-1500"  # 5 pieces 1.5 s apart: about 7.5 s per stream, longer than the TTL
QUICK = "fake/quick"


class Gateway:
    """One uvicorn subprocess serving the app on the test database."""

    def __init__(self, log) -> None:
        self.port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": database_url(connection.settings_dict),
            "DJANGO_SECRET_KEY": "crash-test",
            "FAKE_UPSTREAM_KEY": "sk-fake",
            "GATEWAY_LOG_LEVEL": "WARNING",
            "GATEWAY_BUDGET_RESERVATION_TTL": str(TTL),
        }
        command = [sys.executable, "-m", "uvicorn", "gateway_project.asgi:application", "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--lifespan", "off", "--log-level", "warning", "--no-access-log"]
        self.process = subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=log, stderr=log)
        wait_for_port(self.port, self.process)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture
def gateways(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL): a gateway subprocess shares the database with the test")
    started: list[Gateway] = []
    with tempfile.TemporaryFile() as log:

        def start() -> Gateway:
            gateway = Gateway(log)
            started.append(gateway)
            return gateway

        try:
            yield start
        finally:
            for gateway in started:
                gateway.stop()


@pytest.fixture
def endpoints(fake_upstream):
    for model in (SLOW, QUICK):
        add_endpoint(
            model,
            "fake",
            api_format="openai-responses",
            base_url=fake_upstream.base_url,
            api_key_env="FAKE_UPSTREAM_KEY",
            prompt_price="0.000001",
            completion_price="0.001",
        )


def body(model: str, stream: bool) -> dict:
    return {"model": model, "input": "hello", "max_output_tokens": 40, "stream": stream}


async def streams_in_flight(url: str, key: str, started: asyncio.Event, count: int) -> None:
    """`count` streams, read until the process dies; `started` is set once each got its first bytes."""
    headers = {"Authorization": f"Bearer {key}"}
    opened = 0

    async def one(client: httpx.AsyncClient) -> None:
        nonlocal opened
        try:
            async with client.stream("POST", f"{url}/api/v1/responses", json=body(SLOW, True), headers=headers) as r:
                assert r.status_code == 200
                first = True
                async for _ in r.aiter_bytes():  # until the process dies (the stream outlasts the test)
                    if first:
                        first = False
                        opened += 1
                        if opened == count:
                            started.set()
        except (httpx.HTTPError, AssertionError):
            return

    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=count)) as client:
        await asyncio.gather(*(one(client) for _ in range(count)))


def kill_with_streams_in_flight(gateway: Gateway, key: str, fake_upstream) -> None:
    async def scenario() -> None:
        started = asyncio.Event()
        task = asyncio.create_task(streams_in_flight(gateway.url, key, started, STREAMS))
        await asyncio.wait_for(started.wait(), 30)
        gateway.process.send_signal(signal.SIGKILL)
        gateway.process.wait(timeout=10)
        await asyncio.wait_for(task, 30)

    asyncio.run(scenario())
    assert len(fake_upstream.requests) == STREAMS  # every one of them reached the provider


def counter(org) -> SpendCounter:
    return SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval="daily")


def assert_recovered(org) -> None:
    rows = list(Generation.objects.filter(status="interrupted"))
    assert len(rows) == STREAMS
    holds = {str(r.request_id): r.amount_units for r in SpendReservation.objects.all()}
    assert all(r.reaped_at is not None for r in SpendReservation.objects.all())
    for row in rows:
        assert row.cost == Decimal(holds[str(row.id)]) / 10**10  # the hold, the figure the counter was charged
        assert row.usage_estimated and row.streamed and row.requested_model == SLOW and row.model == SLOW
        assert row.workspace_id == org.workspace.id and row.key_hash == org.inference_hash
    recorded = sum(g.cost for g in Generation.objects.all())
    assert counter(org).spent_usd == recorded and counter(org).reserved_units == 0
    out = StringIO()
    call_command("budgets_reconcile", stdout=out)  # exit status 0: no drift
    assert "0 drifted" in out.getvalue()


def wait_for(condition, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_a_killed_process_s_streams_get_their_rows_when_a_process_restarts(gateways, org, endpoints, fake_upstream):
    put_budget(org, Decimal("1"))
    kill_with_streams_in_flight(gateways(), org.inference_key, fake_upstream)

    assert Generation.objects.count() == 0
    assert SpendReservation.objects.filter(reaped_at__isnull=True).count() == STREAMS
    held = counter(org).reserved_units
    assert held > 0
    out = StringIO()
    call_command("budgets_reap", stdout=out)  # before they expired: the holds still block, nothing charged
    assert "charged 0 expired" in out.getvalue() and counter(org).reserved_units == held

    restarted = gateways()  # its first held request starts its keeper, which reaps the expired holds
    response = httpx.post(
        f"{restarted.url}/api/v1/responses",
        json=body(QUICK, False),
        headers={"Authorization": f"Bearer {org.inference_key}"},
        timeout=30,
    )
    assert response.status_code == 200
    wait_for(lambda: Generation.objects.filter(status="interrupted").count() == STREAMS, TTL * 3 + 10)
    wait_for(lambda: not SpendReservation.objects.filter(reaped_at__isnull=True).exists(), 10)
    assert_recovered(org)
    assert Generation.objects.filter(status="completed").count() == 1
    call_command("budgets_reap", stdout=StringIO())  # never charged or written twice
    assert Generation.objects.count() == STREAMS + 1
    assert_recovered(org)


def test_a_living_process_renews_the_hold_of_a_stream_longer_than_the_ttl(gateways, org, endpoints, fake_upstream):
    put_budget(org, Decimal("1"))
    gateway = gateways()
    with httpx.stream(
        "POST",
        f"{gateway.url}/api/v1/responses",
        json=body(SLOW, True),
        headers={"Authorization": f"Bearer {org.inference_key}"},
        timeout=30,
    ) as response:
        assert response.status_code == 200
        for _ in response.iter_bytes():  # 7.5 s, more than twice the TTL
            out = StringIO()
            call_command("budgets_reap", stdout=out)
            assert "charged 0 expired" in out.getvalue()  # nothing to reap: the hold is renewed
    assert not Generation.objects.filter(status="interrupted").exists()
    wait_for(lambda: Generation.objects.count() == 1 and not SpendReservation.objects.exists(), 15)
    row = Generation.objects.get()
    assert row.status == "completed" and not row.usage_estimated
    assert counter(org).spent_usd == row.cost and counter(org).reserved_units == 0
