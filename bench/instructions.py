"""Instructions per request of the gateway worker, counted by Valgrind's callgrind: a figure this shared machine's
noise does not move (requests/s and CPU time moved by 20-40 % between runs of the same code here).

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench BENCH_REDIS_URL=redis://127.0.0.1:6379/1 \\
      .venv/bin/python bench/instructions.py gb gbr            # N=400 C=16 ROUNDS=3 STREAM=false
    ... bench/instructions.py /work/wt/base:gbr .:gbr          # two checkouts (each with its .venv)

Each argument is [CHECKOUT:]POLICIES, POLICIES a policy set of bench/policies.py (letters g guardrail, b budget
and key limit, r rate limits; "none": no policy), each set with its own key in one database (the checkouts must
share its migrations). Each checkout runs one gateway worker (`python -m gateway_project.serve`, the production
command line) under `valgrind --tool=callgrind`, all pinned to core 1, with instrumentation on once they serve;
the fake upstream runs natively. Per round and variant: WARM requests, the counters zeroed PAUSE seconds (2)
after the last answer (the after-response work lands before), N requests at C connections (aiohttp, kept alive,
every answer read to its end and checked to be a 200), the counters dumped PAUSE seconds later; the figure is
the instructions of the whole process (every thread) in that dump over N. Variants are measured in turn, round
after round, the order rotated by one each round. In brackets: the figure less what the worker runs idle
(timers, pollers; counted for 10 s at the start) over the measure's duration.

What it counts and what it does not: user-space instructions of the worker (Python, the C extensions, libc),
not the kernel's work for its system calls, nor the database's, Redis's or the upstream's. Under callgrind the
worker runs about 50-100 times slower while PostgreSQL, Redis and the upstream do not, so anything timed
(rate-limit leases of GATEWAY_RATE_LIMIT_LEASE_MS, batching windows) sees fewer requests per interval than at
full speed; the environment is passed to the worker, so such settings can be scaled for a run. The worker's
time limits (database deadline, Redis time-outs) are stretched by SLOWDOWN (100) unless set, and warnings in
its log (a time-out, Redis given up for the database) are printed at the end. Needs valgrind
(Debian: `apt-get install valgrind`).

Runs may go on at the same time: each keeps its dumps, the workers' logs and its SQLite database in a folder of
its own, a new /tmp/gateway-instructions-XXXXXXXX/ (`--dir DIR`: that folder, created if missing, nothing in
it removed), named at the end (`callgrind_annotate --inclusive=yes <dump>` shows where the instructions went).
Its ports (the fake upstream's, one per worker) are ones the system has free, found by binding port 0 and held
until their process is started (which binds it a moment later); `--ports FIRST-LAST` takes them from that range
instead (the free ones, in order), so runs given ranges apart never meet, not even in that moment. `--help`:
the options.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadkit import PY, ROOT, wait_http

N = int(os.environ.get("N", "400"))
C = int(os.environ.get("C", "16"))
WARM = int(os.environ.get("WARM", "100"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
PAUSE = float(os.environ.get("PAUSE", "2"))  # before zeroing and before dumping: the after-response work lands
STREAM = os.environ.get("STREAM", "false") == "true"


def environment(upstream_port: int, out: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=os.environ.get("BENCH_DATABASE_URL") or f"sqlite:///{out}/gateway.sqlite3",
        REDIS_URL=os.environ.get("BENCH_REDIS_URL", ""),
        UPSTREAM_PORT=str(upstream_port),
        BENCH_API_FORMAT="openai-responses",
        BENCH_KEY="sk-bench-upstream",
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY="bench-only-secret-key-0123456789abcdefghijklmnop",
        GATEWAY_LOG_LEVEL="WARNING",
        GATEWAY_DRAIN_SECONDS="0",  # no balancer in front: SIGTERM stops at once
    )
    # Under callgrind the worker runs about SLOWDOWN times slower than PostgreSQL and Redis answer: its own time
    # limits are stretched as much (unless set), or a reply it is slow to read is taken for a failure (a 503 of
    # the database deadline, the rate limits moved to the database).
    slowdown = float(os.environ.get("SLOWDOWN", "100"))
    env.setdefault("GATEWAY_DB_DEADLINE_SECONDS", str(5.0 * slowdown))
    env.setdefault("GATEWAY_REDIS_TIMEOUT_SECONDS", str(1.0 * slowdown))
    env.setdefault("GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS", str(int(500 * slowdown)))
    if not env.get("GATEWAY_BYOK_ENCRYPTION_KEYS"):
        from cryptography.fernet import Fernet

        env["GATEWAY_BYOK_ENCRYPTION_KEYS"] = Fernet.generate_key().decode()
    return env


def key_for(policy_set: str, env: dict[str, str]) -> str:
    run = dict(capture_output=True, text=True, check=True, cwd=ROOT)
    key = subprocess.run([PY, "bench/prepare.py"], env=env, **run).stdout.strip().splitlines()[-1]
    if policy_set != "none":
        subprocess.run([PY, "bench/policies.py", key], env={**env, "BENCH_POLICY_SET": policy_set}, **run)
    return key


async def drive(url: str, key: str, count: int) -> None:
    """`count` requests at C connections; each answer read to its end; any status but 200 stops the run."""
    body = {"model": "bench/fake", "input": "Say hello", "stream": STREAM}
    headers = {"Authorization": f"Bearer {key}"}
    left = count
    connector = aiohttp.TCPConnector(limit=C)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as session:

        async def one_connection() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                async with session.post(url, json=body, headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        raise SystemExit(f"{response.status}: {(await response.text())[:300]}")

        await asyncio.gather(*(one_connection() for _ in range(C)))


def control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def dumped_instructions(out: Path, pid: int, before: set[Path]) -> int:
    """The `summary:` of the dump callgrind_control -d just wrote."""
    for _ in range(600):
        new = sorted(set(out.glob(f"callgrind.{pid}.*")) - before)
        if new:
            text = new[-1].read_text(errors="replace")
            for line in text.splitlines():
                if line.startswith("summary:"):
                    return int(line.split()[1])
        time.sleep(0.1)
    raise RuntimeError("callgrind wrote no dump")


def measure(out: Path, pid: int, work) -> int:
    """Instructions of the process from the counters' zeroing to their dump PAUSE seconds after `work()`."""
    control(pid, "-z")
    work()
    time.sleep(PAUSE)
    before = set(out.glob(f"callgrind.{pid}.*"))
    control(pid, "-d")
    return dumped_instructions(out, pid, before)


