"""GET /health/live and /health/ready over a real server: unauthenticated, cheap, 503 in the envelope."""

from __future__ import annotations

import time

import httpx
import pytest
from django.db import OperationalError, connection

from operations import health
from tests.conftest import free_port
from tests.fakes.tcp_blackhole import BlackholeProxy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def probe(gateway_server):
    health.readiness.migrations_applied = False  # as in a fresh process
    with httpx.Client(base_url=gateway_server.url, timeout=10) as client:
        yield client
    health.readiness.migrations_applied = False


def test_live_and_ready_answer_without_a_key(probe, settings):
    live = probe.get("/health/live")
    assert live.status_code == 200 and live.json()["status"] == "ok"
    assert live.headers["cache-control"] == "no-store"
    ready = probe.get("/health/ready")
    assert ready.status_code == 200, ready.text
    expected_redis = "ok" if settings.REDIS_URL else "not configured"
    assert ready.json() == {"status": "ok", "checks": {"database": "ok", "migrations": "ok", "redis": expected_redis}}
    assert probe.head("/health/ready").status_code == 200
    assert probe.get("/health/ready/").status_code == 200


def test_other_methods_are_405_in_the_envelope(probe):
    response = probe.post("/health/live")
    assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD"
    assert response.json()["error"]["code"] == 405


def test_unreachable_redis_is_503_naming_it(probe, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    health.readiness._clients.clear()
    response = probe.get("/health/ready")
    health.readiness._clients.clear()
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    error = response.json()["error"]
    assert error["code"] == 503 and "redis unreachable" in error["message"]
    assert error["metadata"]["checks"]["database"] == "ok"
    assert error["metadata"]["checks"]["redis"].startswith("unreachable")
    assert probe.get("/health/live").status_code == 200  # the process itself is fine


def _ready_with_redis_at(probe, url: str) -> tuple[httpx.Response, float]:
    health.readiness._clients.clear()
    started = time.monotonic()
    response = probe.get("/health/ready")
    elapsed = time.monotonic() - started
    health.readiness._clients.clear()
    return response, elapsed


def test_a_stopped_redis_is_reported_at_once_not_after_retries(probe, settings):
    # Nothing listens on the port (a stopped redis-server): the refused connection is the answer, at once. A client
    # retrying with backoff would sleep until the probe's own time limit and report a timeout instead.
    settings.GATEWAY_HEALTH_TIMEOUT_SECONDS = 3.0
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    response, elapsed = _ready_with_redis_at(probe, settings.REDIS_URL)
    assert response.status_code == 503
    assert response.json()["error"]["metadata"]["checks"]["redis"] == "unreachable: ConnectionError"
    assert elapsed < 1.0, elapsed


def test_a_redis_that_stops_answering_is_down_after_the_timeout(probe, settings):
    proxy = BlackholeProxy("127.0.0.1", 1).start()
    proxy.blackhole()  # accepts the connection, never replies
    settings.GATEWAY_HEALTH_TIMEOUT_SECONDS = 0.5
    settings.REDIS_URL = f"redis://127.0.0.1:{proxy.port}/0"
    try:
        response, elapsed = _ready_with_redis_at(probe, settings.REDIS_URL)
    finally:
        proxy.stop()
    assert response.status_code == 503
    assert response.json()["error"]["metadata"]["checks"]["redis"].startswith("unreachable")
    assert response.json()["error"]["metadata"]["checks"]["database"] == "ok"
    assert elapsed < 1.5, elapsed


def test_pending_migration_is_503_until_applied(probe):
    with connection.cursor() as cursor:
        cursor.execute("SELECT app, name, applied FROM django_migrations WHERE app = 'accounts' ORDER BY id DESC")
        app, name, applied = cursor.fetchone()
        cursor.execute("DELETE FROM django_migrations WHERE app = %s AND name = %s", [app, name])
    try:
        response = probe.get("/health/ready")
        assert response.status_code == 503
        assert response.json()["error"]["metadata"]["checks"]["migrations"].startswith("pending")
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, %s)", [app, name, applied]
            )
    assert probe.get("/health/ready").status_code == 200


def test_unreachable_database_is_503(probe, monkeypatch):
    def refused(migrations_known_applied):
        raise OperationalError("connection to server at 127.0.0.1, port 5432 failed: Connection refused")

    monkeypatch.setattr(health, "_database_check", refused)
    response = probe.get("/health/ready")
    assert response.status_code == 503
    checks = response.json()["error"]["metadata"]["checks"]
    assert checks["database"] == "unreachable: OperationalError" and checks["migrations"] == "unknown"


def test_a_hung_database_check_times_out(probe, monkeypatch, settings):
    import time

    settings.GATEWAY_HEALTH_TIMEOUT_SECONDS = 0.2
    monkeypatch.setattr(health, "_database_check", lambda applied: time.sleep(0.5) or True)
    started = time.monotonic()
    response = probe.get("/health/ready")
    assert time.monotonic() - started < 0.45
    assert response.status_code == 503
    assert response.json()["error"]["metadata"]["checks"]["database"] == "unreachable: no answer in time"
    time.sleep(0.4)  # let the slow check finish on the health thread
