"""docs/clients.md's Vercel AI SDK recipe (`ai` with `@openrouter/ai-sdk-provider` and
`@ai-sdk/openai-compatible`), run by node against a live gateway: text, a tool loop and `generateObject`.

The packages come from npm, installed by .ci/run into GATEWAY_CLIENTS_NODE_DIR (outside the repository).
Without them the test is skipped (listed at the end of the run with the command that installs them), unless
GATEWAY_REQUIRE_AGENTS (set by .ci/run) makes it fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.clients.conftest import recipe
from tests.inference.conftest import generations
from tests.missing_tools import skip_or_fail

PACKAGES = ("ai", "@openrouter/ai-sdk-provider", "@ai-sdk/openai-compatible", "zod")


def node_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gateway-clients-node"
    return Path(os.environ.get("GATEWAY_CLIENTS_NODE_DIR") or default)


@pytest.fixture
def node_modules():
    folder = node_dir()
    missing = [p for p in PACKAGES if not (folder / "node_modules" / p / "package.json").exists()]
    if shutil.which("node") is None or missing:
        install = f"npm install --prefix {folder} " + " ".join(PACKAGES)
        skip_or_fail(f"node with the npm packages {', '.join(missing)}", install, "GATEWAY_REQUIRE_AGENTS")
    return folder


def test_text_tool_loop_and_object(node_modules, gateway_env, tmp_path):
    # ES modules resolve packages from the script's own folder upwards: the script goes beside node_modules.
    script = node_modules / "recipes" / f"vercel-ai-{os.getpid()}.mjs"
    script.parent.mkdir(exist_ok=True)
    script.write_text(recipe("vercel-ai"))
    try:
        done = subprocess.run(
            ["node", str(script)], env={**os.environ, **gateway_env}, capture_output=True, text=True, timeout=60
        )
    finally:
        script.unlink(missing_ok=True)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    expected = {
        "text": "Echo: Say hello",
        "loop": "Echo: getWeather returned 18 degrees in Paris",
        "object": {"name": "Paris has 2100000 inhabitants", "population": 2100000},
    }
    assert results == {"openrouter": expected, "compatible": expected}
    assert len(generations(8)) == 8
