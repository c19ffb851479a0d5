"""Claude Code (the real CLI from npm, unmodified, streaming as it runs by default) through the gateway's
/api/v1/messages, on each provider format served by the scripted upstream: asked to read a file with random
content, it calls its Bash tool (`cat`), the result goes back through the gateway, and the final answer quotes it.
On the Anthropic format also thinking with tool use (the signed thinking block goes back the next turn)."""

from __future__ import annotations

import os
import secrets
import subprocess

import pytest

from tests.agents.conftest import FORMATS, require_cli
from tests.agents.scripted_upstream import ANSWER_PREFIX


def run_claude(
    gateway_url: str, key: str, model: str, prompt: str, home, allowed: str = "Bash"
) -> subprocess.CompletedProcess:
    cli = require_cli("claude")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),  # a fresh configuration: no login, no settings of the machine's user
        "ANTHROPIC_BASE_URL": f"{gateway_url}/api",
        "ANTHROPIC_API_KEY": key,
        "DISABLE_AUTOUPDATER": "1",
    }
    return subprocess.run(
        [str(cli), "-p", prompt, "--model", model, "--allowedTools", allowed],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _read_file_task(scripted, tmp_path) -> tuple[str, str]:
    content = f"agent-secret-{secrets.token_hex(8)}"
    path = tmp_path / "note.txt"
    path.write_text(content + "\n")
    scripted.file_path = str(path)
    return content, f"Print the content of the file {path} and tell me what it says."


@pytest.mark.parametrize("api_format", FORMATS)
def test_claude_code_reads_a_file_through_the_gateway(
    gateway_server, org, agent_catalog, scripted, tmp_path, api_format
):
    content, prompt = _read_file_task(scripted, tmp_path)
    done = run_claude(gateway_server.url, org.inference_key, agent_catalog[api_format], prompt, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    assert content in done.stdout
    assert ANSWER_PREFIX.strip() in done.stdout
    turns = [r for r in scripted.requests if "/count_tokens" not in r.path and "/input_tokens" not in r.path]
    assert len(turns) >= 2 and all(r.stream for r in turns)  # the CLI streams; the gateway streams upstream
    first, second = turns[-2], turns[-1]
    side = [r for r in turns[:-2] if not r.body.get("tools")]  # its session title, asked as structured output
    assert side and all(r.model == f"scripted-{api_format}" for r in side)
    if api_format == "anthropic-messages":
        assert side[0].body["output_config"]["format"]["type"] == "json_schema"
    elif api_format == "openai-chat":
        assert side[0].body["response_format"]["type"] == "json_schema"
    else:
        assert side[0].body["text"]["format"]["type"] == "json_schema"
    assert first.model == second.model == f"scripted-{api_format}"
    if api_format == "anthropic-messages":  # Claude Code's members reach an Anthropic-format provider as sent
        assert first.body["context_management"] == {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
        assert first.body["thinking"] == {"type": "adaptive"} and first.body["output_config"] == {"effort": "high"}
        betas = first.headers["anthropic-beta"].split(",")
        assert "context-management-2025-06-27" in betas and "mid-conversation-system-2026-04-07" in betas
        assert [m["role"] for m in first.body["messages"][:2]] == ["user", "system"]
        assert any("cache_control" in block for block in first.body["system"])
        result = second.body["messages"][-1]["content"][0]
        assert result["type"] == "tool_result" and content in result["content"]
    elif api_format == "openai-chat":  # the system message inside `messages` stays at its place
        roles = [m["role"] for m in first.body["messages"]]
        assert roles[0] == "system" and "system" in roles[2:]
        assert first.body["reasoning_effort"] == "high"
        assert second.body["messages"][-1]["role"] == "tool" and content in second.body["messages"][-1]["content"]
    else:
        roles = [i.get("role") for i in first.body["input"] if i.get("type", "message") == "message"]
        assert "developer" in roles[1:]
        assert first.body["reasoning"]["effort"] == "high"
        outputs = [i for i in second.body["input"] if i.get("type") == "function_call_output"]
        assert content in outputs[-1]["output"]


def test_claude_code_thinking_with_tool_use_on_the_anthropic_format(
    gateway_server, org, agent_catalog, scripted, tmp_path
):
    """The scripted model thinks (a signed thinking block) before it calls Bash: the CLI gets the block through the
    gateway's stream and sends it back, signature intact, with the tool result."""
    scripted.thinking = True
    scripted.signature = f"sig-{secrets.token_hex(16)}"
    content, prompt = _read_file_task(scripted, tmp_path)
    done = run_claude(gateway_server.url, org.inference_key, agent_catalog["anthropic-messages"], prompt, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    assert content in done.stdout
    second = scripted.recorded("/messages")[-1]
    assistant = second.body["messages"][-2]
    assert assistant["role"] == "assistant"
    thinking = assistant["content"][0]
    assert thinking == {"type": "thinking", "thinking": "I should read the file.", "signature": scripted.signature}
    assert assistant["content"][1]["type"] == "tool_use"


def test_claude_code_web_search_through_the_gateways_server_tool(
    gateway_server, org, agent_catalog, scripted, tmp_path, settings, fake_web
):
    """The model calls Claude Code's WebSearch tool; the CLI asks the gateway for Anthropic's web search server tool
    (`max_uses: 8`), which the gateway runs with its own search (SearXNG's API, the fake web) in its tool loop on an
    OpenAI-chat provider; the results reach the CLI, then the model, then the answer."""
    settings.GATEWAY_SEARXNG_URL = fake_web.url
    settings.GATEWAY_WEB_SEARCH_ENGINE = ""
    title = f"Forecast {secrets.token_hex(6)}"
    fake_web.results = [{"title": title, "url": "https://weather.example.com/paris", "snippet": "Sunny."}]
    marker = f"weather-{secrets.token_hex(4)}"
    scripted.file_path = marker  # the scripted model calls a tool when the user text names this
    scripted.tools = {"WebSearch": lambda m: {"query": m}, "web_search": lambda m: {"query": m}}
    done = run_claude(
        gateway_server.url,
        org.inference_key,
        agent_catalog["openai-chat"],
        f"Search the web for {marker}.",
        tmp_path,
        allowed="WebSearch",
    )
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    assert title in done.stdout
    assert [r[1].get("q") for r in fake_web.requests if r[0] == "/search"] == [marker]
    loop = [
        r for r in scripted.requests if [t["function"]["name"] for t in r.body.get("tools") or ()] == ["web_search"]
    ]
    assert len(loop) == 2 and loop[1].body["messages"][-1]["role"] == "tool"
