"""PostgreSQL restarted while requests run: they fail cleanly (503 + Retry-After, in the envelope, never 500)
and succeed again afterwards; every request that completed keeps its Generation row.

Opt-in: it restarts the machine's PostgreSQL cluster, which breaks every other client's connections (other
test runs on the same server). Run it with

    GATEWAY_TEST_PG_RESTART=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> REDIS_URL=redis://... \\
        .venv/bin/python -m pytest tests/reliability/test_database_restart.py -q -s

as a user allowed to run GATEWAY_TEST_PG_RESTART_COMMAND (default: `pg_ctlcluster --skip-systemctl-redirect
<version> main restart`, as root). A gateway subprocess serves the data plane (a workspace budget makes every
request reserve spend in the database) and the management plane (GET /api/v1/key, GET /api/v1/keys) while
four client threads call it without pause; the cluster is restarted after one second.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django.db import connection

from inference.models import Generation
from tests.budgets.test_concurrency import database_url, wait_for_port
from tests.conftest import free_port
from tests.inference.conftest import add_endpoint

pytestmark = [
    pytest.mark.pg_restart,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        os.environ.get("GATEWAY_TEST_PG_RESTART") != "1",
        reason="restarts PostgreSQL for everyone on this server: set GATEWAY_TEST_PG_RESTART=1 to run it",
    ),
]

BASE_DIR = Path(__file__).resolve().parents[2]
CLIENTS = 4
RECOVERED_STREAK = 20  # consecutive successes of each plane after the restart


def restart_command() -> list[str]:
    command = os.environ.get("GATEWAY_TEST_PG_RESTART_COMMAND")
    if command:
        return shlex.split(command)
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    return ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"]


@dataclass
class Call:
    plane: str
    at: float
    status: int
    body: dict | None
    retry_after: str | None
    request_id: str | None


@pytest.fixture
def gateway(transactional_db, request):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL)")
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "DJANGO_SECRET_KEY": "restart-test",
        "GATEWAY_LOG_LEVEL": "WARNING",
    }
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "gateway_project.asgi:application", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--lifespan", "off", "--log-level", "warning", "--no-access-log"]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=log, stderr=log)
        try:
            wait_for_port(port, process, timeout=120)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(timeout=20)
            if request.session.testsfailed:  # the gateway's log only when the test failed
                log.seek(0)
                print(log.read().decode(errors="replace")[-5000:])


def one_call(client: httpx.Client, plane: str, org) -> Call:
    started = time.monotonic()
    try:
        if plane == "data":
            body = {"model": "echo/echo-1", "input": "hello", "max_output_tokens": 16}
            headers = {"Authorization": f"Bearer {org.inference_key}"}
            response = client.post("/api/v1/responses", json=body, headers=headers)
        else:
            path = "/api/v1/keys" if int(started * 10) % 2 else "/api/v1/key"
            response = client.get(path, headers={"Authorization": f"Bearer {org.management_key}"})
    except httpx.TransportError as error:  # the gateway itself must never drop a connection
        return Call(plane, started, 0, {"transport_error": repr(error)}, None, None)
    try:
        body = response.json()
    except ValueError:
        body = None
    return Call(
        plane, started, response.status_code, body, response.headers.get("retry-after"),
        response.headers.get("x-request-id"),
    )  # fmt: skip


def recovered(calls: list[Call], plane: str, after: float) -> bool:
    statuses = [c.status for c in calls if c.plane == plane and c.at > after]
    return len(statuses) >= RECOVERED_STREAK and set(statuses[-RECOVERED_STREAK:]) == {200}


def test_requests_during_a_postgresql_restart_fail_with_503_and_recover(gateway, org):
    from inference.routing import clear_caches

    clear_caches()
    add_endpoint("echo/echo-1", "echo")
    budget = f"/api/v1/workspaces/{org.workspace.id}/budgets/daily"
    with httpx.Client(base_url=gateway, timeout=60) as client:
        put = client.put(budget, json={"limit_usd": 100}, headers={"Authorization": f"Bearer {org.management_key}"})
        assert put.status_code == 200, put.text
        assert one_call(client, "data", org).status == 200

    logging.getLogger("httpx").setLevel(logging.WARNING)
    calls: list[Call] = []
    stop = threading.Event()
    restart_done = [float("inf")]

    def client_loop(plane: str) -> None:
        with httpx.Client(base_url=gateway, timeout=60) as client:
            while not stop.is_set():
                calls.append(one_call(client, plane, org))

    threads = [threading.Thread(target=client_loop, args=("data" if i % 2 else "mgmt",)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0)
        began = time.monotonic()
        subprocess.run(restart_command(), check=True, capture_output=True, timeout=120)
        restart_done[0] = time.monotonic()
        deadline = time.monotonic() + 60
        while not (recovered(calls, "data", restart_done[0]) and recovered(calls, "mgmt", restart_done[0])):
            assert time.monotonic() < deadline, "the gateway did not recover within 60 s of the restart"
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
    connection.close()  # this process's own connection died with the restart

    unexpected = [c for c in calls if c.status not in (200, 503)]
    assert not unexpected, unexpected[:5]
    failed = [c for c in calls if c.status == 503]
    for call in failed:
        assert call.body["error"]["code"] == 503 and "database" in call.body["error"]["message"]
        assert call.retry_after == "2"
    completed = {c.request_id for c in calls if c.plane == "data" and c.status == 200}
    deadline = time.monotonic() + 30
    while True:  # rows of requests that completed during the outage are written once the database is back
        recorded = {str(i) for i in Generation.objects.filter(status="completed").values_list("id", flat=True)}
        if completed <= recorded or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert completed <= recorded, f"{len(completed - recorded)} completed requests have no Generation row"
    first_ok = min(
        c.at for c in calls if c.at > began and c.status == 200 and c.at > max((f.at for f in failed), default=0)
    )
    summary = {
        "calls": len(calls),
        "data_ok": sum(1 for c in calls if c.plane == "data" and c.status == 200),
        "mgmt_ok": sum(1 for c in calls if c.plane == "mgmt" and c.status == 200),
        "503_data": sum(1 for c in failed if c.plane == "data"),
        "503_mgmt": sum(1 for c in failed if c.plane == "mgmt"),
        "restart_command_s": round(restart_done[0] - began, 2),
        "first_success_after_last_503_s": round(first_ok - began, 2),
        "rows_of_completed_requests": f"{len(completed & recorded)}/{len(completed)}",
    }
    print("database restart:", summary)
