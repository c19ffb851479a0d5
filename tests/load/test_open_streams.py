"""Many concurrent open streams on one server: all complete, all are accounted, memory per stream stays small.

The bounded CI version of bench/streams.py (1,000 streams against a separate gateway process, figures in
docs/performance.md). Here the gateway runs in the test process (`gateway_server`), so the RSS delta also
holds the client's side of each stream: the bound is loose on purpose and still catches a gateway that
buffers a stream or keeps per-request objects alive.
"""

from __future__ import annotations

import asyncio

import aiohttp
import psutil

from tests.inference.conftest import generations
from tests.load.conftest import read_stream, wait_open

STREAMS = 200
MAX_KB_PER_STREAM = 200  # measured: about 40 KB for the gateway and the client side together


async def open_streams(url: str, key: str, model: str, warm_model: str) -> dict:
    process = psutil.Process()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        warm = await asyncio.gather(*(read_stream(session, url, key, warm_model, [0]) for _ in range(20)))
        assert all(s.completed for s in warm), warm[0]
        before = process.memory_info().rss
        opened = [0]
        tasks = [asyncio.ensure_future(read_stream(session, url, key, model, opened)) for _ in range(STREAMS)]
        await wait_open(opened, STREAMS)
        still_open = sum(not t.done() for t in tasks)
        during = process.memory_info().rss
        results = await asyncio.gather(*tasks)
    return {"before": before, "during": during, "still_open": still_open, "results": results}


def test_200_concurrent_streams_complete_with_bounded_memory(gateway_server, org, slow_model):
    model, warm_model = slow_model(400), slow_model(1)
    url = f"{gateway_server.url}/api/v1/responses"
    run = asyncio.run(open_streams(url, org.inference_key, model, warm_model))
    results = run["results"]
    assert run["still_open"] == STREAMS  # every stream was open at the same time when memory was sampled
    assert [r for r in results if not (r.status == 200 and r.completed)] == []
    kb_per_stream = (run["during"] - run["before"]) / 1000 / STREAMS
    assert kb_per_stream < MAX_KB_PER_STREAM, f"{kb_per_stream:.0f} KB per open stream"
    rows = generations(20 + STREAMS)
    streamed = [r for r in rows if r.requested_model == model]
    assert len(streamed) == STREAMS
    assert {r.status for r in streamed} == {"completed"} and all(r.streamed and r.output_tokens for r in streamed)
