"""A management request served by the ASGI handler leaves no database connection open behind it: each runs in a
thread of its own, so a connection kept for reuse would stay open until the cyclic collector freed it
(gateway_project/request_connections.py). Counted in PostgreSQL's pg_stat_activity, the collector held off."""

from __future__ import annotations

import gc

import httpx
import pytest
from django.db import connection


def _open_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_management_requests_close_their_connections(gateway_server, org):
    if connection.vendor != "postgresql":
        pytest.skip("counts connections in PostgreSQL's pg_stat_activity")
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.management_key}"}, timeout=30
    ) as http:
        assert http.get("/workspaces").status_code == 200
        gc.collect()
        before = _open_connections()
        gc.disable()
        try:
            for _ in range(30):
                assert http.get("/workspaces").status_code == 200
            after = _open_connections()
        finally:
            gc.enable()
    assert after - before <= 2, f"{after - before} connections left open by 30 requests"
