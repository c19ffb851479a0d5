"""Multi-process metrics: two gateway processes sharing PROMETHEUS_MULTIPROC_DIR; /metrics on either adds both up.

The processes share the pytest PostgreSQL database (SQLite's test database lives in memory), so the test is
skipped without PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from django.db import connection

from tests.budgets.test_concurrency import database_url, wait_for_port
from tests.conftest import free_port
from tests.operations.test_metrics import scrape, value

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parents[2]


def eventually(read, name: str, expected: float, timeout: float = 5.0) -> dict:
    """`read()`'s samples once `name` (echo, 200) adds up to `expected`."""
    deadline = time.monotonic() + timeout
    while True:
        samples = read()
        if value(samples, name, model="echo/echo-1", status="200") == expected or time.monotonic() > deadline:
            assert value(samples, name, model="echo/echo-1", status="200") == expected
            return samples
        time.sleep(0.05)


def test_two_processes_are_added_up_and_a_stopped_one_leaves_no_live_gauge(org, echo_catalog, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL): the processes share the test database")
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "DJANGO_SECRET_KEY": "metrics-test",
        "GATEWAY_LOG_LEVEL": "WARNING",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
    }
    processes, urls = [], []
    with tempfile.TemporaryFile() as log:
        try:
            for _ in range(2):
                port = free_port()
                command = [sys.executable, "-m", "uvicorn", "gateway_project.asgi:application", "--host", "127.0.0.1"]
                command += ["--port", str(port), "--lifespan", "on", "--log-level", "warning", "--no-access-log"]
                processes.append(subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=log, stderr=log))
                urls.append(f"http://127.0.0.1:{port}")
            for process, url in zip(processes, urls, strict=True):
                wait_for_port(int(url.rsplit(":", 1)[1]), process, timeout=120)
            auth = {"Authorization": f"Bearer {org.inference_key}"}
            for url, count in zip(urls, (3, 2), strict=True):
                for _ in range(count):
                    body = {"model": "echo/echo-1", "input": "a b c"}
                    assert httpx.post(f"{url}/api/v1/responses", json=body, headers=auth, timeout=30).status_code == 200
            for url in urls:  # either process answers for both (the last record may trail its answer briefly)
                samples = eventually(lambda u=url: scrape(u), "gateway_requests_total", 5)
                assert value(samples, "gateway_tokens_total", model="echo/echo-1", kind="output") == 20
            assert len(list(tmp_path.glob("*.db"))) >= 2  # one set of files per process
            processes[1].send_signal(signal.SIGTERM)  # lifespan shutdown marks its live gauges dead
            processes[1].wait(timeout=30)
            samples = scrape(urls[0])
            assert value(samples, "gateway_requests_total", model="echo/echo-1", status="200") == 5  # counters stay
            pids = {dict(labels).get("pid") for (name, labels) in samples if name == "gateway_open_streams"}
            assert str(processes[1].pid) not in pids
        finally:
            for process in processes:
                if process.poll() is None:
                    process.terminate()
                    process.wait(timeout=10)
            log.seek(0)
            output = log.read().decode(errors="replace")
            if output.strip():
                print(output[-5000:])
