"""Fixtures of the agent tests: the scripted upstream (tests/agents/scripted_upstream.py), a catalog with one model
per provider format served by it, and where the agent CLIs are installed.

The CLIs come from npm, pinned, installed by .ci/run into `GATEWAY_AGENTS_DIR` (default ~/.cache/gateway-agents):
`npm install --prefix "$GATEWAY_AGENTS_DIR" @anthropic-ai/claude-code@<version>`. A test whose CLI is missing is
skipped, or fails when `GATEWAY_REQUIRE_AGENTS` is set (as .ci/run does).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.agents.scripted_upstream import ScriptedUpstream
from tests.inference.conftest import add_endpoint, wait_idle
from tests.missing_tools import skip_or_fail

FORMATS = ["openai-chat", "openai-responses", "anthropic-messages"]
PROVIDER_KEY = "sk-scripted-provider-0123456789"
PACKAGES = {"claude": "@anthropic-ai/claude-code@2.1.197"}  # the versions .ci/run installs


def agents_dir() -> Path:
    return Path(os.environ.get("GATEWAY_AGENTS_DIR") or Path.home() / ".cache" / "gateway-agents")


def require_cli(name: str) -> Path:
    """The path of an installed agent CLI (`node_modules/.bin/<name>` under GATEWAY_AGENTS_DIR); skips the test
    when it is missing, or fails it when GATEWAY_REQUIRE_AGENTS is set."""
    path = agents_dir() / "node_modules" / ".bin" / name
    if not path.exists():
        package = PACKAGES.get(name, name)
        skip_or_fail(str(path), f"npm install --prefix {agents_dir()} {package}", "GATEWAY_REQUIRE_AGENTS")
    return path


@pytest.fixture(scope="session")
def scripted_server():
    server = ScriptedUpstream().start()
    yield server
    server.stop()


@pytest.fixture
def scripted(scripted_server):
    scripted_server.reset()
    yield scripted_server
    scripted_server.reset()


@pytest.fixture
def agent_catalog(gateway_server, scripted, transactional_db, monkeypatch):
    """{provider format: model slug}: one catalog model per provider format, served by the scripted upstream."""
    from inference.models import Model
    from inference.routing import clear_caches

    monkeypatch.setenv("SCRIPTED_PROVIDER_KEY", PROVIDER_KEY)
    slugs = {}
    for api_format in FORMATS:
        slug = f"agents/{api_format}"
        add_endpoint(
            slug,
            f"scripted-{api_format}",
            api_format=api_format,
            base_url=scripted.base_url,
            api_key_env="SCRIPTED_PROVIDER_KEY",
            upstream_model=f"scripted-{api_format}",
        )
        Model.objects.filter(slug=slug).update(context_length=200_000)  # an agent's prompt is large
        slugs[api_format] = slug
    clear_caches()
    yield slugs
    wait_idle()
