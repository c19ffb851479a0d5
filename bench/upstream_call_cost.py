"""CPU cost of one upstream call as the data plane makes it: `OpenAIChatAdapter.complete` (build the request,
`post_json`, parse the answer) and `OpenAIChatAdapter.stream` (build, `post_sse`, every event parsed) against
bench/fake_upstream.py on loopback, N calls in sequence in one uvloop event loop. Prints the CPU time of this
process (user + system, and user alone: `getrusage`) and the wall time per call, in µs.

    .venv/bin/python bench/upstream_call_cost.py [--calls 2000] [--stream-calls 300] [--chunk-ms 1]
        [--rounds 5] [--port 9290] [--root /path/to/other/checkout ...]
    .venv/bin/python bench/upstream_call_cost.py --http OLD/inference/providers/http.py \
        --http inference/providers/http.py [--calls 4000 --stream-calls 400 --batch 100]

The stream is the fake upstream's 20 chunks plus usage and [DONE], `--chunk-ms` apart so that each arrives in
its own read, as a model's tokens do (with 0 the number of reads per stream, and so its cost, varies from run
to run with how the chunks coalesce).

With one or more `--root` the checkouts are compared: each round runs one child process per checkout, in
turn (the upstream calls go through that checkout's `inference.providers`), and the medians over the rounds are
printed per checkout (the first one is the baseline). With `--http` the versions of
inference/providers/http.py are compared in one process instead, batches of calls alternated (less noise on a
busy machine: the slow and fast moments fall on both). The fake upstream runs in its own process, started here.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BODY = {"model": "bench/fake", "input": "Say hello", "max_output_tokens": 64}


async def measure(port: int, calls: dict[str, int]) -> dict[str, list[float]]:
    from gateway_project.pipeline import Credential
    from inference.providers.base import StreamDone, Timeouts, UpstreamCall
    from inference.providers.http import close_session
    from inference.providers.openai_chat import OpenAIChatAdapter

    adapter = OpenAIChatAdapter()
    credential = Credential(api_key="sk-bench-upstream-call-cost")
    base_url = f"http://127.0.0.1:{port}/v1"
    timeouts = Timeouts()

    def call(stream: bool) -> UpstreamCall:
        return UpstreamCall(dict(BODY), "fake-model", base_url, credential, stream, timeouts)

    async def one_json() -> None:
        result = await adapter.complete(call(False))
        assert result.usage.output_tokens > 0

    async def one_stream() -> None:
        done = None
        async for event in adapter.stream(call(True)):
            if isinstance(event, StreamDone):
                done = event
        assert done is not None and done.result.text

    out = {}
    for name, one in (("json", one_json), ("stream", one_stream)):
        n = calls[name]
        for _ in range(max(20, n // 10)):  # warm-up: the pooled connection, caches
            await one()
        times, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        for _ in range(n):
            await one()
        after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - wall
        user, system = after.ru_utime - times.ru_utime, after.ru_stime - times.ru_stime
        out[name] = [(user + system) / n * 1e6, wall / n * 1e6, user / n * 1e6]
    await close_session()
    return out


async def interleaved(port: int, files: list[str], calls: dict[str, int], batch: dict[str, int]) -> dict:
    """Each file a version of inference/providers/http.py loaded as its own module (its own session, the rest
    of the package shared), with the Chat Completions adapter on top: batches of calls alternated between them
    in this one process, CPU (`time.process_time`) per batch; returns each one's CPU µs per call per batch."""
    import importlib.util

    from gateway_project.pipeline import Credential
    from inference.providers.base import StreamDone, Timeouts, UpstreamCall
    from inference.providers.openai_chat import OpenAIChatAdapter

    adapters, modules = [], []
    for i, path in enumerate(files):
        spec = importlib.util.spec_from_file_location(f"bench_http_{i}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        parts = ("api_format", "path", "build_request", "parse_response", "stream_parser")
        adapter_class = type(f"Chat{i}", (module.HttpAdapter,), {k: getattr(OpenAIChatAdapter, k) for k in parts})
        adapters.append(adapter_class())
        modules.append(module)
    credential = Credential(api_key="sk-bench-upstream-call-cost")
    base_url = f"http://127.0.0.1:{port}/v1"
    timeouts = Timeouts()

    async def one(adapter, stream: bool) -> None:
        call = UpstreamCall(dict(BODY), "fake-model", base_url, credential, stream, timeouts)
        if not stream:
            assert (await adapter.complete(call)).usage.output_tokens > 0
            return
        done = None
        async for event in adapter.stream(call):
            if isinstance(event, StreamDone):
                done = event
        assert done is not None and done.result.text

    out: dict = {path: {"json": [], "stream": []} for path in files}
    for kind, stream in (("json", False), ("stream", True)):
        for adapter in adapters:  # warm-up: each module's pooled connection, caches
            for _ in range(max(10, batch[kind] // 5)):
                await one(adapter, stream)
        for round_ in range(max(1, calls[kind] // batch[kind])):
            order = list(zip(files, adapters, strict=True))
            for path, adapter in order if round_ % 2 == 0 else order[::-1]:
                cpu = time.process_time()
                for _ in range(batch[kind]):
                    await one(adapter, stream)
                out[path][kind].append((time.process_time() - cpu) / batch[kind] * 1e6)
    for module in modules:
        await module.close_session()
    return out


def inprocess(files: list[str], port: int, calls: dict[str, int], batch: dict[str, int]) -> None:
    sys.path.insert(0, str(HERE))
    os.chdir(HERE)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-upstream-call-cost")
    os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/bench-upstream-call-cost.sqlite3")
    import django
    import uvloop

    django.setup()
    out = uvloop.run(interleaved(port, files, calls, batch))
    first = files[0]
    print(
        f"in one process, {calls['json']} JSON calls in batches of {batch['json']} and {calls['stream']} streamed "
        f"in batches of {batch['stream']} per file, alternated; CPU µs per call, median over the batches:"
    )
    for path in files:
        line = f"  {path}: " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in out[path].items())
        if path != first:
            line += (
                "  (paired difference: "
                + ", ".join(
                    f"{k} {statistics.median(a - b for a, b in zip(v, out[first][k], strict=True)):+.1f}"
                    for k, v in out[path].items()
                )
                + ")"
            )
        print(line, flush=True)


def child(root: str, port: int, calls: dict[str, int]) -> None:
    sys.path.insert(0, root)
    os.chdir(root)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-upstream-call-cost")
    os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/bench-upstream-call-cost.sqlite3")
    import django
    import uvloop

    django.setup()
    print(json.dumps(uvloop.run(measure(port, calls))))


def wait_for_port(port: int) -> None:
    import socket

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"fake upstream did not listen on {port}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000, help="JSON calls per round")
    parser.add_argument("--stream-calls", type=int, default=300, help="streamed calls per round")
    parser.add_argument(
        "--chunk-ms", type=float, default=1.0, help="the fake upstream's pause between stream chunks (one read each)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--port", type=int, default=9290)
    parser.add_argument("--root", action="append", help="a checkout to measure (repeat to compare); default: this")
    parser.add_argument(
        "--http",
        action="append",
        help="a version of inference/providers/http.py (repeat to compare): calls alternated in one process",
    )
    parser.add_argument("--batch", type=int, default=100, help="--http: JSON calls per batch (streams: a tenth)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    calls = {"json": args.calls, "stream": args.stream_calls}
    if args.child:
        return child(args.child, args.port, calls)
    roots = [str(Path(r).resolve()) for r in args.root or [HERE]]
    upstream = subprocess.Popen(
        [sys.executable, str(HERE / "bench" / "fake_upstream.py"), str(args.port)],
        stdout=subprocess.DEVNULL,
        env={**os.environ, "FAKE_CHUNK_MS": str(args.chunk_ms)},
    )
    try:
        wait_for_port(args.port)
        if args.http:
            batch = {"json": args.batch, "stream": max(1, args.batch // 10)}
            return inprocess([str(Path(f).resolve()) for f in args.http], args.port, calls, batch)
        results: dict[str, list[dict]] = {root: [] for root in roots}
        for round_ in range(args.rounds):
            for root in roots if round_ % 2 == 0 else roots[::-1]:  # the order alternates: no checkout always first
                command = [sys.executable, __file__, "--child", root, "--port", str(args.port)]
                command += ["--calls", str(args.calls), "--stream-calls", str(args.stream_calls)]
                out = subprocess.run(command, capture_output=True, text=True)
                if out.returncode:
                    raise SystemExit(out.stderr)
                results[root].append(json.loads(out.stdout.strip().splitlines()[-1]))
                line = results[root][-1]
                print(
                    f"round {round_ + 1} {root}: json {line['json'][0]:.0f} µs CPU ({line['json'][2]:.0f} user), "
                    f"stream {line['stream'][0]:.0f} µs CPU ({line['stream'][2]:.0f} user)",
                    flush=True,
                )
    finally:
        upstream.terminate()
        upstream.wait()
    print(
        f"\nmedian over {args.rounds} rounds of {args.calls} JSON and {args.stream_calls} streamed calls "
        f"({args.chunk_ms} ms between chunks), µs per call: CPU (user) / wall"
    )
    first = roots[0]
    for root in roots:
        medians = {
            kind: [statistics.median(r[kind][i] for r in results[root]) for i in range(3)]
            for kind in ("json", "stream")
        }
        line = (
            "  "
            + root
            + ": "
            + ", ".join(f"{kind} {m[0]:.0f} ({m[2]:.0f}) / {m[1]:.0f}" for kind, m in medians.items())
        )
        if root != first:  # each round's difference to the first checkout, measured just before it: the median
            deltas = {
                kind: [
                    statistics.median(
                        r[kind][i] - b[kind][i] for r, b in zip(results[root], results[first], strict=True)
                    )
                    for i in (0, 2)
                ]
                for kind in ("json", "stream")
            }
            line += "\n    paired difference: " + ", ".join(
                f"{kind} {d[0]:+.0f} CPU ({d[1]:+.0f} user)" for kind, d in deltas.items()
            )
        print(line)


if __name__ == "__main__":
    main()
