"""A hostile or broken upstream, end to end (client → gateway → a scripted Chat Completions server on loopback).

Each test is one row of the second fault review: redirects are not followed, wrongly shaped answers and
impossible token counts are provider errors that fall back, nothing after `[DONE]` is read, `Retry-After`
is capped, an upstream that only pings is cut, non-streaming calls have a total limit and are not sent twice,
endpoint-specific refusals (404/413/422/context length) fall back, and a stream cut mid-way leaves its message
`incomplete`.
"""

from __future__ import annotations

import asyncio
import threading
import time

import orjson
import pytest
from aiohttp import web
from django.test import override_settings

from inference.providers.sse import SSEDecoder
from tests.inference.conftest import add_endpoint, generations
from tests.inference.test_fallback import KEY_ENV, ON, endpoint
from tests.inference.test_responses import sse_events

pytestmark = pytest.mark.django_db(transaction=True)


def chunk(payload: dict) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def delta(text: str) -> bytes:
    return chunk({"id": "c1", "choices": [{"index": 0, "delta": {"content": text}}]})


FINISH = chunk({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
USAGE = chunk({"id": "c1", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})


class HostileUpstream:
    """A Chat Completions server whose behaviour is chosen by the request's `model`; records every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict]] = []
        self.port = 0
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def models(self) -> list[str]:
        return [body.get("model", "") for _, body in self.requests]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((request.path, body))
        model = body.get("model", "")
        if request.path.startswith("/elsewhere"):
            return web.json_response({"secret-of-elsewhere": True})
        if model.startswith("redirect-"):
            status = int(model.split("-")[1])
            location = f"http://localhost:{self.port}/elsewhere"
            return web.Response(status=status, headers={"Location": location}, text="secret-of-elsewhere")
        return await getattr(self, "scenario_" + model.replace("-", "_"))(request, body)

    async def scenario_good(self, request, body):
        if body.get("stream"):
            return await self.stream(request, [delta("ok"), FINISH, USAGE, b"data: [DONE]\n\n"])
        return web.json_response(
            {
                "id": "c1",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2},
            }
        )

    async def scenario_wrong_shape(self, request, body):
        if body.get("stream"):
            return await self.stream(request, [chunk({"choices": [{"index": 0, "delta": "x"}]})])
        return web.json_response({"choices": [{"message": "x"}]})

    async def scenario_negative_usage(self, request, body):
        return web.json_response(
            {
                "id": "c1",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": -5, "completion_tokens": 2},
            }
        )

    async def scenario_float_usage(self, request, body):
        return web.json_response(
            {
                "id": "c1",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3.5, "completion_tokens": 2},
            }
        )

    async def scenario_after_done(self, request, body):
        late = chunk(
            {
                "id": "c1",
                "choices": [{"index": 0, "delta": {"content": " INJECTED"}}],
                "usage": {"prompt_tokens": 999999, "completion_tokens": 999999},
            }
        )
        return await self.stream(request, [delta("ok"), FINISH, USAGE, b"data: [DONE]\n\n" + late, late])

    async def scenario_huge_retry_after(self, request, body):
        return web.json_response(
            {"error": {"message": "slow down", "type": "rate_limit_exceeded"}},
            status=429,
            headers={"Retry-After": "2300706301"},
        )

    async def scenario_ping_forever(self, request, body):
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(delta("ok"))
        for _ in range(400):  # 20 s at most
            await asyncio.sleep(0.05)
            await response.write(b": ping\n\n")
        return response

    async def scenario_slow_json(self, request, body):
        await asyncio.sleep(0.8)
        return await self.scenario_good(request, body)

    async def scenario_context_length(self, request, body):
        error = {"message": "This model's maximum context length is 8 tokens", "code": "context_length_exceeded"}
        return web.json_response({"error": {**error, "type": "invalid_request_error"}}, status=400)

    async def scenario_plain_bad_request(self, request, body):
        return web.json_response(
            {"error": {"message": "temperature is invalid", "type": "invalid_request_error"}}, status=400
        )

    async def stream(self, request, frames: list[bytes]) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for frame in frames:
            await response.write(frame)
        return response

    def start(self) -> HostileUpstream:
        started = threading.Event()

        def serve() -> None:
            self.loop = asyncio.new_event_loop()
            app = web.Application()
            app.router.add_post("/{tail:.*}", self.handle)
            self.runner = web.AppRunner(app, access_log=None)
            self.loop.run_until_complete(self.runner.setup())
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            self.loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]
            started.set()
            self.loop.run_forever()

        threading.Thread(target=serve, daemon=True, name="hostile-upstream").start()
        assert started.wait(10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture
def hostile(monkeypatch, echo_catalog):
    monkeypatch.setenv(KEY_ENV, "sk-platform-secret")
    server = HostileUpstream().start()
    yield server
    server.stop()


def hostile_endpoint(model: str, provider: str, scenario: str, server: HostileUpstream, price="0.000001"):
    add_endpoint(
        model,
        provider,
        api_format="openai-chat",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        prompt_price=price,
        completion_price=price,
        upstream_model=scenario,
    )


def attempts(response) -> list[str]:
    return [a["status"] for a in response.json()["service_metadata"]["attempts"]]


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_and_its_target_body_not_returned(http, hostile, status):
    hostile_endpoint("t/model", "p-redirect", f"redirect-{status}", hostile)
    response = http.post("/responses", json={"model": "t/model", "input": "the prompt"})
    assert response.status_code == 502, response.text
    error = response.json()["error"]
    assert "redirects are not followed" in error["message"]
    assert "secret-of-elsewhere" not in response.text
    assert [path for path, _ in hostile.requests] == ["/v1/chat/completions"]  # nothing sent to the target


def test_a_redirect_falls_back_to_the_next_provider(http, hostile):
    hostile_endpoint("t/model", "p-redirect", "redirect-307", hostile, price="0.000001")
    hostile_endpoint("t/model", "p-good", "good", hostile, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi"}, headers=ON)
    assert response.status_code == 200 and attempts(response) == ["server", "success"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("scenario", ["wrong-shape", "negative-usage", "float-usage"])
def test_a_wrongly_shaped_answer_is_a_provider_error_charged_and_not_sent_again(http, hostile, stream, scenario):
    # A 200 the gateway cannot read: the provider answered, so it may bill it. Was: sent to the next provider as
    # well, uncharged; now charged its hold (marked estimated) and not re-sent (docs/budgets.md).
    if stream and scenario != "wrong-shape":
        pytest.skip("the usage scenarios answer JSON")
    hostile_endpoint("t/model", "p-broken", scenario, hostile, price="0.000001")
    hostile_endpoint("t/model", "p-good", "good", hostile, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi", "stream": stream})
    assert response.status_code == 502, response.text
    assert "malformed upstream" in response.json()["error"]["message"]
    [row] = generations(1)
    assert (row.status, row.error_code, row.provider) == ("failed", 502, "p-broken")
    assert row.usage_estimated and row.cost > 0
    assert hostile.models() == [scenario]  # p-good ("good" on the same scripted server) got nothing


def test_nothing_after_done_is_relayed_or_counted(http, hostile):
    hostile_endpoint("t/model", "p-late", "after-done", hostile)
    response = http.post("/responses", json={"model": "t/model", "input": "hi", "stream": True})
    assert response.status_code == 200
    assert "INJECTED" not in response.text
    completed = [e for e in sse_events(response.text) if isinstance(e, dict) and e["type"] == "response.completed"]
    usage = completed[0]["response"]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (3, 2)
    [row] = generations(1)
    assert (row.input_tokens, row.output_tokens) == (3, 2)


def test_an_absurd_retry_after_is_capped(http, hostile):
    hostile_endpoint("t/model", "p-429", "huge-retry-after", hostile)
    response = http.post("/responses", json={"model": "t/model", "input": "hi"})
    assert response.status_code == 429
    assert 1 <= int(response.headers["retry-after"]) <= 60


def test_an_upstream_that_only_pings_is_cut_after_the_read_limit(http, hostile):
    hostile_endpoint("t/model", "p-pings", "ping-forever", hostile)
    started = time.monotonic()
    with override_settings(GATEWAY_UPSTREAM_READ_TIMEOUT=0.5):
        response = http.post("/responses", json={"model": "t/model", "input": "hi", "stream": True})
    assert time.monotonic() - started < 5
    events = [e for e in sse_events(response.text) if isinstance(e, dict)]
    failed = [e for e in events if e["type"] == "response.failed"]
    assert failed and failed[0]["response"]["error"]["code"] == "timeout"
    # the message cut by the failure is `incomplete`, not `completed`
    [message] = [i for i in failed[0]["response"]["output"] if i["type"] == "message"]
    assert message["status"] == "incomplete" and message["content"][0]["text"] == "ok"


def test_a_slow_json_answer_is_waited_for_within_the_total_limit(http, hostile):
    hostile_endpoint("t/model", "p-slow", "slow-json", hostile)
    with override_settings(GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT=0.2, GATEWAY_UPSTREAM_READ_TIMEOUT=0.2):
        response = http.post("/responses", json={"model": "t/model", "input": "hi"})
    assert response.status_code == 200, response.text


def test_a_json_call_past_its_total_limit_is_524_and_not_sent_again(http, hostile):
    hostile_endpoint("t/model", "p-slow", "slow-json", hostile, price="0.000001")
    hostile_endpoint("t/model", "p-good", "good", hostile, price="0.000002")
    with override_settings(GATEWAY_UPSTREAM_TOTAL_TIMEOUT=0.3):
        response = http.post("/responses", json={"model": "t/model", "input": "hi"}, headers=ON)
    assert response.status_code == 524
    assert hostile.models() == ["slow-json"]  # the provider may bill it: the request was not paid twice


def test_per_provider_timeouts_from_the_catalog_override_the_settings(http, hostile):
    hostile_endpoint("t/model", "p-slow", "slow-json", hostile)
    from inference.models import Provider

    Provider.objects.filter(slug="p-slow").update(timeouts={"total": 0.3})
    response = http.post("/responses", json={"model": "t/model", "input": "hi"})
    assert response.status_code == 524


@pytest.mark.parametrize("scenario", ["fail-404", "fail-413", "fail-422", "context-length"])
def test_an_endpoint_specific_refusal_falls_back(http, hostile, fake_upstream, scenario):
    if scenario.startswith("fail-"):
        endpoint("t/model", "p-refuses", scenario, fake_upstream, price="0.000001")
    else:
        hostile_endpoint("t/model", "p-refuses", scenario, hostile, price="0.000001")
    hostile_endpoint("t/model", "p-good", "good", hostile, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi"}, headers=ON)
    assert response.status_code == 200, response.text
    assert attempts(response) == ["bad_request", "success"]


def test_a_plain_bad_request_still_does_not_fall_back(http, hostile):
    hostile_endpoint("t/model", "p-refuses", "plain-bad-request", hostile, price="0.000001")
    hostile_endpoint("t/model", "p-good", "good", hostile, price="0.000002")
    response = http.post("/responses", json={"model": "t/model", "input": "hi"})
    assert response.status_code == 400
    assert hostile.models() == ["plain-bad-request"]


def test_the_sse_decoder_is_linear_in_a_line_that_never_ends():
    decoder = SSEDecoder()
    piece = b"x" * 65536
    started = time.monotonic()
    for _ in range(512):  # 32 MiB without a newline, in 64 KiB reads
        assert decoder.feed(b"data: " + piece if _ == 0 else piece) == []
    [event] = decoder.feed(b"\n\n")
    assert len(event.data) == 512 * 65536
    assert time.monotonic() - started < 3  # a copy of the buffer per read took minutes


def test_a_secret_api_key_env_written_past_the_checks_is_never_sent(http, fake_upstream, echo_catalog):
    """A row written directly (not through the loader or the admin) still never sends the secret."""
    add_endpoint("t/model", "p-leaky", api_format="openai-chat", base_url=fake_upstream.base_url)
    from inference.models import Provider

    Provider.objects.filter(slug="p-leaky").update(api_key_env="DJANGO_SECRET_KEY")
    response = http.post("/responses", json={"model": "t/model", "input": "hi"})
    assert response.status_code == 502
    assert response.json()["error"]["metadata"]["error_type"] == "provider_unavailable"
    assert fake_upstream.requests == []
