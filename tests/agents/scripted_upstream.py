"""A scripted LLM provider for driving real coding agents (their CLIs) through the gateway: a real aiohttp server on
an ephemeral loopback port, in a background thread, speaking the three provider formats the gateway's adapters use,
JSON and streamed (SSE):

- `POST /v1/chat/completions`            openai-chat
- `POST /v1/responses`                   openai-responses
- `POST /v1/messages`                    anthropic-messages
- `POST /v1/messages/count_tokens`       Anthropic's count (`{"input_tokens": N}`)
- `POST /v1/responses/input_tokens`      OpenAI's count (`{"object": "response.input_tokens", "input_tokens": N}`)

N is `count_tokens(raw body)` (a quarter of its bytes, rounded up), so a test can compare what the gateway answers
with what was forwarded.

The script is decided from each request alone (agents send side requests of their own: titles, quota checks,
summaries), so it is stateless:

1. the latest input holds a tool result (Anthropic `tool_result` block, Chat `tool` message, Responses
   `function_call_output` item) → the text answer `ANSWER_PREFIX + <that output>`;
2. else, the conversation's user text mentions `upstream.file_path` and the request offers one of the tools in
   `upstream.tools` (name → function(path) → the call's arguments) → a call of that tool asking it to print the file
   (for Claude Code's `Bash`: `{"command": "cat <path>"}`);
3. else → the text answer `upstream.default_text`.

With `upstream.thinking = True`, an anthropic-messages answer that calls the tool also carries a signed thinking
block (signature `upstream.signature`), so a test can check that the agent sent it back the next turn.

Another agent is taught by adding its shell tool: `upstream.tools["exec_command"] = lambda path: {"cmd": f"cat
{path}"}`.

Recording: `upstream.requests` (`RecordedRequest`s of tests/fakes/fake_upstream.py: path, headers, body, raw, ...).
Use: `ScriptedUpstream().start()` ... `.stop()`; `base_url` is `http://127.0.0.1:<port>/v1`.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

from tests.fakes import fake_formats as formats
from tests.fakes.fake_upstream import RecordedRequest

ANSWER_PREFIX = "The file says: "
DEFAULT_TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "Bash": lambda path: {"command": f"cat {path}", "description": "Print the file"},  # Claude Code
}


def count_tokens(raw: bytes) -> int:
    return -(-len(raw) // 4)


def _text_of(content: Any) -> str:
    """The text of a content value of any of the three formats (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            _text_of(part.get("text") or part.get("content") or "") for part in content if isinstance(part, dict)
        )
    return ""


