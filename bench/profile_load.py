"""Profile the gateway under load (named profile_load.py: a bench/profile.py would shadow the standard
library's profile module for the other scripts of this folder) with every middleware and policy on (py-spy),
and print the top items.

    .venv/bin/python bench/profile_load.py                    # streamed and JSON, 20 s each, wrk at 16 connections
    .venv/bin/python bench/profile_load.py --seconds 10 --stream true

Starts the fake upstream and one gateway worker (bench/loadkit.Stack) with a guardrail (all built-in
detectors and five regexes), a workspace budget and a key limit on the key (bench/policies.py), drives it
with wrk and samples the gateway with `py-spy record --nonblocking` (raw collapsed stacks, 200 samples/s
of every thread that is not idle, database threads waiting on I/O included; with --gil only the thread holding
the GIL, i.e. where the worker's CPU goes). Prints requests/s, the top functions by own ("self") time and
the project's functions by inclusive time, as shares of the busy samples. Raw stacks are kept in
/tmp/gateway-profile-<mode>.txt.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadkit import PY, ROOT, Stack, emit

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^:()]*)(?::\d+)?\)$")


def wrk_script(key: str, stream: str) -> str:
    body = f'{{"model":"bench/fake","input":"Say hello, my email is jane@example.com","stream":{stream}}}'
    lines = [
        'wrk.method="POST"',
        'wrk.headers["Content-Type"]="application/json"',
        f'wrk.headers["Authorization"]="Bearer {key}"',
        f"wrk.body=[[{body}]]",
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    return f.name


def wrk(url: str, script: str, seconds: int, connections: int) -> str:
    args = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", script, url]
    return subprocess.run(args, capture_output=True, text=True).stdout


def short(frame: str) -> str:
    m = FRAME.match(frame)
    if not m:
        return frame
    path = m["file"]
    for prefix in (str(ROOT) + "/", "site-packages/"):
        if prefix in path:
            path = path.split(prefix, 1)[1]
    return f"{m['func']} ({path})"


def summarize(raw: Path, top: int) -> tuple[int, list, list]:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [short(f) for f in stack.split(";") if f and not f.startswith("process ") and "thread (" not in f]
        if not frames:
            continue
        n = int(count)
        total += n
        own[frames[-1]] += n
        project = {f for f in frames if "(" in f and not f.split("(")[-1].startswith(("/", "asyncio", "uvicorn"))}
        for f in project:
            if "/" in f.split("(")[-1] and not f.split("(")[-1].startswith(
                ("aiohttp", "django", "channels", "asgiref", "psycopg", "redis", "click", "httptools", "uvloop")
            ):
                inclusive[f] += n
    return total, own.most_common(top), inclusive.most_common(top)


def profile(stack: Stack, stream: str, seconds: int, top: int, gil: list[str], connections: int = 16) -> None:
    script = wrk_script(stack.key, stream)
    wrk(stack.url, script, 3, 16)  # warm-up
    raw = Path(f"/tmp/gateway-profile-{'stream' if stream == 'true' else 'json'}.txt")
    spy = subprocess.Popen(
        [
            str(Path(PY).parent / "py-spy"),
            "record",
            "--pid",
            str(stack.gateway.pid),
            "--rate",
            "200",
            *gil,
            "--nonblocking",
            "--duration",
            str(seconds),
            "--format",
            "raw",
            "--output",
            str(raw),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    out = wrk(stack.url, script, seconds, connections)
    spy.wait(seconds + 30)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    os.unlink(script)
    total, own, inclusive = summarize(raw, top)
    emit(f"\n== stream={stream}: {rps[1] if rps else '?'} requests/s under py-spy, non-2xx: {bad[1] if bad else 0}")
    emit(f"-- top {top} by own time (share of {total} busy samples)")
    for name, n in own:
        emit(f"{100 * n / total:5.1f}%  {name}")
    emit(f"-- top {top} project functions by inclusive time")
    for name, n in inclusive:
        emit(f"{100 * n / total:5.1f}%  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--stream", choices=("true", "false", "both"), default="both")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (1: the critical path)")
    parser.add_argument("--gil", action="store_true", help="sample only the thread holding the GIL (CPU)")
    args = parser.parse_args()
    with Stack(chunks=20, chunk_ms=0, policies=True) as stack:
        for stream in ("true", "false") if args.stream == "both" else (args.stream,):
            profile(stack, stream, args.seconds, args.top, ["--gil"] if args.gil else [], args.connections)


if __name__ == "__main__":
    main()
