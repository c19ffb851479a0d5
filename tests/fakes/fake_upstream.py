"""A fake LLM provider: a real aiohttp HTTP server on an ephemeral loopback port, in a background thread.

It serves the three wire formats the gateway's adapters speak, JSON and streamed (SSE):

- `POST /v1/responses`          OpenAI Responses
- `POST /v1/chat/completions`   OpenAI Chat Completions (streams a usage chunk when `stream_options.include_usage`)
- `POST /v1/messages`           Anthropic Messages
- `POST /v1/embeddings`         OpenAI embeddings (JSON only; see `_embeddings` for the vectors; `fail-<status>`,
                                `garbage-json`, `hang` and the slow scenarios apply)
- `POST /v1/messages/count_tokens` / `POST /v1/responses/input_tokens`   Anthropic's and OpenAI's input token
                                counts: `count_answer` (a quarter of the request's bytes, rounded up; the
                                `fail-<status>` and slow scenarios apply)
- `POST /v1/moderations`        OpenAI moderations (JSON only; `MODERATION_WORDS` decide the verdicts; the same
                                failure scenarios apply)

Use (pytest): the `fake_upstream` fixture (tests/fakes/fixtures.py) gives a started, freshly reset
`FakeUpstream`; point a catalog endpoint or an `UpstreamCall` at `fake_upstream.base_url`
(`http://127.0.0.1:<port>/v1`). Outside pytest: `FakeUpstream().start()` ... `.stop()`.

The answer (default): text "Hello from the fake upstream." in 5 stream pieces, usage input 12 (4 cached),
output 7 (2 reasoning); Anthropic reports `input_tokens` 8 + `cache_read_input_tokens` 4. Change the text
with `fake.reply_pieces = [...]`.

Scenarios, chosen by the upstream model name (the last `/`-separated segment of `model`):

| model                     | behaviour                                                                      |
|---------------------------|--------------------------------------------------------------------------------|
| anything else             | the text answer                                                                |
| `reasoning`               | the text answer after reasoning text "Thinking it over." in 2 pieces (Responses   |
|                           | summary, Chat `reasoning`, Anthropic thinking block)                           |
| `tool-call`               | a function call of the request's first tool (or `get_weather`), `{"city": "Paris"}` |
| `length`                  | text answer, finish `length` / `max_tokens` / Responses `incomplete`           |
| `content-filter`          | text answer, finish `content_filter` / `refusal`                               |
| `fail-<status>`           | that HTTP status with the format's error body (429: `Retry-After: fake.retry_after`) |
|                           | (a 401 quotes the key it got, as real providers do; a 503 says "overloaded")   |
| `slow-first-byte[-<ms>]`  | waits (default `fake.first_byte_delay` = 2 s) before sending anything          |
| `slow-first-event[-<ms>]` | sends the 200 head at once, waits before the first body byte / event           |
| `slow-stream[-<ms>]`      | waits between stream frames (default `fake.chunk_delay` = 0.1 s)              |
| `cut-stream`              | streams half of the frames then drops the connection (JSON: half the body)     |
| `malformed-sse`           | one good frame, then `data: {not json`, then ends                              |
| `garbage-json`            | 200 `application/json` whose body is not JSON (stream requests too)            |
| `error-event`             | half of the frames, then the format's in-stream error event                   |
| `hang`                    | never answers (until the client goes away)                                     |

`fake.response_headers` (default none) are added to every answer, e.g. a `Set-Cookie`.

Billing (usage reported): `fake.billing = "fixed"` (default, the figures above) or `"size"`, a provider that
bills what it is sent: input tokens = ceil(request bytes / 4) + 4 per message + 8, where each image part
counts `fake.image_tokens` instead of its bytes (`billed_input_tokens`); output tokens = the output cap the
request sent (`max_output_tokens`, `max_completion_tokens` or `max_tokens`: the model writes to its cap), or
`fake.uncapped_output_tokens` when it sent none. `fake.omit_usage = True` answers without any usage, and so
does every request whose upstream model contains `no-usage` (e.g. `no-usage/slow-stream-40`).
`fake.service_tier` (default none) is the tier every answer reports it was served at (Responses and Chat
`service_tier`; Anthropic `usage.service_tier`, or `usage.speed: "fast"` for `fast`).

Scripted conversations (the server-tool loop): `fake.script = [Reply(...), ...]` plays those replies in order,
one per request and whatever the model (the scenarios above still apply to failures and delays; `billing`
applies to them too), then falls back to the default answer; `fake.model_scripts[upstream_model] = [Reply(...),
...]` does the same for the requests of one upstream model (played first: parallel calls to several models stay
deterministic). A `Reply` is text pieces (with `images`: image output URLs, answered as Chat Completions
`message.images`) or a function call (`tool_name`, `tool_arguments`); `more_calls` adds parallel calls (Responses
format only); `fail_status` answers that HTTP error instead.

A request whose key (`Authorization: Bearer <key>` or `x-api-key`) is in `fake.rejected_keys`
(default `{"sk-invalid"}`) gets 401 whatever the model.

Recording: `fake.requests` is the list of `RecordedRequest(path, method, headers (lower-case names),
body (parsed JSON or None), raw, model, stream)`, in arrival order; `fake.last` is the latest;
`fake.requests_for(model)` filters. A client that goes away during a response (a stream being written,
a slow or hanging answer) is recorded in `fake.disconnects` (paths), sets `fake.disconnected` (a
`threading.Event`) and `fake.disconnect_event` (an `asyncio.Event` of the server's own loop); from any
event loop use `await fake.wait_disconnected(timeout)`, from sync code `fake.disconnected.wait(timeout)`.
`fake.reset()` clears recordings and restores the defaults (the fixture calls it for every test).
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes import fake_formats as formats

DEFAULT_PIECES = ["Hello", " from", " the", " fake", " upstream."]
TOOL_ARGUMENT_PIECES = ['{"city":', ' "Paris"}']
REASONING_PIECES = ["Thinking it ", "over."]
OUTPUT_CAPS = ("max_output_tokens", "max_completion_tokens", "max_tokens")
IMAGE_PARTS = frozenset({"input_image", "image_url", "image"})
# POST /v1/moderations flags an input for a category when it contains one of its words.
MODERATION_WORDS = {"violence": ("kill", "murder"), "harassment": ("idiot",), "hate": ("hateful",)}


def _image_bytes(value: Any) -> tuple[int, int]:
    """(image parts found, JSON bytes they take) anywhere in a request body."""
    if isinstance(value, dict):
        if value.get("type") in IMAGE_PARTS:
            return 1, len(json.dumps(value, separators=(",", ":")).encode())
        found = [_image_bytes(v) for v in value.values()]
    elif isinstance(value, list):
        found = [_image_bytes(v) for v in value]
    else:
        return 0, 0
    return sum(f[0] for f in found), sum(f[1] for f in found)


def billed_input_tokens(body: dict[str, Any], raw: bytes, image_tokens: int) -> int:
    """What a provider billing by size charges for a request: ceil(bytes / 4) + 4 per message + 8, each image
    at `image_tokens` (providers bill images by their pixels, not by the bytes of their encoding)."""
    images, image_size = _image_bytes(body)
    messages = body.get("messages") if isinstance(body.get("messages"), list) else body.get("input")
    count = len(messages) if isinstance(messages, list) else 1
    return -(-(len(raw) - image_size) // 4) + 4 * count + 8 + images * image_tokens


COUNT_PATHS = ("/count_tokens", "/input_tokens")


def count_answer(path: str, raw: bytes) -> dict[str, Any]:
    """The count endpoints' answer: a quarter of the request's bytes, rounded up."""
    answer: dict[str, Any] = {"input_tokens": -(-len(raw) // 4)}
    return {"object": "response.input_tokens", **answer} if path.endswith("/input_tokens") else answer


@dataclass
class RecordedRequest:
    """One request as the fake upstream received it."""

    path: str
    method: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    model: str = ""
    stream: bool = False

    @property
    def auth(self) -> str:
        """The credential as sent: the bearer token or the `x-api-key` value."""
        value = self.headers.get("authorization", "")
        return value.removeprefix("Bearer ") if value else self.headers.get("x-api-key", "")


@dataclass
class _Scenario:
    name: str
    delay: float | None = None  # seconds, from a `-<ms>` suffix
    status: int | None = None


def _scenario(model: str) -> _Scenario:
    name = model.rsplit("/", 1)[-1]
    if name.startswith("fail-") and name[5:].isdigit():
        return _Scenario("fail", status=int(name[5:]))
    for prefix in ("slow-first-byte", "slow-first-event", "slow-stream"):
        if name == prefix:
            return _Scenario(prefix)
        if name.startswith(prefix + "-") and name[len(prefix) + 1 :].isdigit():
            return _Scenario(prefix, delay=int(name[len(prefix) + 1 :]) / 1000)
    return _Scenario(name)


def _first_tool_name(body: dict[str, Any]) -> str:
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if name:
                return name
    return "get_weather"


@dataclass
class FakeUpstream:
    """The fake provider server. Attributes below are the knobs tests may change (reset() restores them)."""

    reply_pieces: list[str] = field(default_factory=lambda: list(DEFAULT_PIECES))
    first_byte_delay: float = 2.0
    chunk_delay: float = 0.1
    retry_after: str = "7"
    rejected_keys: set[str] = field(default_factory=lambda: {"sk-invalid"})
    response_headers: dict[str, str] = field(default_factory=dict)  # added to every answer (e.g. Set-Cookie)
    billing: str = "fixed"  # "fixed" | "size"
    omit_usage: bool = False
    image_tokens: int = 1000
    uncapped_output_tokens: int = 100_000
    embedding_tokens_per_input: int = 3  # /embeddings usage.prompt_tokens per input
    embedding_usage: bool = True  # False: /embeddings answers without `usage`
    service_tier: str | None = None  # the tier every answer reports it was served at (see `Reply.service_tier`)

    def __post_init__(self) -> None:
        self.script: list[formats.Reply] = []  # replies played in order, whatever the model (then the default)
        self.model_scripts: dict[str, list[formats.Reply]] = {}  # per upstream model, played before `script`
        self.requests: list[RecordedRequest] = []
        self.disconnects: list[str] = []
        self.disconnected = threading.Event()
        self.disconnect_event: asyncio.Event | None = None
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # --- lifecycle ------------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What a catalog provider's `base_url` is set to."""
        return f"{self.url}/v1"

    def start(self) -> FakeUpstream:
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(started,), daemon=True, name="fake-upstream")
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("fake upstream did not start")
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop = None

    def reset(self) -> None:
        defaults = FakeUpstream()
        with self._lock:
            self.requests.clear()
            self.disconnects.clear()
            self.script.clear()
            self.model_scripts.clear()
        self.disconnected.clear()
        if self._loop is not None and self.disconnect_event is not None:
            self._loop.call_soon_threadsafe(self.disconnect_event.clear)
        for name in (
            "reply_pieces",
            "first_byte_delay",
            "chunk_delay",
            "retry_after",
            "rejected_keys",
            "response_headers",
            "billing",
            "omit_usage",
            "image_tokens",
            "uncapped_output_tokens",
            "embedding_tokens_per_input",
            "embedding_usage",
            "service_tier",
        ):
            setattr(self, name, getattr(defaults, name))

    def _serve(self, started: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=64 * 1024 * 1024)

        async def add_response_headers(request: web.Request, response: web.StreamResponse) -> None:
            response.headers.update(self.response_headers)

        app.on_response_prepare.append(add_response_headers)
        app.add_routes(
            [
                web.post("/v1/responses", self._handle),
                web.post("/v1/chat/completions", self._handle),
                web.post("/v1/messages", self._handle),
                web.post("/v1/messages/count_tokens", self._handle),
                web.post("/v1/responses/input_tokens", self._handle),
                web.post("/v1/embeddings", self._handle),
                web.post("/v1/moderations", self._handle),
            ]
        )
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self.disconnect_event = asyncio.Event()
        started.set()
        self._loop.run_forever()

    # --- recording ------------------------------------------------------------------------------------------

    @property
    def last(self) -> RecordedRequest:
        return self.requests[-1]

    def requests_for(self, model: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.model == model]

    async def wait_disconnected(self, timeout: float = 5.0) -> bool:
        """True once a client disconnect was recorded; works from any event loop."""
        deadline = time.monotonic() + timeout
        while not self.disconnected.is_set():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    def _mark_disconnect(self, path: str) -> None:
        with self._lock:
            self.disconnects.append(path)
        self.disconnected.set()
        if self.disconnect_event is not None:
            self.disconnect_event.set()

    # --- serving --------------------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
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
        try:
            if record.auth in self.rejected_keys:
                return self._error(request.path, 401, record.auth)
            return await self._play(request, record, payload, _scenario(record.model))
        except (asyncio.CancelledError, ConnectionResetError):
            self._mark_disconnect(request.path)
            raise

    def _error(self, path: str, status: int, key: str) -> web.Response:
        headers = {"Retry-After": self.retry_after} if status == 429 else None
        return web.json_response(formats.error_body(path, status, key), status=status, headers=headers)

    def _reply(self, scenario: _Scenario, body: dict[str, Any], raw: bytes) -> formats.Reply:
        with self._lock:
            replies = self.model_scripts.get(str(body.get("model", "")))
            if replies:
                return self._billed(replies.pop(0), body, raw)
            if self.script:
                return self._billed(self.script.pop(0), body, raw)
        finish = {"length": "length", "content-filter": "content_filter"}.get(scenario.name, "stop")
        if scenario.name == "tool-call":
            reply = formats.Reply(
                tool_name=_first_tool_name(body), tool_arguments=list(TOOL_ARGUMENT_PIECES), finish="tool_calls"
            )
        else:
            reasoning = list(REASONING_PIECES) if scenario.name == "reasoning" else []
            reply = formats.Reply(pieces=list(self.reply_pieces), finish=finish, reasoning=reasoning)
        reply.omit_usage = self.omit_usage or "no-usage" in str(body.get("model", ""))
        return self._billed(reply, body, raw)

    def _billed(self, reply: formats.Reply, body: dict[str, Any], raw: bytes) -> formats.Reply:
        """`reply` with the usage of `self.billing` (scripted replies too): "size" bills what was sent."""
        reply.service_tier = reply.service_tier or self.service_tier
        reply.encrypted_reasoning = "reasoning.encrypted_content" in (body.get("include") or ())
        if self.billing == "size":
            reply.input_tokens = billed_input_tokens(body, raw, self.image_tokens)
            reply.cached_tokens = reply.reasoning_tokens = 0
            cap = next((body[k] for k in OUTPUT_CAPS if isinstance(body.get(k), int)), None)
            reply.billed_output = cap if cap is not None else self.uncapped_output_tokens
        return reply

    def _render(self, path: str, body: dict[str, Any], reply: formats.Reply) -> tuple[dict[str, Any], list[bytes]]:
        model = str(body.get("model", ""))
        if body.get("logprobs") is True or "message.output_text.logprobs" in (body.get("include") or ()):
            reply.top_logprobs = int(body.get("top_logprobs") or 0)
        if path.endswith("/responses"):
            return formats.responses_json(model, reply), formats.responses_frames(model, reply)
        if path.endswith("/chat/completions"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            answer = formats.chat_json(model, reply)
            if body.get("logprobs") is True:  # one entry per word, with `top_logprobs` alternatives
                answer["choices"][0]["logprobs"] = formats.chat_logprobs(reply.text, body.get("top_logprobs") or 0)
            return answer, formats.chat_frames(model, reply, include_usage)
        return formats.messages_json(model, reply), formats.messages_frames(model, reply)

    def _error_frames(self, path: str) -> list[bytes]:
        if path.endswith("/responses"):
            return formats.responses_error_frames()
        if path.endswith("/chat/completions"):
            return formats.chat_error_frames()
        return formats.messages_error_frames()

    async def _play(
        self, request: web.Request, record: RecordedRequest, body: dict[str, Any], scenario: _Scenario
    ) -> web.StreamResponse:
        name = scenario.name
        if name == "hang":
            await asyncio.sleep(3600)
        if name == "fail":
            return self._error(request.path, scenario.status, record.auth)
        if name == "slow-first-byte":
            await asyncio.sleep(scenario.delay if scenario.delay is not None else self.first_byte_delay)
        if name == "garbage-json":
            return web.Response(body=b"<html>definitely not json", content_type="application/json")
        if request.path.endswith(COUNT_PATHS):
            return web.json_response(count_answer(request.path, record.raw))
        if request.path.endswith("/embeddings"):
            return web.json_response(self._embeddings(body))
        if request.path.endswith("/moderations"):
            return web.json_response(self._moderations(body))
        reply = self._reply(scenario, body, record.raw)
        if reply.fail_status:
            return self._error(request.path, reply.fail_status, record.auth)
        document, frames = self._render(request.path, body, reply)
        if not record.stream:
            return await self._send_json(request, document, name, scenario.delay)
        return await self._send_stream(request, frames, scenario)

    def _moderations(self, body: dict[str, Any]) -> dict[str, Any]:
        """OpenAI moderations: an input is flagged for each category of `MODERATION_WORDS` one of whose words it
        contains (case-insensitive); the answer lists every category with its verdict and a score."""
        value = body.get("input")
        inputs = [value] if isinstance(value, str) else list(value or [])
        results = []
        for text in inputs:
            lowered = str(text).lower()
            categories = {name: any(w in lowered for w in words) for name, words in MODERATION_WORDS.items()}
            scores = {name: 0.97 if hit else 0.01 for name, hit in categories.items()}
            results.append({"flagged": any(categories.values()), "categories": categories, "category_scores": scores})
        return {"id": "modr-fake", "model": body.get("model"), "results": results}

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        """OpenAI embeddings: input i gets [(i+1)*0.1, (i+1)*0.2, ...] of `dimensions` (default 8) values, listed
        last input first (clients must order by `index`), as floats or base64 float32 per `encoding_format`."""
        value = body.get("input")
        inputs = (
            [value]
            if isinstance(value, str) or (isinstance(value, list) and value and isinstance(value[0], int))
            else value
        )
        dims = body.get("dimensions") or 8
        data = []
        for index in reversed(range(len(inputs or []))):
            vector = [round((index + 1) * 0.1 * (k + 1), 4) for k in range(dims)]
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(struct.pack(f"<{dims}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": vector})
        answer: dict[str, Any] = {"object": "list", "data": data, "model": body.get("model")}
        if self.embedding_usage:
            tokens = self.embedding_tokens_per_input * len(data)
            answer["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
        return answer

    async def _send_json(
        self, request: web.Request, document: dict[str, Any], name: str, delay: float | None
    ) -> web.StreamResponse:
        data = json.dumps(document).encode()
        if name not in ("cut-stream", "slow-first-event"):
            return web.Response(body=data, content_type="application/json")
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = len(data)
        await response.prepare(request)
        if name == "slow-first-event":
            await asyncio.sleep(delay if delay is not None else self.first_byte_delay)
            await response.write(data)
            await response.write_eof()
            return response
        await response.write(data[: len(data) // 2])
        request.transport.abort()
        return response

    async def _send_stream(self, request: web.Request, frames: list[bytes], scenario: _Scenario) -> web.StreamResponse:
        name = scenario.name
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        if name == "slow-first-event":
            await asyncio.sleep(scenario.delay if scenario.delay is not None else self.first_byte_delay)
        if name == "malformed-sse":
            frames = [frames[0], b"data: {not json\n\n"]
        elif name == "error-event":
            frames = frames[: len(frames) // 2] + self._error_frames(request.path)
        elif name == "cut-stream":
            frames = frames[: len(frames) // 2]
        delay = 0.0
        if name == "slow-stream":
            delay = scenario.delay if scenario.delay is not None else self.chunk_delay
        for frame in frames:
            await response.write(frame)
            if delay:
                await asyncio.sleep(delay)
        if name == "cut-stream":
            request.transport.abort()
            return response
        await response.write_eof()
        return response
