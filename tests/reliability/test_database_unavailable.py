"""A database that cannot be reached is 503 with Retry-After in the envelope on both planes, never 500; the
data plane drops its broken connection and the next request succeeds; Generation writes wait for the
database to come back. (The real PostgreSQL restart is the opt-in tests/reliability/test_database_restart.py.)
"""

from __future__ import annotations

import asyncio

import pytest
from django.db import InterfaceError, OperationalError

from accounts import authentication
from accounts import middleware as auth_middleware
from inference import recorder
from tests.inference.conftest import generations

pytestmark = pytest.mark.django_db(transaction=True)


def assert_503(response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "2"
    error = response.json()["error"]
    assert error["code"] == 503 and "database cannot be reached" in error["message"]


@pytest.mark.parametrize("exc", [OperationalError("server closed the connection"), InterfaceError("closed")])
def test_data_plane_answers_503_then_recovers(http, monkeypatch, exc):
    real = auth_middleware._load_principal
    calls = []

    async def broken_then_fine(key_hash):
        calls.append(key_hash)
        if len(calls) == 1:
            raise exc
        return await real(key_hash)

    monkeypatch.setattr(auth_middleware, "_load_principal", broken_then_fine)
    assert_503(http.post("/responses", json={"model": "echo/echo-1", "input": "hi"}))
    assert http.post("/responses", json={"model": "echo/echo-1", "input": "hi"}).status_code == 200


def test_management_plane_answers_503(api, monkeypatch):
    def unreachable(principal):
        raise OperationalError('connection to server at "127.0.0.1", port 5432 failed: Connection refused')

    monkeypatch.setattr(authentication, "touch_last_used", unreachable)
    assert_503(api.get("/api/v1/key"))
    assert_503(api.get("/api/v1/keys"))


def test_other_database_errors_stay_500(api, monkeypatch):
    from django.db import DataError

    def bad(principal):
        raise DataError("value too long")

    monkeypatch.setattr(authentication, "touch_last_used", bad)
    response = api.get("/api/v1/key")
    assert response.status_code == 500 and response.json()["error"]["code"] == 500


def test_generation_rows_are_retried_until_the_database_is_back(http, monkeypatch):
    real = recorder._write
    failures = []

    async def down_twice(contexts):
        if len(failures) < 2:
            failures.append(len(contexts))
            raise OperationalError("the database system is starting up")
        await real(contexts)

    monkeypatch.setattr(recorder, "_write", down_twice)
    response = http.post("/responses", json={"model": "echo/echo-1", "input": "hi"})
    assert response.status_code == 200
    [row] = generations(1)
    assert str(row.id) == response.headers["x-request-id"] and row.status == "completed"
    assert failures == [1, 1]


def test_generation_rows_give_up_after_the_retry_window(monkeypatch, settings):
    settings.GATEWAY_ACCOUNTING_RETRY_SECONDS = 0.3
    attempts = []

    async def always_down(contexts):
        attempts.append(len(contexts))
        raise OperationalError("down")

    monkeypatch.setattr(recorder, "_write", always_down)
    with pytest.raises(OperationalError):
        asyncio.run(recorder._write_while_unavailable([object()]))
    assert 2 <= len(attempts) <= 4  # 0.1 s, 0.2 s backoff within 0.3 s
