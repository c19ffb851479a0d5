"""The public router API's official Python SDK (`openrouter`, pinned in requirements-dev.txt), unmodified,
pointed at the whole gateway on a loopback port. Every assertion reads the SDK's typed result, never `.raw`:
a response that lacks a field the SDK's models require fails with `ResponseValidationError`."""

from __future__ import annotations

import pytest
from openrouter import OpenRouter

TIMEOUT_MS = 60_000  # the shared CI machine can be slow; a hang still fails


@pytest.fixture
def sdk(gateway_server, org, transactional_db):
    """An SDK client with the organization's management key (retries off: a failure must show at once)."""
    with OpenRouter(
        api_key=org.management_key, server_url=f"{gateway_server.url}/api/v1", retry_config=None, timeout_ms=TIMEOUT_MS
    ) as client:
        yield client


@pytest.fixture
def inference_sdk(gateway_server, org, transactional_db):
    with OpenRouter(
        api_key=org.inference_key, server_url=f"{gateway_server.url}/api/v1", retry_config=None, timeout_ms=TIMEOUT_MS
    ) as client:
        yield client
