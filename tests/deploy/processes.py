"""Gateway processes started as production starts them, on the pytest database (PostgreSQL, or the SQLite file)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.db import connection

from tests.budgets.test_concurrency import database_url, wait_for_port

BASE_DIR = Path(__file__).resolve().parents[2]


def process_env(**extra: str) -> dict[str, str]:
    """The environment of a gateway or worker process on the test database (and REDIS_URL when set)."""
    settings_dict = connection.settings_dict
    # On SQLite the test database is a file (tests/conftest.py), shared with the test.
    url = database_url(settings_dict) if connection.vendor == "postgresql" else f"sqlite:///{settings_dict['NAME']}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "REDIS_URL": settings.REDIS_URL or "",
        "DJANGO_SECRET_KEY": "deploy-test",
        "GATEWAY_LOG_LEVEL": "WARNING",
    }
    env.update(extra)
    return env


def serve_command(port: int, graceful_timeout: float = 20) -> list[str]:
    """The production command line (README, docs/deploy.md) on a loopback port."""
    command = [sys.executable, "-m", "gateway_project.serve", "gateway_project.asgi:application"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--lifespan", "on", "--no-server-header"]
    command += [
        "--timeout-graceful-shutdown",
        f"{graceful_timeout:g}",
        "--timeout-keep-alive",
        "75",
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    return command


def spawn_gateway(port: int, env: dict[str, str], log, graceful_timeout: float = 20) -> subprocess.Popen:
    return subprocess.Popen(serve_command(port, graceful_timeout), cwd=BASE_DIR, env=env, stdout=log, stderr=log)


def start_gateway(port: int, env: dict[str, str], log, graceful_timeout: float = 20) -> subprocess.Popen:
    process = spawn_gateway(port, env, log, graceful_timeout)
    wait_for_port(port, process, timeout=120)  # the shared machine may be busy
    return process
