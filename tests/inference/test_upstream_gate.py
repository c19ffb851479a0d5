"""The gate of an upstream call (UpstreamCall.gate: the admission checks sent ahead), as post_json and post_sse
await it against loopback servers: the request is built first and written only once the gate passed, no
connection is taken meanwhile, the wait is not the upstream's time, what the gate raises goes through with
nothing sent, a request that cannot be built is still a provider failure, and a client gone while its request
waits at the gate is not charged as if the request had been sent."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools

import pytest

from gateway_project.api.errors import GatewayError
from gateway_project.pipeline import Credential, admitted, send_ahead
from inference import handler
from inference.providers import upstream
from inference.providers.base import ProviderError, ProviderErrorKind, Timeouts, UpstreamCall, UpstreamRequest
from inference.providers.http import close_session, post_json, post_sse
from ratelimits.middleware import _actual_tokens
from tests.budgets.conftest import candidate, make_ctx
from tests.fakes.raw_upstream import Server, fixed, ok, sse_answer


@pytest.fixture(autouse=True)
async def _fresh_pool():
    await close_session()  # this test's event loop gets a session of its own
    yield
    await close_session()


def open_connections() -> int:
    """Connections the running loop's session holds (in use or idle)."""
    connector = upstream.get_session().connector
    return sum(len(c) for c in connector._conns.values()) + len(connector._acquired)


def slow(data: bytes, seconds: float):
    async def answer(request, writer, index):
        await asyncio.sleep(seconds)
        writer.write(data)
        return True

    return answer


async def read_stream(url: str, timeouts: Timeouts, gate) -> list[str]:
    seen = []
    async with contextlib.aclosing(post_sse(UpstreamRequest(url, {}, {"a": 1}), timeouts, "sk", gate)) as reads:
        async for events in reads:
            seen.extend(event.data for event in events)
            if seen[-1] == "[DONE]":
                break
    return seen


async def test_the_request_is_written_once_the_gate_passed_and_no_connection_is_held_meanwhile():
    async with Server(fixed(ok(b'{"a":1}'))) as server:
        seen_during = []

        async def gate():
            await asyncio.sleep(0.1)
            seen_during.append((len(server.requests), server.connections, open_connections()))

        data = await post_json(UpstreamRequest(server.url, {}, {"a": 1}), Timeouts(), "sk", gate)
        assert data == {"a": 1}
        assert seen_during == [(0, 0, 0)]
        assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_the_wait_at_the_gate_is_not_the_upstreams_time(stream):
    """A gate of 0.4 s before an upstream limit of 0.25 s: the call succeeds. The limit still runs from the write:
    an upstream 0.35 s late after a gate of 0.1 s is a timeout (the limit did not restart or grow)."""
    answer = sse_answer(b'data: {"a":1}\n\n', b"data: [DONE]\n\n") if stream else ok(b'{"a":1}')
    timeouts = Timeouts(total=0.25, first_byte=0.25)

    def gate_of(seconds: float):
        async def gate():
            await asyncio.sleep(seconds)

        return gate

    async def call(url: str, gate):
        if stream:
            return await read_stream(url, timeouts, gate)
        return await post_json(UpstreamRequest(url, {}, {"a": 1}), timeouts, "sk", gate)

    async with Server(fixed(answer)) as server:
        assert await call(server.url, gate_of(0.4)) == (['{"a":1}', "[DONE]"] if stream else {"a": 1})
    async with Server(slow(answer, 0.35)) as server:
        with pytest.raises(ProviderError) as caught:
            await call(server.url, gate_of(0.1))
        assert caught.value.kind == ProviderErrorKind.TIMEOUT and caught.value.maybe_billed
        assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(
    "refusal",
    [GatewayError(402, "Workspace budget exceeded"), ConnectionError("the checks' store"), TimeoutError()],
    ids=["refused", "connection-error", "timeout"],
)
async def test_what_the_gate_raises_goes_through_as_it_is_and_nothing_is_sent(stream, refusal):
    """Not mapped to an upstream failure (a ConnectionError or a TimeoutError of the checks is not the
    provider's, which routing would try elsewhere or charge as maybe billed)."""

    async def gate():
        raise refusal

    async with Server(fixed(ok(b"{}"))) as server:
        with pytest.raises(type(refusal)) as caught:
            if stream:
                await read_stream(server.url, Timeouts(), gate)
            else:
                await post_json(UpstreamRequest(server.url, {}, {"a": 1}), Timeouts(), "sk", gate)
        assert caught.value is refusal
        await asyncio.sleep(0.05)
        assert (server.connections, server.requests, open_connections()) == (0, [], 0)


