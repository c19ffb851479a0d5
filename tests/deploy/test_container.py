"""The container image's pieces that run without a container engine: the entry point's roles and the health check.

No image is built here (no engine on these machines; docs/deploy.md says what to check first when building).
What the image runs is run here as it is: deploy/docker-entrypoint.sh with this virtual environment's `python`
first on PATH (the image puts /opt/venv/bin there): `migrate` on a fresh database, `serve` until it answers, the
Dockerfile's own HEALTHCHECK command against it, then SIGTERM and exit 0. The Dockerfile is read for what the
deployment relies on (non-root user, the pinned requirements, static files collected at build time).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.budgets.test_concurrency import wait_for_port
from tests.conftest import free_port
from tests.deploy.processes import BASE_DIR

# The entry point runs on a SQLite file of its own whatever the suite's database: once per CI run is enough.
pytestmark = pytest.mark.skipif(
    settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3",
    reason="independent of the suite's database: runs in the SQLite suite",
)

ENTRYPOINT = BASE_DIR / "deploy" / "docker-entrypoint.sh"
DOCKERFILE = (BASE_DIR / "Dockerfile").read_text()


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    logical = re.sub(r"\\\n", " ", "\n".join(line for line in DOCKERFILE.splitlines() if not line.startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in logical.splitlines() if line.strip()]


def entrypoint_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DATABASE_URL": f"sqlite:///{tmp_path}/container.sqlite3",
        "DJANGO_SECRET_KEY": "container-test",
        "GATEWAY_LOG_LEVEL": "WARNING",
        **extra,
    }


def test_the_dockerfile_builds_a_slim_non_root_image_with_its_static_files():
    steps = instructions()
    stages = [args for name, args in steps if name == "FROM"]
    assert stages == ["python:3.11-slim AS build", "python:3.11-slim AS runtime"]
    runtime = steps[[name for name, _ in steps].index("FROM", 1) :]
    assert any(name == "RUN" and "pip install" in args and "requirements.txt" in args for name, args in steps)
    assert ("COPY", "--from=build /opt/venv /opt/venv") in runtime
    assert any(name == "RUN" and "collectstatic --noinput" in args for name, args in runtime)
    user = [args for name, args in runtime if name == "USER"]
    assert user == ["10001:10001"]  # numeric: Kubernetes runAsNonRoot can verify it
    assert [args for name, args in runtime if name == "ENTRYPOINT"] == ['["/app/deploy/docker-entrypoint.sh"]']
    assert [args for name, args in runtime if name == "CMD"] == ['["serve"]']
    health = [args for name, args in runtime if name == "HEALTHCHECK"]
    assert len(health) == 1 and "/health/live" in health[0]
    ignored = (BASE_DIR / ".dockerignore").read_text().splitlines()
    assert {".env", ".venv", ".git", "tests"} <= set(ignored)


def healthcheck_command() -> list[str]:
    health = next(args for name, args in instructions() if name == "HEALTHCHECK")
    return json.loads(health.split("CMD", 1)[1])


def test_entrypoint_migrates_serves_answers_the_healthcheck_and_stops_with_0(tmp_path):
    env = entrypoint_env(tmp_path, GATEWAY_PORT=str(free_port()), GATEWAY_DRAIN_SECONDS="0.5")
    migrate = subprocess.run([str(ENTRYPOINT), "migrate"], cwd=BASE_DIR, env=env, capture_output=True, text=True)
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    unknown = subprocess.run([str(ENTRYPOINT), "nonsense"], cwd=BASE_DIR, env=env, capture_output=True, text=True)
    assert unknown.returncode == 64 and "unknown role 'nonsense'" in unknown.stderr

    port = int(env["GATEWAY_PORT"])
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen([str(ENTRYPOINT)], cwd=BASE_DIR, env=env, stdout=log, stderr=log)
        try:
            wait_for_port(port, server, timeout=120)
            # the host is 0.0.0.0 in the container; here reached on loopback
            assert httpx.get(f"http://127.0.0.1:{port}/health/ready", timeout=10).status_code == 200
            check = subprocess.run(healthcheck_command(), env=env, capture_output=True, text=True, timeout=30)
            assert check.returncode == 0, check.stderr
            server.send_signal(signal.SIGTERM)
            assert server.wait(30) == 0  # sh exec'd python: the signal reaches the server itself
            failed = subprocess.run(healthcheck_command(), env=env, capture_output=True, text=True, timeout=30)
            assert failed.returncode != 0  # nothing answers any more: the check fails
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()


def test_the_schedule_role_runs_the_periodic_jobs_and_stops_on_sigterm(tmp_path):
    env = entrypoint_env(tmp_path, GATEWAY_SCHEDULE_INTERVAL_SECONDS="3600")
    migrate = subprocess.run([str(ENTRYPOINT), "migrate"], cwd=BASE_DIR, env=env, capture_output=True, text=True)
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    with tempfile.TemporaryFile() as log:
        scheduler = subprocess.Popen([str(ENTRYPOINT), "schedule"], cwd=BASE_DIR, env=env, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 120
            while b"expired entries deleted" not in (output := log_text(log)) and time.monotonic() < deadline:
                assert scheduler.poll() is None, output
                time.sleep(0.2)
            scheduler.send_signal(signal.SIGTERM)  # while it sleeps until the next round
            assert scheduler.wait(30) == 0
        finally:
            if scheduler.poll() is None:
                scheduler.kill()
                scheduler.wait()
        output = log_text(log).decode()
    assert "charged 0 expired reservation(s)" in output  # budgets_reap
    assert "Aggregated 1 day(s)" in output and "0 expired entries deleted" in output  # the daily jobs, once at start
    assert "failed" not in output, output


def log_text(log) -> bytes:
    log.seek(0)
    return log.read()
