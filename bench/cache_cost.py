"""CPU cost of the response cache middleware in the chain, in process (no network, no database).

    .venv/bin/python bench/cache_cost.py [rounds]

- off: a request without X-Service-Cache headers, in a workspace without `response_cache_enabled` (the default):
  the middleware's whole work is a dictionary lookup and an attribute read before it calls the next handler;
- key: what a request with the cache on adds before the lookup (header parsing and the request key: SHA-256 of the
  sorted canonical body), for a small body;
- encode/decode: writing an entry after a miss and reading it back on a hit.

Prints microseconds per call (best of 5 runs) against an empty handler called directly and through a middleware that
only awaits the next handler (the frame every middleware of the chain costs).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key-0123456789abcdefghijklmnop")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
django.setup()

from accounts.principal import Principal  # noqa: E402
from inference.pipeline.context import Candidate, Context, Outcome, Usage  # noqa: E402
from inference.providers.base import CanonicalResult  # noqa: E402
from inference.providers.canonical import build_output  # noqa: E402
from responsecache.entry import decode, encode, request_key  # noqa: E402
from responsecache.middleware import ResponseCacheMiddleware  # noqa: E402
from responsecache.policy import cache_ttl  # noqa: E402

HEADERS = {
    "host": "127.0.0.1:8000",
    "authorization": "Bearer sk-bench",
    "content-type": "application/json",
    "user-agent": "OpenAI/Python 2.8.1",
    "accept": "application/json",
    "x-stainless-lang": "python",
    "content-length": "80",
}
BODY = {"model": "bench/fake", "input": "Say hello", "max_output_tokens": 100, "temperature": 0.2}


def principal(cache: bool) -> Principal:
    return Principal(
        key_id=uuid.uuid4(),
        key_hash="0" * 64,
        key_name="bench",
        organization_id=uuid.uuid4(),
        workspace_id=uuid.uuid4(),
        user_id=None,
        is_management=False,
        disabled=False,
        expires_at=None,
        limit=None,
        limit_reset=None,
        include_byok_in_limit=False,
        response_cache=cache,
    )


def context(headers: dict[str, str], cache: bool = False) -> Context:
    return Context(
        request_id=str(uuid.uuid4()),
        created_at=datetime.now(UTC),
        started=time.perf_counter(),
        method="POST",
        path="/api/v1/responses",
        host="127.0.0.1",
        headers=headers,
        raw_body=b"",
        body=dict(BODY),
        principal=principal(cache),
    )


async def noop(ctx: Context) -> None:
    return None


def best(fn, rounds: int) -> float:
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        fn(rounds)
        runs.append((time.perf_counter() - started) / rounds * 1e6)
    return min(runs)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    middleware = ResponseCacheMiddleware(noop)
    ctx = context(HEADERS)
    loop = asyncio.new_event_loop()

    async def direct(n: int) -> None:
        for _ in range(n):
            await noop(ctx)

    async def through(n: int) -> None:
        for _ in range(n):
            await middleware(ctx)

    class PassThrough:  # the least any middleware costs: one more coroutine frame
        def __init__(self, get_response):
            self.get_response = get_response

        async def __call__(self, ctx: Context) -> None:
            await self.get_response(ctx)

    empty = PassThrough(noop)

    async def through_empty(n: int) -> None:
        for _ in range(n):
            await empty(ctx)

    base = best(lambda n: loop.run_until_complete(direct(n)), rounds)
    frame = best(lambda n: loop.run_until_complete(through_empty(n)), rounds)
    off = best(lambda n: loop.run_until_complete(through(n)), rounds)
    on = context({**HEADERS, "x-service-cache": "enabled", "x-service-cache-ttl": "60"})

    def key(n: int) -> None:
        for _ in range(n):
            cache_ttl(on)
            request_key(on.body)

    candidate = Candidate(
        **{
            name: value
            for name, value in dict(
                endpoint_id=uuid.uuid4(), model_slug="bench/fake", canonical_slug="bench/fake", vendor="bench",
                public=True, provider_slug="bench", provider_name="Bench", api_format="echo", base_url="",
                platform_key_env="", upstream_model="fake", prompt_price=Decimal(0), completion_price=Decimal(0),
                cached_prompt_price=None, is_free=True, context_length=None, max_output_tokens=None,
                supported_parameters=(), zdr=False, trains_on_data=False, publishes_prompts=False, regions=(),
                input_modalities=("text",), output_modalities=("text",),
            ).items()
        }
    )  # fmt: skip
    result = CanonicalResult("up-1", build_output("Hello " * 40, []), Usage(input_tokens=10, output_tokens=80))
    outcome = Outcome(status="completed", candidate=candidate, usage=result.usage)
    value = encode(outcome, result, 60)[0]

    def codec(n: int) -> None:
        for _ in range(n):
            decode(encode(outcome, result, 60)[0]).canonical()

    small = max(1, rounds // 10)
    print(f"empty handler called directly : {base:8.3f} us")
    print(f"through a pass-through middleware: {frame:8.3f} us  (+{frame - base:.3f} us: the frame itself)")
    print(
        f"through the middleware (off)  : {off:8.3f} us  (+{off - base:.3f} us; +{off - frame:.3f} us over the frame)"
    )
    print(f"cache on: headers + key       : {best(key, small):8.3f} us")
    print(f"entry encode + decode ({len(value)} B): {best(codec, small):8.3f} us")


if __name__ == "__main__":
    main()