def start_gateway(checkout: Path, out: Path, port: int, env: dict[str, str]) -> subprocess.Popen:
    """One worker of `checkout` (its .venv: a symlink to this one's will do) under callgrind, pinned to core 1."""
    log = open(out / f"gateway-{port}.log", "w")  # noqa: SIM115
    return subprocess.Popen(
        [
            *("taskset", "-c", "1", "valgrind", "--tool=callgrind", "--instr-atstart=no"),
            f"--callgrind-out-file={out}/callgrind.%p",
            *(str(checkout / ".venv" / "bin" / "python"), "-m", "gateway_project.serve"),
            *("gateway_project.asgi:application", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"),
            *("--loop", "uvloop", "--http", "httptools", "--lifespan", "on", "--no-access-log"),
            *("--log-level", "warning", "--no-server-header"),
        ],
        cwd=checkout,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


class Ports:
    """Ports for the run's processes, each held bound (`take`) until its process is about to start (`release`):
    from `FIRST-LAST` (each one free when taken, in order), else one the system has free (port 0)."""

    def __init__(self, span: str | None) -> None:
        self.next, self.last = (int(p) for p in span.split("-", 1)) if span else (0, 0)
        self.held: dict[int, socket.socket] = {}

    def take(self) -> int:
        for candidate in range(self.next, self.last + 1) if self.last else (0,):
            sock = socket.socket()
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:  # in use (another run's, another program's)
                sock.close()
                continue
            port = sock.getsockname()[1]
            self.next = port + 1
            self.held[port] = sock
            return port
        raise SystemExit(f"no free port left in --ports (up to {self.last})")

    def release(self, port: int) -> None:
        self.held.pop(port).close()


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Instructions per request of a gateway worker under callgrind (see the module doc).",
        epilog="Environment: N, C, WARM, ROUNDS, PAUSE, STREAM, SLOWDOWN, BENCH_DATABASE_URL, BENCH_REDIS_URL.",
    )
    parser.add_argument("variants", nargs="*", default=["gbr"], help="[CHECKOUT:]POLICIES (default: gbr)")
    parser.add_argument("--dir", type=Path, help="folder of the dumps and logs (default: a new one in /tmp)")
    parser.add_argument("--ports", metavar="FIRST-LAST", help="take the ports from this range (default: any free)")
    return parser.parse_args()


def main() -> None:
    options = arguments()
    variants = options.variants
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    if options.dir:
        out = options.dir.resolve()
        out.mkdir(parents=True, exist_ok=True)
    else:
        out = Path(tempfile.mkdtemp(prefix="gateway-instructions-"))
    print(f"dumps and logs in {out}", flush=True)
    ports = Ports(options.ports)
    upstream_port = ports.take()
    env = environment(upstream_port, out)
    procs: list[subprocess.Popen] = []
    try:
        ports.release(upstream_port)
        upstream = subprocess.Popen(
            ["taskset", "-c", "0", PY, "bench/fake_upstream.py", str(upstream_port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(upstream)
        # A variant is [CHECKOUT:]POLICIES; each checkout gets one worker, each policy set one key.
        parsed = [(Path(v.rpartition(":")[0] or ROOT).resolve(), v.rpartition(":")[2]) for v in variants]
        keys = {policy_set: key_for(policy_set, env) for policy_set in dict.fromkeys(p for _, p in parsed)}
        gateways: dict[Path, tuple[subprocess.Popen, str]] = {}
        for checkout in dict.fromkeys(c for c, _ in parsed):
            port = ports.take()
            ports.release(port)
            gateway = start_gateway(checkout, out, port, env)
            procs.append(gateway)
            gateways[checkout] = (gateway, f"http://127.0.0.1:{port}/api/v1/responses")
        idle: dict[Path, float] = {}
        for checkout, (gateway, url) in gateways.items():
            wait_http(url, gateway, timeout=600)
            control(gateway.pid, "-i", "on")
            asyncio.run(drive(url, keys[parsed[0][1]], WARM))
            time.sleep(PAUSE)
            idle[checkout] = measure(out, gateway.pid, lambda: time.sleep(10)) / 10
        rates = ", ".join(f"{rate / 1e6:.2f}" for rate in idle.values())
        print(
            f"instructions per request (millions), {N} requests at {C} connections, stream={STREAM}; idle: "
            f"{rates} million per second (in brackets: the figure less that rate over the measure)",
            flush=True,
        )
        for round_ in range(1, ROUNDS + 1):
            results = {}
            for k in range(len(variants)):
                index = (k + round_ - 1) % len(variants)
                checkout, policy_set = parsed[index]
                gateway, url = gateways[checkout]
                key = keys[policy_set]
                asyncio.run(drive(url, key, WARM))
                time.sleep(PAUSE)
                started = time.monotonic()
                total = measure(out, gateway.pid, lambda url=url, key=key: asyncio.run(drive(url, key, N)))
                less_idle = total - idle[checkout] * (time.monotonic() - started)
                results[index] = f"{total / N / 1e6:.3f} ({less_idle / N / 1e6:.3f})"
            line = " | ".join(f"{variants[i]} {results[i]}" for i in range(len(variants)))
            print(f"round {round_} | {line}", flush=True)
        for log in sorted(out.glob("gateway-*.log")):  # a measure with warnings in it did not run as at full speed
            warnings = [line for line in log.read_text(errors="replace").splitlines() if " WARNING " in line]
            if warnings:
                print(f"{log.name}: {len(warnings)} warnings, the first: {warnings[0]}", flush=True)
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
        print(f"dumps and logs in {out}", flush=True)


if __name__ == "__main__":
    main()
