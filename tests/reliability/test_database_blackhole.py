"""Issue 18 row 5: a black-holed PostgreSQL (a loopback TCP proxy that stops forwarding: no error, no
answer) gives 503 with Retry-After within seconds on both planes, never a hang; once it forwards again the
very next request is served. PostgreSQL only (SQLite has no network)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from asgiref.sync import SyncToAsync
from django.db import connection, connections

from gateway_project import db_thread
from inference import recorder
from tests.fakes.tcp_blackhole import BlackholeProxy as TcpProxy

pytestmark = pytest.mark.django_db(transaction=True)
BODY = {"model": "echo/echo-1", "input": "hi"}


def _close_data_plane_connections() -> None:
    """Make the gateway's database threads open new connections (through the current settings)."""
    db_thread.shutdown()
    recorder.shutdown()
    executor = SyncToAsync.single_thread_executor
    executor.submit(connections.close_all).result(timeout=30)


@pytest.fixture
def black_hole(settings):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL)")
    settings.GATEWAY_DB_DEADLINE_SECONDS = 1.5
    database = connections.settings["default"]  # the dict every thread's connection is built from
    saved = (database["HOST"], database["PORT"], dict(database.get("OPTIONS", {})))
    proxy = TcpProxy(database["HOST"] or "127.0.0.1", int(database["PORT"] or 5432)).start()
    database["HOST"], database["PORT"] = "127.0.0.1", str(proxy.port)
    database.setdefault("OPTIONS", {})["connect_timeout"] = 2
    _close_data_plane_connections()
    try:
        yield proxy
    finally:
        proxy.resume()
        database["HOST"], database["PORT"], database["OPTIONS"] = saved
        _close_data_plane_connections()
        proxy.stop()


def timed(call):
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_black_holed_database_is_503_within_seconds_then_recovers(http, gateway_server, org, black_hole):
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1",
        headers={"Authorization": f"Bearer {org.management_key}"},
        timeout=30,
    ) as api:
        assert api.patch(f"/keys/{org.inference_hash}", json={"limit": 100}).status_code == 200  # budgeted
        assert http.post("/responses", json=BODY).status_code == 200  # warm: key and catalog cached, via the proxy
        black_hole.blackhole()
        for _ in range(3):  # the budget hold finds no answer: the deadline, then the socket is shut down
            response, took = timed(lambda: http.post("/responses", json=BODY))
            assert response.status_code == 503, response.text
            assert response.headers["retry-after"] == "2" and took < 5, took
        response, took = timed(lambda: api.get("/keys"))  # a new connection: connect_timeout
        assert response.status_code == 503 and took < 5, (response.status_code, took)
        black_hole.resume()
        response, took = timed(lambda: http.post("/responses", json=BODY))
        assert response.status_code == 200 and took < 2, (response.text, took)  # the very next request
        assert api.get("/keys").status_code == 200


def test_server_processes_connect_with_time_limits():
    """What a serving process sends PostgreSQL (gateway_project/db_options.py), checked on a real connection."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL)")
    import environ
    import psycopg

    from gateway_project.db_options import postgres_options, serves_requests

    assert serves_requests([".venv/bin/uvicorn"]) and serves_requests(["/x/gateway_project/serve.py"])
    assert serves_requests(["manage.py", "runserver"])
    assert not serves_requests(["manage.py", "migrate"]) and not serves_requests(["/x/bin/pytest"])
    assert not serves_requests(["/x/site-packages/pytest/__main__.py"])  # python -m pytest (make test)
    options = postgres_options(environ.Env(), server_limits=True)
    params = connection.get_connection_params()
    target = {key: params[key] for key in ("host", "port", "user", "dbname") if params.get(key)}
    with psycopg.connect(**target, **options) as conn:
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "30s"
        assert conn.execute("SHOW lock_timeout").fetchone()[0] == "5s"
    proxy = TcpProxy(target.get("host") or "127.0.0.1", int(target.get("port") or 5432)).start()
    proxy.blackhole()
    try:
        started = time.monotonic()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(**{**target, "host": "127.0.0.1", "port": proxy.port}, **options)
        assert time.monotonic() - started < options["connect_timeout"] + 2
    finally:
        proxy.stop()


async def test_the_deadline_does_not_wait_for_a_call_that_finishes_late():
    """asgiref's `sync_to_async` cancelled waits for its thread's call to return (a call stuck on a black-holed
    connection: until its socket is shut down): `within_deadline` answers at the deadline regardless."""
    from django.db import OperationalError

    from gateway_project.db_deadline import within_deadline

    async def stuck():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(1.0)  # what sync_to_async does while its thread's call goes on
            raise

    started = time.monotonic()
    with pytest.raises(OperationalError, match="did not answer within 0.2 s"):
        await within_deadline(stuck(), 0.2)
    assert time.monotonic() - started < 0.6
    assert await within_deadline(asyncio.sleep(0, result=7), 1) == 7


async def test_a_cancelled_caller_cancels_its_call():
    """As `asyncio.wait_for` did: a request cancelled (its client gone) while its database call runs cancels it."""
    from gateway_project.db_deadline import within_deadline

    cancelled = asyncio.Event()

    async def call():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    caller = asyncio.ensure_future(within_deadline(call(), 5))
    await asyncio.sleep(0.05)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await asyncio.wait_for(cancelled.wait(), 1)
