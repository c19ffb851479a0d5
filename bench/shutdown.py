"""Graceful shutdown: SIGTERM while streams are open; the open streams finish and their Generation rows are written.

    .venv/bin/python bench/shutdown.py                          # 50 streams of 3 s, --timeout-graceful-shutdown 30
    .venv/bin/python bench/shutdown.py --graceful-timeout 1     # past the timeout: streams are cut, rows still written

Starts the fake upstream and one gateway worker (bench/loadkit.Stack) with uvicorn's
`--timeout-graceful-shutdown`, opens N streamed requests against a slow upstream (chunks every
`--chunk-ms`), sends SIGTERM to the gateway once every stream has its first event, then checks: a new
connection is refused, every open stream ends with `response.completed` (when the timeout is longer than
the streams), the process exits by itself, and the database holds one streamed Generation row per stream.
Prints one JSON line with the figures; exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
from loadkit import Stack, client_session, emit, stream_one


async def new_request_refused(url: str) -> bool:
    try:
        async with aiohttp.ClientSession() as session, session.post(url, data=b"{}") as resp:
            await resp.read()
            return False
    except (aiohttp.ClientError, OSError):
        return True


async def run(stack: Stack, streams: int) -> dict:
    opened = [0]
    async with client_session() as session:
        tasks = [
            asyncio.ensure_future(stream_one(session, stack.url, stack.key, counter=opened)) for _ in range(streams)
        ]
        deadline = time.monotonic() + 60
        while opened[0] < streams and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        still_open = sum(not t.done() for t in tasks)
        stack.gateway.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        await asyncio.sleep(0.3)
        refused = await new_request_refused(stack.url)
        results = await asyncio.gather(*tasks)
        streams_done = time.monotonic() - sent
    exit_code = await asyncio.to_thread(stack.gateway.wait, 120)
    return {
        "streams": streams,
        "open_at_sigterm": still_open,
        "completed": sum(r.completed for r in results),
        "new_connection_refused": refused,
        "streams_ended_after_s": round(streams_done, 2),
        "exit_after_s": round(time.monotonic() - sent, 2),
        "exit_code": exit_code,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--chunk-ms", type=int, default=300)
    parser.add_argument("--graceful-timeout", type=float, default=30)
    args = parser.parse_args()
    uvicorn_args = ["--timeout-graceful-shutdown", f"{args.graceful_timeout:g}"]
    with Stack(chunks=args.chunks, chunk_ms=args.chunk_ms, uvicorn_args=uvicorn_args) as stack:
        figures = asyncio.run(run(stack, args.streams))
        figures["generation_rows"] = stack.generation_stats()
        figures["graceful_timeout_s"] = args.graceful_timeout
    emit(json.dumps(figures))
    rows = sum(figures["generation_rows"].values())
    finishes = args.graceful_timeout > args.chunks * args.chunk_ms / 1000 + 2
    ok = (
        figures["open_at_sigterm"] == args.streams
        and figures["new_connection_refused"]
        and figures["exit_code"] in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
        and rows == args.streams
        and (not finishes or figures["completed"] == args.streams == figures["generation_rows"].get("completed"))
    )
    if not ok:
        emit("FAILED")
        sys.exit(1)


if __name__ == "__main__":
    main()
