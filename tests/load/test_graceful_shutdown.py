"""Graceful shutdown with streams open: they finish, or when cut by the time limit, they are still accounted.

uvicorn runs in a thread with the production lifespan settings (`lifespan="on"`, a graceful-shutdown
timeout); setting `should_exit` is what its SIGTERM handler does (bench/shutdown.py sends a real SIGTERM
to a separate process).
"""

from __future__ import annotations

import asyncio
import threading
import time

import aiohttp
import uvicorn

from tests.conftest import free_port
from tests.inference.conftest import generations
from tests.load.conftest import read_stream, wait_open

STREAMS = 20


class ProductionServer:
    def __init__(self, graceful_timeout: float) -> None:
        from gateway_project.asgi import application

        self.port = free_port()
        config = uvicorn.Config(
            application,
            host="127.0.0.1",
            port=self.port,
            lifespan="on",
            timeout_graceful_shutdown=graceful_timeout,
            log_level="critical",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ProductionServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


async def shut_down_with_open_streams(server: ProductionServer, key: str, model: str) -> dict:
    url = f"http://127.0.0.1:{server.port}/api/v1/responses"
    opened = [0]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        tasks = [asyncio.ensure_future(read_stream(session, url, key, model, opened)) for _ in range(STREAMS)]
        await wait_open(opened, STREAMS)
        open_at_shutdown = sum(not t.done() for t in tasks)
        server.server.should_exit = True
        started = time.monotonic()
        await asyncio.sleep(0.3)
        late = await read_stream(session, url, key, model, [0])  # a connection after shutdown began
        results = await asyncio.gather(*tasks)
    await asyncio.to_thread(server.thread.join, 30)
    return {
        "open_at_shutdown": open_at_shutdown,
        "results": results,
        "late": late,
        "stopped_after": time.monotonic() - started,
        "alive": server.thread.is_alive(),
    }


def test_shutdown_lets_open_streams_finish_and_records_them(org, slow_model):
    model = slow_model(300)  # 5 pieces: about 1.5 s per stream
    with ProductionServer(graceful_timeout=20) as server:
        run = asyncio.run(shut_down_with_open_streams(server, org.inference_key, model))
    assert run["open_at_shutdown"] == STREAMS
    assert run["late"].status == 0 and run["late"].error  # refused: the listening socket is closed
    assert [r for r in run["results"] if not (r.status == 200 and r.completed)] == []
    assert not run["alive"] and run["stopped_after"] < 10
    rows = generations(STREAMS)
    assert len(rows) == STREAMS and {r.status for r in rows} == {"completed"}


def test_streams_cut_by_the_graceful_timeout_are_still_accounted(org, slow_model):
    model = slow_model(1000)  # about 5 s per stream, longer than the time limit
    with ProductionServer(graceful_timeout=0.5) as server:
        run = asyncio.run(shut_down_with_open_streams(server, org.inference_key, model))
    assert run["open_at_shutdown"] == STREAMS
    assert not any(r.completed for r in run["results"])
    assert not run["alive"] and run["stopped_after"] < 4
    rows = generations(STREAMS)
    assert len(rows) == STREAMS
    assert {r.status for r in rows} == {"cancelled"} and all(r.streamed and r.completed_at for r in rows)