@pytest.mark.parametrize(
    "url",
    ["/v1/chat/completions", "ftp://example.com/v1", "http://example.com:99999/v1"],
    ids=["no-base", "ftp", "port"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_request_that_cannot_be_built_is_a_provider_failure_not_billed(url, stream):
    """Routing moves on to the next candidate (a catalog row with an unusable base URL is not a 500)."""
    with pytest.raises(ProviderError, match="cannot connect to upstream") as caught:
        if stream:
            await read_stream(url, Timeouts(), None)
        else:
            await post_json(UpstreamRequest(url, {}, {}), Timeouts(), "sk")
    assert not caught.value.maybe_billed


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_client_gone_while_its_request_waits_at_the_gate_is_not_charged(stream):
    """Nothing was sent: no candidate, usage or cost on the outcome (so the rate limit settles 0 tokens), the
    request not admitted (not recorded, its hold released by BudgetMiddleware)."""
    async with Server(fixed(ok(b"{}"))) as server:
        served_by = dataclasses.replace(
            candidate(), api_format="openai-chat", base_url=f"http://127.0.0.1:{server.port}"
        )
        ctx = make_ctx(None, candidates=[served_by])
        never = asyncio.Event()

        async def admission():
            await never.wait()  # the spend hold's reply still on its way

        send_ahead(ctx, admission)
        call = UpstreamCall(
            body={"input": "hi"},
            upstream_model="m",
            base_url=served_by.base_url,
            credential=Credential("sk"),
            stream=stream,
            gate=functools.partial(admitted, ctx),
        )
        answer = handler._answer_stream if stream else handler._answer_json
        task = asyncio.ensure_future(answer(ctx, None, call, served_by, Credential("sk")))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert server.requests == [] and ctx.not_admitted
        assert (ctx.outcome.candidate, ctx.outcome.cost, _actual_tokens(ctx, 5000)) == (None, 0, 0)


@pytest.mark.parametrize("stream", [False, True])
async def test_the_echo_adapter_answers_only_once_its_gate_passed(stream):
    """The in-process adapter honours the gate as the HTTP ones do (the handler no longer awaits the checks after
    an adapter answered): nothing of its answer exists before the gate passed, and a refusal goes through."""
    from inference.providers.echo import EchoAdapter

    seen: list[str] = []
    release = asyncio.Event()

    async def gate():
        seen.append("waiting")
        await release.wait()
        seen.append("passed")

    async def first_of(call: UpstreamCall):
        if not stream:
            return await EchoAdapter().complete(call)
        async with contextlib.aclosing(EchoAdapter().stream(call)) as events:
            async for event in events:
                return event

    call = UpstreamCall(
        body={"input": "hi"},
        upstream_model="echo-1",
        base_url="",
        credential=Credential("sk"),
        stream=stream,
        gate=gate,
    )
    task = asyncio.ensure_future(first_of(call))
    await asyncio.sleep(0.05)
    assert seen == ["waiting"] and not task.done()
    release.set()
    assert await task is not None and seen == ["waiting", "passed"]

    async def refuse():
        raise GatewayError(429, "Rate limit exceeded")

    with pytest.raises(GatewayError) as refused:
        await first_of(dataclasses.replace(call, gate=refuse))
    assert refused.value.status == 429