def tool_output(path: str, body: dict[str, Any]) -> str | None:
    """The tool result the latest input carries, or None."""
    if path.endswith("/messages"):
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        for block in last.get("content") if isinstance(last.get("content"), list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return _text_of(block.get("content"))
        return None
    if path.endswith("/chat/completions"):
        messages = body.get("messages") or []
        tools = [m for m in messages[-3:] if isinstance(m, dict) and m.get("role") == "tool"]
        last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        if tools and messages.index(tools[-1]) > last_assistant:
            return _text_of(tools[-1].get("content"))
        return None
    items = body.get("input") if isinstance(body.get("input"), list) else []
    for item in reversed(items):
        if not isinstance(item, dict):
            continue
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            return _text_of(item.get("output"))
        if item.get("type") in ("function_call", "custom_tool_call") or item.get("role") == "assistant":
            return None
    return None


def _user_text(path: str, body: dict[str, Any]) -> str:
    if path.endswith("/responses"):
        items = body.get("input")
        if isinstance(items, str):
            return items
        return " ".join(
            _text_of(i.get("content")) for i in items or () if isinstance(i, dict) and i.get("role") == "user"
        )
    messages = body.get("messages") or []
    return " ".join(_text_of(m.get("content")) for m in messages if isinstance(m, dict) and m.get("role") == "user")


def _tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or ():
        if isinstance(tool, dict):
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if isinstance(name, str):
                names.append(name)
    return names


class ScriptedUpstream:
    """The scripted provider server; `file_path`, `tools`, `default_text`, `thinking` and `signature` are the
    knobs (see the module docstring)."""

    def __init__(self) -> None:
        self.file_path = ""
        self.tools = dict(DEFAULT_TOOLS)
        self.default_text = "OK."
        self.thinking = False
        self.signature = "sig-scripted-1"
        self.requests: list[RecordedRequest] = []
        self.port = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedUpstream:
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(started,), daemon=True, name="scripted-upstream")
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("scripted upstream did not start")
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop = None

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
        self.file_path, self.tools, self.default_text = "", dict(DEFAULT_TOOLS), "OK."
        self.thinking, self.signature = False, "sig-scripted-1"

    def recorded(self, suffix: str) -> list[RecordedRequest]:
        """The requests whose path ends with `suffix` (e.g. "/messages", "/count_tokens")."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith(suffix)]

    def _serve(self, started: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.add_routes(
            [
                web.post("/v1/chat/completions", self._handle),
                web.post("/v1/responses", self._handle),
                web.post("/v1/messages", self._handle),
                web.post("/v1/messages/count_tokens", self._count),
                web.post("/v1/responses/input_tokens", self._count),
            ]
        )
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        started.set()
        self._loop.run_forever()

    async def _record(self, request: web.Request) -> RecordedRequest:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        payload = body if isinstance(body, dict) else {}
        record = RecordedRequest(
            path=request.path,
            method=request.method,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            raw=raw,
            model=str(payload.get("model", "")),
            stream=bool(payload.get("stream")),
        )
        with self._lock:
            self.requests.append(record)
        return record

    async def _count(self, request: web.Request) -> web.Response:
        record = await self._record(request)
        answer: dict[str, Any] = {"input_tokens": count_tokens(record.raw)}
        if request.path.endswith("/input_tokens"):
            answer = {"object": "response.input_tokens", **answer}
        return web.json_response(answer)

    def reply(self, path: str, body: dict[str, Any]) -> formats.Reply:
        """The scripted reply to one request (see the module docstring)."""
        output = tool_output(path, body)
        if output is not None:
            return formats.Reply(pieces=[ANSWER_PREFIX, output], input_tokens=200, cached_tokens=0)
        offered = [name for name in _tool_names(body) if name in self.tools]
        if self.file_path and offered and self.file_path in _user_text(path, body):
            arguments = json.dumps(self.tools[offered[0]](self.file_path))
            half = len(arguments) // 2
            reply = formats.Reply(
                tool_name=offered[0],
                tool_call_id="toolu_scripted_1" if path.endswith("/messages") else "call_scripted_1",
                tool_arguments=[arguments[:half], arguments[half:]],
                finish="tool_calls",
                input_tokens=200,
                cached_tokens=0,
            )
            if self.thinking and path.endswith("/messages"):
                reply.reasoning = ["I should ", "read the file."]
                reply.signature = self.signature
            return reply
        return formats.Reply(pieces=[self.default_text], input_tokens=50, cached_tokens=0)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        record = await self._record(request)
        body = record.body if isinstance(record.body, dict) else {}
        reply = self.reply(request.path, body)
        if request.path.endswith("/responses"):
            document, frames = (
                formats.responses_json(record.model, reply),
                formats.responses_frames(record.model, reply),
            )
        elif request.path.endswith("/chat/completions"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            document = formats.chat_json(record.model, reply)
            frames = formats.chat_frames(record.model, reply, include_usage)
        else:
            document, frames = formats.messages_json(record.model, reply), formats.messages_frames(record.model, reply)
        if not record.stream:
            return web.json_response(document)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for frame in frames:
            await response.write(frame)
        await response.write_eof()
        return response


def main() -> None:  # pragma: no cover (a manual aid: `python -m tests.agents.scripted_upstream /path/to/file`)
    import sys
    import time

    upstream = ScriptedUpstream().start()
    upstream.file_path = sys.argv[1] if len(sys.argv) > 1 else ""
    print(upstream.base_url, flush=True)
    try:
        while True:
            time.sleep(1)
    finally:
        upstream.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
