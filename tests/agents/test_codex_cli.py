"""Codex CLI (the real CLI from npm, unmodified, streaming as it always does) through the gateway's /api/v1/responses
on each provider format served by the scripted upstream (tests/agents/scripted_upstream.py): asked to read a file
with random content, it calls its `exec_command` tool (`cat`), the result goes back through the gateway, and the
final answer quotes it. On the Anthropic format the model thinks before the call (a signed thinking block): Codex
gets it as a reasoning item with `encrypted_content` and sends it back, and the block reaches the provider intact.
Once over the Responses WebSocket too (`supports_websockets = true`).

The CLI is installed by .ci/run into GATEWAY_AGENTS_DIR (npm, pinned); without it the tests skip, or fail when
GATEWAY_REQUIRE_AGENTS is set.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest

from tests.agents.scripted_upstream import ANSWER_PREFIX, ScriptedUpstream
from tests.inference.conftest import add_endpoint, generations, wait_idle
from tests.missing_tools import skip_or_fail

VERSION = "0.171.0"  # the version .ci/run installs
FORMATS = ["openai-chat", "openai-responses", "anthropic-messages"]
PROVIDER_KEY = "sk-scripted-codex-0123456789"


def codex_cli() -> Path:
    folder = Path(os.environ.get("GATEWAY_AGENTS_DIR") or Path.home() / ".cache" / "gateway-agents")
    path = folder / "node_modules" / ".bin" / "codex"
    if not path.exists():
        skip_or_fail(str(path), f"npm install --prefix {folder} @openai/codex@{VERSION}", "GATEWAY_REQUIRE_AGENTS")
    return path


@pytest.fixture(scope="module")
def codex_upstream():
    server = ScriptedUpstream().start()
    server.tools = {"exec_command": lambda path: {"cmd": f"cat {path}"}}  # Codex's shell tool
    yield server
    server.stop()


@pytest.fixture
def codex_catalog(gateway_server, codex_upstream, transactional_db, monkeypatch):
    """{provider format: model slug}, each served by the scripted upstream."""
    from inference.models import Model
    from inference.routing import clear_caches

    codex_upstream.reset()
    codex_upstream.tools = {"exec_command": lambda path: {"cmd": f"cat {path}"}}
    monkeypatch.setenv("SCRIPTED_CODEX_KEY", PROVIDER_KEY)
    slugs = {}
    for api_format in FORMATS:
        slug = f"codex/{api_format}"
        add_endpoint(
            slug,
            f"codex-{api_format}",
            api_format=api_format,
            base_url=codex_upstream.base_url,
            api_key_env="SCRIPTED_CODEX_KEY",
            upstream_model=f"scripted-{api_format}",
        )
        Model.objects.filter(slug=slug).update(context_length=200_000)  # an agent's prompt is large
        slugs[api_format] = slug
    clear_caches()
    yield slugs
    wait_idle()


def run_codex(gateway_url: str, key: str, model: str, prompt: str, home: Path, **provider) -> str:
    """`codex exec` with a provider pointing at the gateway (the docs/agents.md configuration); its stdout."""
    codex_home = home / "codex-home"
    codex_home.mkdir(exist_ok=True)
    extra = "".join(f"{name} = {value}\n" for name, value in provider.items())
    top = 'web_search = "disabled"\n' if not model.endswith("openai-responses") else ""  # no hosted search there
    (codex_home / "config.toml").write_text(
        f'model = "{model}"\nmodel_provider = "gateway"\n{top}\n'
        f'[model_providers.gateway]\nname = "Gateway"\nbase_url = "{gateway_url}/api/v1"\n'
        f'env_key = "GATEWAY_API_KEY"\nwire_api = "responses"\n{extra}'
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "GATEWAY_API_KEY": key,
    }
    command = [str(codex_cli()), "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", prompt]
    done = subprocess.run(command, env=env, cwd=home, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    return done.stdout


def _read_file_task(upstream: ScriptedUpstream, folder: Path) -> tuple[str, str]:
    content = f"codex-secret-{secrets.token_hex(8)}"
    path = folder / "note.txt"
    path.write_text(content + "\n")
    upstream.file_path = str(path)
    return content, f"Print the content of the file {path} and tell me what it says."


@pytest.mark.parametrize("api_format", FORMATS)
def test_codex_reads_a_file_through_the_gateway(
    gateway_server, org, codex_catalog, codex_upstream, tmp_path, api_format
):
    codex_upstream.thinking = api_format == "anthropic-messages"
    codex_upstream.signature = f"sig-{secrets.token_hex(16)}"
    content, prompt = _read_file_task(codex_upstream, tmp_path)
    stdout = run_codex(gateway_server.url, org.inference_key, codex_catalog[api_format], prompt, tmp_path)
    assert stdout.startswith(ANSWER_PREFIX) and content in stdout  # stdout: the final answer only
    turns = [r for r in codex_upstream.requests if "_tokens" not in r.path]
    assert len(turns) >= 2 and all(r.stream for r in turns)  # the CLI streams; the gateway streams upstream
    first, second = turns[-2], turns[-1]
    if api_format == "openai-responses":  # Codex's members reach a Responses provider as sent
        assert first.body["include"] == ["reasoning.encrypted_content"] and first.body["store"] is False
        assert first.body["client_metadata"]["x-codex-window-id"] and first.body["prompt_cache_key"]
        kinds = [t["type"] for t in first.body["tools"]]
        assert "namespace" in kinds and "web_search" in kinds
        outputs = [i for i in second.body["input"] if i.get("type") == "function_call_output"]
        assert content in outputs[-1]["output"]
    elif api_format == "openai-chat":  # namespace tools flattened into functions
        names = [t["function"]["name"] for t in first.body["tools"]]
        assert "exec_command" in names and any("__" in name for name in names)
        assert second.body["messages"][-1]["role"] == "tool" and content in second.body["messages"][-1]["content"]
    else:  # the signed thinking went to Codex as encrypted reasoning and came back as the same block
        assistant = second.body["messages"][-2]
        assert assistant["content"][0] == {
            "type": "thinking",
            "thinking": "I should read the file.",
            "signature": codex_upstream.signature,
        }
        assert assistant["content"][1]["type"] == "tool_use" and assistant["content"][1]["name"] == "exec_command"


def test_codex_over_the_responses_websocket(gateway_server, org, codex_catalog, codex_upstream, tmp_path):
    from inference.models import Generation

    content, prompt = _read_file_task(codex_upstream, tmp_path)
    model = codex_catalog["openai-chat"]
    stdout = run_codex(gateway_server.url, org.inference_key, model, prompt, tmp_path, supports_websockets="true")
    assert stdout.startswith(ANSWER_PREFIX) and content in stdout
    turns = len([r for r in codex_upstream.requests if "_tokens" not in r.path])
    assert turns >= 2
    generations(turns)  # the rows are written just after each turn's answer: wait for them
    rows = Generation.objects.filter(model=model)
    assert rows.count() == turns
    assert all(row.streamed and row.client_metadata.get("x-codex-window-id") for row in rows)
