"""N concurrent open streams on one uvicorn worker: the server's RSS before, while all are open, and after.

    .venv/bin/python bench/streams.py                       # 1,000 streams of 30 chunks, one a second
    .venv/bin/python bench/streams.py --streams 200 --chunks 10 --chunk-ms 500

Starts the fake upstream and one gateway worker (bench/loadkit.Stack, full middleware chain), warms the
gateway up with a few streams, then opens N streamed POST /api/v1/responses at once against a
slow-streaming upstream and samples the gateway's RSS (psutil) every 0.2 s. "open" is the RSS at the first
sample where every stream had received its first event and none had ended. Checks that every stream ends
with `response.completed` and that a completed Generation row was written for each. Prints a summary and
one JSON line (the last line) with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadkit import Stack, client_session, emit, open_fds, rss_mb, stream_one

WARMUP = 20


async def measure(stack: Stack, streams: int) -> dict:
    pid = stack.gateway.pid
    async with client_session() as session:
        warm = await asyncio.gather(*(stream_one(session, stack.url, stack.key) for _ in range(WARMUP)))
        if not all(r.completed for r in warm):
            raise RuntimeError(f"warm-up failed: {warm[0]}")
    await asyncio.sleep(1)
    before = rss_mb(pid)
    fds_before = open_fds(pid)
    opened = [0]
    samples: list[tuple[float, float, int, int]] = []
    gc.disable()  # the client's own collections would only add noise to the timing of samples
    start = time.monotonic()
    async with client_session() as session:
        tasks = [
            asyncio.ensure_future(stream_one(session, stack.url, stack.key, counter=opened)) for _ in range(streams)
        ]
        at_open = None
        while not all(t.done() for t in tasks):
            done = sum(t.done() for t in tasks)
            rss = rss_mb(pid)
            samples.append((time.monotonic() - start, rss, opened[0], done))
            if at_open is None and opened[0] == streams and done == 0:
                at_open = (time.monotonic() - start, rss, open_fds(pid))
            await asyncio.sleep(0.2)
        results = [t.result() for t in tasks]
    gc.enable()
    elapsed = time.monotonic() - start
    await asyncio.sleep(2)
    after = rss_mb(pid)
    peak = max(s[1] for s in samples)
    completed = sum(r.completed for r in results)
    errors = sorted({r.error or str(r.status) for r in results if not r.completed})[:5]
    open_rss = at_open[1] if at_open else None
    return {
        "streams": streams,
        "completed": completed,
        "errors": errors,
        "all_open_at_s": round(at_open[0], 2) if at_open else None,
        "elapsed_s": round(elapsed, 2),
        "rss_before_mb": round(before, 1),
        "rss_all_open_mb": round(open_rss, 1) if open_rss else None,
        "rss_peak_mb": round(peak, 1),
        "rss_after_mb": round(after, 1),
        "kb_per_open_stream": round((open_rss - before) * 1000 / streams, 1) if open_rss else None,
        "kb_per_stream_at_peak": round((peak - before) * 1000 / streams, 1),
        "fds_before": fds_before[0],
        "fds_all_open": at_open[2][0] if at_open else None,
        "sockets_all_open": at_open[2][1] if at_open else None,
        "fds_after": open_fds(pid)[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--chunks", type=int, default=30)
    parser.add_argument("--chunk-ms", type=int, default=1000)
    parser.add_argument("--pin", action="store_true", help="pin upstream and client to core 0, the gateway to core 1")
    args = parser.parse_args()
    with Stack(chunks=args.chunks, chunk_ms=args.chunk_ms, pin=args.pin) as stack:
        figures = asyncio.run(measure(stack, args.streams))
        figures["generation_rows"] = stack.generation_count() - WARMUP
    emit(
        f"{figures['completed']}/{figures['streams']} streams completed in {figures['elapsed_s']} s "
        f"(all open at {figures['all_open_at_s']} s); Generation rows: {figures['generation_rows']}"
    )
    emit(
        f"gateway RSS MB: before {figures['rss_before_mb']}, all open {figures['rss_all_open_mb']}, "
        f"peak {figures['rss_peak_mb']}, after {figures['rss_after_mb']}; "
        f"{figures['kb_per_open_stream']} KB per open stream ({figures['kb_per_stream_at_peak']} KB at peak)"
    )
    emit(json.dumps(figures))
    if figures["completed"] != args.streams or figures["generation_rows"] != args.streams:
        sys.exit(1)


if __name__ == "__main__":
    main()
