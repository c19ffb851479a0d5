"""`python -m gateway_project.serve` ignores X-Forwarded-For unless trusted proxies are configured.

Observed through /metrics, which is served to local addresses only (GATEWAY_METRICS_ALLOWED_CIDRS, default
127.0.0.1): a local client that claims to be 203.0.113.5 is still local (200) by default; with
FORWARDED_ALLOW_IPS=127.0.0.1 the claim of the trusted local proxy counts (403).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from gateway_project.serve import with_proxy_headers_default
from tests.budgets.test_concurrency import wait_for_port
from tests.conftest import free_port

BASE_DIR = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "environ", "added"),
    [
        ([], {}, True),
        (["--proxy-headers"], {}, False),
        (["--no-proxy-headers"], {}, False),
        (["--forwarded-allow-ips", "10.0.0.1"], {}, False),
        (["--forwarded-allow-ips=10.0.0.1"], {}, False),
        ([], {"FORWARDED_ALLOW_IPS": "10.0.0.1"}, False),
    ],
)
def test_proxy_headers_are_off_unless_configured(args, environ, added):
    assert with_proxy_headers_default(args, environ) == ([*args, "--no-proxy-headers"] if added else args)


def serve_and_scrape(tmp_path, extra_env: dict) -> int:
    port = free_port()
    env = {
        **{name: value for name, value in os.environ.items() if name != "FORWARDED_ALLOW_IPS"},
        "DATABASE_URL": f"sqlite:///{tmp_path}/serve.sqlite3",
        "REDIS_URL": "",
        "DJANGO_SECRET_KEY": "serve-test",
        "GATEWAY_LOG_LEVEL": "WARNING",
        "GATEWAY_DRAIN_SECONDS": "0",  # no balancer in front: SIGTERM stops at once
        **extra_env,
    }
    command = [sys.executable, "-m", "gateway_project.serve", "gateway_project.asgi:application"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-access-log"]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=log, stderr=log)
        try:
            wait_for_port(port, process, timeout=120)
            headers = {"X-Forwarded-For": "203.0.113.5"}
            return httpx.get(f"http://127.0.0.1:{port}/metrics", headers=headers, timeout=30).status_code
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_a_forwarded_for_header_is_ignored_by_default(tmp_path):
    assert serve_and_scrape(tmp_path, {}) == 200


def test_a_configured_trusted_proxy_sets_the_client_address(tmp_path):
    assert serve_and_scrape(tmp_path, {"FORWARDED_ALLOW_IPS": "127.0.0.1"}) == 403
