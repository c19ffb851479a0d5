"""Soak: a steady request rate against one gateway worker, with RSS and open connections sampled over time.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> BENCH_REDIS_URL=redis://127.0.0.1:6379/<n> \
        .venv/bin/python bench/soak.py --minutes 10 --rate 40

An open-loop asyncio client starts `rate` requests a second (half JSON, half streamed with 20 chunks;
at most 256 in flight, so the client stays bounded) through the full middleware chain with a guardrail, a
workspace budget and a key limit on the key (bench/loadkit.Stack, bench/policies.py).
Every `--every` seconds it samples the gateway's RSS, open file descriptors and TCP sockets (psutil) and,
on PostgreSQL, the database's connections (pg_stat_activity). Writes bench/soak.csv and bench/soak.png and
prints the growth check: RSS, descriptors and database connections in the last minute against the second
minute (the first is warm-up). Exit status 1 when a request failed or something grew past the bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadkit import Stack, client_session, emit, open_fds, rss_mb

HERE = Path(__file__).resolve().parent
FIELDS = ("t_s", "rss_mb", "fds", "tcp_sockets", "db_connections", "requests_done", "errors", "window_rps", "p50_ms")


def db_connections(url: str) -> int | None:
    if not url.startswith("postgres"):
        return None
    import psycopg

    dbname = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (dbname,)).fetchone()[0]


class Load:
    """Open-loop load: one request every 1/rate s; counts, errors and latencies of the current window."""

    def __init__(self, url: str, key: str, rate: float, in_flight: int = 256) -> None:
        self.url, self.rate = url, rate
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.slots = asyncio.Semaphore(in_flight)
        self.done = self.errors = 0
        self.window: list[float] = []
        self.first_error = ""
        self.error_kinds: dict[str, int] = {}

    async def one(self, session, n: int) -> None:
        stream = b"true" if n % 2 else b"false"
        body = b'{"model":"bench/fake","input":"Say hello","stream":%s}' % stream
        started = time.perf_counter()
        try:
            async with session.post(self.url, data=body, headers=self.headers) as resp:
                data = await resp.read()
                ok = resp.status == 200 and (b"response.completed" in data if n % 2 else b'"completed"' in data)
        except Exception as exc:
            ok, data = False, repr(exc).encode()
            resp = None
        finally:
            self.slots.release()
        self.done += 1
        self.window.append((time.perf_counter() - started) * 1000)
        if not ok:
            self.errors += 1
            kind = f"HTTP {resp.status}" if resp is not None else data[:80].decode(errors="replace")
            self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1
            self.first_error = self.first_error or data[:300].decode(errors="replace")

    async def run(self, seconds: float) -> None:
        tasks = set()
        async with client_session(limit=256) as session:
            start = time.monotonic()
            n = 0
            while (now := time.monotonic()) - start < seconds:
                due = start + n / self.rate
                if due > now:
                    await asyncio.sleep(due - now)
                await self.slots.acquire()
                task = asyncio.ensure_future(self.one(session, n))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                n += 1
            await asyncio.gather(*tasks)


async def soak(stack: Stack, minutes: float, rate: float, every: float) -> list[dict]:
    load = Load(stack.url, stack.key, rate)
    emit(json.dumps({"gateway_pid": stack.gateway.pid, "upstream_pid": stack.upstream.pid}))
    runner = asyncio.ensure_future(load.run(minutes * 60))
    rows: list[dict] = []
    start = time.monotonic()
    last_done, last_t = 0, start
    while not runner.done():
        await asyncio.wait({runner}, timeout=every)
        now = time.monotonic()
        fds, sockets = open_fds(stack.gateway.pid)
        window, load.window = sorted(load.window), []
        row = {
            "t_s": round(now - start, 1),
            "rss_mb": round(rss_mb(stack.gateway.pid), 2),
            "fds": fds,
            "tcp_sockets": sockets,
            "db_connections": await asyncio.to_thread(db_connections, stack.env["DATABASE_URL"]),
            "requests_done": load.done,
            "errors": load.errors,
            "window_rps": round((load.done - last_done) / (now - last_t), 1),
            "p50_ms": round(window[len(window) // 2], 2) if window else None,
        }
        last_done, last_t = load.done, now
        rows.append(row)
        emit(json.dumps(row))
    runner.result()
    if load.first_error:
        emit(f"first error: {load.first_error}; errors by kind: {json.dumps(load.error_kinds)}")
    return rows


def window(rows: list[dict], lo: float, hi: float, key: str) -> list[float]:
    return [r[key] for r in rows if lo <= r["t_s"] < hi and r[key] is not None]


def verdict(rows: list[dict], minutes: float) -> dict:
    """Second minute (after warm-up) against the last minute: mean RSS, max fds/sockets/db connections."""
    end = minutes * 60
    out = {"requests": rows[-1]["requests_done"], "errors": rows[-1]["errors"]}
    for key, agg in (("rss_mb", "mean"), ("fds", "median"), ("tcp_sockets", "median"), ("db_connections", "max")):
        a, b = window(rows, 60, 120, key), window(rows, end - 60, end + 60, key)
        if not a or not b:
            continue
        f = {"mean": lambda v: sum(v) / len(v), "median": lambda v: sorted(v)[len(v) // 2], "max": max}[agg]
        out[key] = {
            "agg": agg,
            "minute_2": round(f(a), 2),
            "last_minute": round(f(b), 2),
            "ratio": round(f(b) / f(a), 3),
        }
    return out


def plot(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["t_s"] / 60 for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    axes[0].plot(t, [r["rss_mb"] for r in rows], color="tab:blue")
    axes[0].set_ylabel("gateway RSS (MB)")
    axes[0].set_ylim(bottom=0)
    axes[1].plot(t, [r["fds"] for r in rows], label="open fds")
    axes[1].plot(t, [r["tcp_sockets"] for r in rows], label="TCP sockets")
    if rows[0]["db_connections"] is not None:
        axes[1].plot(t, [r["db_connections"] for r in rows], label="PostgreSQL connections")
    axes[1].set_ylabel("count")
    axes[1].set_ylim(bottom=0)
    axes[1].legend(loc="upper left")
    axes[2].plot(t, [r["window_rps"] for r in rows], label="requests/s", color="tab:green")
    axes[2].set_ylabel("requests/s")
    axes[2].set_ylim(bottom=0)
    twin = axes[2].twinx()
    twin.plot(t, [r["p50_ms"] for r in rows], label="p50 ms", color="tab:orange")
    twin.set_ylabel("p50 latency (ms)", color="tab:orange")
    twin.set_ylim(bottom=0)
    axes[2].set_xlabel("minutes")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--rate", type=float, default=40, help="requests started per second")
    parser.add_argument("--every", type=float, default=5, help="seconds between samples")
    parser.add_argument("--out", default=str(HERE / "soak"), help="path prefix of the .csv and .png")
    args = parser.parse_args()
    with Stack(chunks=20, chunk_ms=0, policies=True) as stack:
        rows = asyncio.run(soak(stack, args.minutes, args.rate, args.every))
        db = "PostgreSQL" if stack.env["DATABASE_URL"].startswith("postgres") else "SQLite"
    with open(f"{args.out}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    title = f"Soak: {args.rate:g} req/s (half streamed) for {args.minutes:g} min, one uvicorn worker, {db}"
    plot(rows, Path(f"{args.out}.png"), title)
    result = verdict(rows, args.minutes)
    emit(json.dumps(result))
    grew = [k for k, v in result.items() if isinstance(v, dict) and v["ratio"] > (1.10 if k == "rss_mb" else 1.5)]
    if result["errors"] or grew:
        emit(f"FAILED: errors={result['errors']} grew={grew}")
        sys.exit(1)


if __name__ == "__main__":
    main()
