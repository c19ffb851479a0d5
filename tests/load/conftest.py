"""Fixtures of the load tests: a slow-streaming endpoint on the fake upstream, and streaming clients."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp
import pytest

from tests.inference.conftest import add_endpoint

KEY_ENV = "FAKE_UPSTREAM_TEST_KEY"


@pytest.fixture
def slow_model(fake_upstream, monkeypatch, transactional_db):
    """`load/slow-<ms>`: an OpenAI-chat endpoint whose stream waits `<ms>` between frames (5 text pieces)."""
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv(KEY_ENV, "sk-fake-platform")

    def make(delay_ms: int) -> str:
        slug = f"load/slow-{delay_ms}"
        add_endpoint(
            slug,
            "load-upstream",
            api_format="openai-chat",
            base_url=fake_upstream.base_url,
            api_key_env=KEY_ENV,
            upstream_model=f"slow-stream-{delay_ms}",
        )
        return slug

    return make


@dataclass
class Stream:
    status: int = 0
    completed: bool = False
    error: str = ""


async def read_stream(session: aiohttp.ClientSession, url: str, key: str, model: str, opened: list[int]) -> Stream:
    """One streamed request read to its end; `opened[0]` counts the streams that received their first event."""
    result = Stream()
    body = {"model": model, "input": "hello", "stream": True}
    try:
        async with session.post(url, json=body, headers={"Authorization": f"Bearer {key}"}) as response:
            result.status = response.status
            first = True
            async for line in response.content:
                if first and line.startswith(b"event: "):
                    opened[0] += 1
                    first = False
                if line.startswith(b"event: response.completed"):
                    result.completed = True
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        result.error = repr(exc)
    return result


async def wait_open(opened: list[int], expected: int, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while opened[0] < expected and loop.time() < deadline:
        await asyncio.sleep(0.02)
    assert opened[0] == expected, f"only {opened[0]} of {expected} streams started"
