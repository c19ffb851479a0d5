"""CPU cost of one Redis command through redis-py's asyncio client: the library's defaults (`Redis.from_url`)
against the data plane's tuned client (gateway_project/redis_clients.py: hiredis packing, pooled connections
checked without a read), alternated in one process.

    .venv/bin/python bench/redis_command_cost.py [--url redis://127.0.0.1:6379/7] [--commands 4000]
        [--concurrency 16] [--rounds 5]

Each command is an EVALSHA of a small script with the rate-limit check's shape (4 keys, 11 arguments), sent by
`--concurrency` tasks at once in one uvloop event loop; prints the CPU time of this process per command (user +
system, `time.process_time`) for each client per round, then the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis.asyncio as aioredis
import uvloop
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from gateway_project.redis_clients import async_client

SCRIPT = "return {KEYS[1], ARGV[1], ARGV[2]}"
KEYS = ("gateway:rl:bench:log", "gateway:rl:bench:tokens", "gateway:rl:bench2:log", "gateway:rl:bench2:tokens")
ARGS = (60000, "req-0123456789abcdef", 120, 2, 600, 100000, 60, 0, 1, 2000, 5)


async def measure(client: aioredis.Redis, commands: int, concurrency: int) -> float:
    script = client.register_script(SCRIPT)

    async def worker(count: int) -> None:
        for _ in range(count):
            await script(keys=KEYS, args=ARGS)

    await asyncio.gather(*(worker(20) for _ in range(concurrency)))  # warm: the pool's connections, the script
    cpu = time.process_time()
    await asyncio.gather(*(worker(commands // concurrency) for _ in range(concurrency)))
    return (time.process_time() - cpu) / (commands // concurrency * concurrency) * 1e6


async def main(args: argparse.Namespace) -> None:
    options = {"socket_timeout": 1.0, "socket_connect_timeout": 1.0, "retry": Retry(NoBackoff(), 0)}
    clients = {
        "redis-py defaults": lambda: aioredis.Redis.from_url(args.url, **options),
        "tuned (redis_clients)": lambda: async_client(args.url, 1.0),
    }
    results: dict[str, list[float]] = {name: [] for name in clients}
    for round_ in range(args.rounds):
        order = list(clients.items())
        for name, make in order if round_ % 2 == 0 else order[::-1]:
            client = make()
            try:
                results[name].append(await measure(client, args.commands, args.concurrency))
            finally:
                await client.aclose()
        print(f"round {round_ + 1}: " + " | ".join(f"{n} {v[-1]:.1f} µs" for n, v in results.items()))
    print(f"median over {args.rounds} rounds, CPU µs per command ({args.concurrency} at a time):")
    for name, values in results.items():
        print(f"  {name}: {statistics.median(values):.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="redis://127.0.0.1:6379/7")
    parser.add_argument("--commands", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    uvloop.run(main(parser.parse_args()))
