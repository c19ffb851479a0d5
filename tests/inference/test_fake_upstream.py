"""The fake upstream itself: it records what it received and fails on purpose by scenario."""

from __future__ import annotations

import aiohttp
import pytest


async def _post(fake, path, body, **headers):
    async with aiohttp.ClientSession() as session:
        async with session.post(fake.url + path, json=body, headers=headers) as response:
            return response.status, dict(response.headers), await response.read()


async def test_records_path_headers_and_body(fake_upstream):
    status, _, data = await _post(
        fake_upstream, "/v1/chat/completions", {"model": "m", "messages": []}, Authorization="Bearer sk-abc"
    )
    assert status == 200
    assert b"Hello from the fake upstream." in data
    seen = fake_upstream.last
    assert (seen.path, seen.model, seen.stream, seen.auth) == ("/v1/chat/completions", "m", False, "sk-abc")
    assert seen.body == {"model": "m", "messages": []}
    assert fake_upstream.requests_for("m") == [seen]


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/chat/completions", "/v1/messages"])
async def test_rate_limit_carries_retry_after(fake_upstream, path):
    status, headers, _ = await _post(fake_upstream, path, {"model": "fail-429"})
    assert status == 429
    assert headers["Retry-After"] == "7"


async def test_rejected_key_gets_401(fake_upstream):
    status, _, _ = await _post(fake_upstream, "/v1/messages", {"model": "ok"}, **{"x-api-key": "sk-invalid"})
    assert status == 401


async def test_cut_stream_drops_the_connection(fake_upstream):
    with pytest.raises(aiohttp.ClientPayloadError):
        await _post(fake_upstream, "/v1/responses", {"model": "cut-stream", "stream": True})


async def test_client_disconnect_is_recorded(fake_upstream):
    async with aiohttp.ClientSession() as session:
        async with session.post(fake_upstream.url + "/v1/messages", json={"model": "slow-stream", "stream": True}) as r:
            await r.content.readline()
    assert await fake_upstream.wait_disconnected(5)
    assert fake_upstream.disconnects == ["/v1/messages"]


async def test_reset_clears_recordings(fake_upstream):
    await _post(fake_upstream, "/v1/responses", {"model": "x"})
    fake_upstream.reset()
    assert fake_upstream.requests == []
    assert not fake_upstream.disconnected.is_set()
