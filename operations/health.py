"""GET /health/live and GET /health/ready: unauthenticated probes for load balancers and orchestrators.

Both are plain ASGI applications routed before Django (gateway_project/asgi.py): no middleware, no session,
no thread hop for `live`.

- `/health/live`: the process answers (200 `{"status": "ok"}`); never touches the database.
- `/health/ready`: the database answers a query, Redis answers PING when `REDIS_URL` is set, and every
  migration on disk is applied. 200 `{"status": "ok", "checks": {...}}`, otherwise 503 in the error
  envelope, `metadata.checks` naming what failed, with `Retry-After`. From SIGTERM on (the drain,
  gateway_project/draining.py) 503 at once, `metadata.checks.shutdown` = "draining", no check run.

Cheap: the database check runs on a thread of its own (a busy data plane thread never delays it, a hung
database never blocks the data plane), each check has a time limit (GATEWAY_HEALTH_TIMEOUT_SECONDS), and
probes arriving while a check runs share its result. The migration graph is read from disk once per
process; once every migration is seen applied, later probes only run `SELECT 1`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import orjson
from django.conf import settings

from gateway_project.api.errors import GatewayError
from gateway_project.db_thread import DatabaseThread
from gateway_project.draining import state as drain_state
from gateway_project.redis_clients import async_client

logger = logging.getLogger("gateway.health")

health_thread = DatabaseThread("gateway-health")
JSON = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]


async def _send_json(send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": JSON + extra})
    await send({"type": "http.response.body", "body": orjson.dumps(body)})


def _database_check(migrations_known_applied: bool) -> bool:
    """Runs on the health thread: one query; True when every migration on disk is applied."""
    from django.db import connection

    with connection.cursor() as cursor:
        if migrations_known_applied:
            cursor.execute("SELECT 1")
            return True
        cursor.execute("SELECT app, name FROM django_migrations")
        applied = set(cursor.fetchall())
    return _expected_migrations() <= applied


_expected: set[tuple[str, str]] | None = None


def _expected_migrations() -> set[tuple[str, str]]:
    global _expected
    if _expected is None:
        from django.db import connection
        from django.db.migrations.loader import MigrationLoader

        _expected = set(MigrationLoader(connection, ignore_no_migrations=True, load=True).disk_migrations)
    return _expected


class Readiness:
    """The readiness checks, run at most once at a time (concurrent probes share the running one)."""

    def __init__(self) -> None:
        self.migrations_applied = False
        self._running: asyncio.Future | None = None
        self._clients: dict[int, Any] = {}

    async def check(self) -> dict[str, str]:
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(self._check())
        return await asyncio.shield(self._running)

    async def _check(self) -> dict[str, str]:
        checks = {"database": "ok", "migrations": "ok", "redis": "not configured"}
        timeout = settings.GATEWAY_HEALTH_TIMEOUT_SECONDS
        database = asyncio.wait_for(health_thread.run(_database_check, self.migrations_applied), timeout)
        redis = self._ping_redis(timeout) if settings.REDIS_URL else _nothing()
        db_result, redis_result = await asyncio.gather(database, redis, return_exceptions=True)
        if isinstance(db_result, BaseException):
            checks["database"] = _failure(db_result)
            checks["migrations"] = "unknown"
        elif not db_result:
            checks["migrations"] = "pending: run `manage.py migrate`"
        else:
            self.migrations_applied = True
        if settings.REDIS_URL:
            checks["redis"] = _failure(redis_result) if isinstance(redis_result, BaseException) else "ok"
        return checks

    async def _ping_redis(self, timeout: float) -> None:
        loop_id = id(asyncio.get_running_loop())
        client = self._clients.get(loop_id)
        if client is None:
            # No retry (gateway_project/redis_clients.py): a Redis that stopped answering is reported down after
            # one timeout, a refused connection at once, rather than when the probe's own time limit ends.
            client = async_client(settings.REDIS_URL, timeout)
            self._clients[loop_id] = client
        await asyncio.wait_for(client.ping(), timeout)


async def _nothing() -> None:
    return None


def _failure(error: BaseException) -> str:
    if isinstance(error, TimeoutError | asyncio.TimeoutError):
        return "unreachable: no answer in time"
    return f"unreachable: {type(error).__name__}"


readiness = Readiness()


async def health_app(scope, receive, send) -> None:
    """ASGI application for /health/live and /health/ready."""
    if scope["method"] not in ("GET", "HEAD"):
        error = GatewayError(405, f'Method "{scope["method"]}" not allowed', headers={"Allow": "GET, HEAD"})
        await _send_json(send, 405, error.envelope(), error.headers)
        return
    if scope["path"].rstrip("/").endswith("/live"):
        await _send_json(send, 200, {"status": "ok", "pid": os.getpid()})
        return
    if drain_state.draining:  # SIGTERM received: leave the balancer's rotation (gateway_project/draining.py)
        error = GatewayError(503, "Not ready: the process is stopping", metadata={"checks": {"shutdown": "draining"}})
        await _send_json(send, 503, error.envelope(), error.headers)
        return
    checks = await readiness.check()
    if all(value in ("ok", "not configured") for value in checks.values()):
        await _send_json(send, 200, {"status": "ok", "checks": checks})
        return
    failed = ", ".join(f"{name} {value}" for name, value in checks.items() if value not in ("ok", "not configured"))
    logger.warning("readiness check failed: %s", failed)
    error = GatewayError(503, f"Not ready: {failed}", metadata={"checks": checks}, headers={"Retry-After": "5"})
    await _send_json(send, 503, error.envelope(), error.headers)
