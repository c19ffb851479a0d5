"""Shared parts of the load scripts (bench/streams.py, bench/soak.py, bench/shutdown.py).

`Stack` starts, as separate processes, the fake upstream (bench/fake_upstream.py) and one uvicorn worker
serving the whole gateway with the default middleware chain (key auth, region, presets, guardrails,
budgets, accounting), after bench/prepare.py made the database, the `bench/fake` catalog row and a key.
The database is BENCH_DATABASE_URL (default: a fresh SQLite file in /tmp); BENCH_REDIS_URL is optional.
`stream_one` runs one streamed POST /api/v1/responses and reads it to its end.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import psutil

ROOT = Path(__file__).resolve().parent.parent
PY = os.environ.get("PY", str(ROOT / ".venv" / "bin" / "python"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu(core: int | None) -> list[str]:
    return ["taskset", "-c", str(core)] if core is not None and os.cpu_count() and os.cpu_count() > 1 else []


@dataclass
class Stack:
    """Fake upstream + one uvicorn gateway worker; use as a context manager."""

    chunks: int = 20
    chunk_ms: int = 0
    uvicorn_args: list[str] = field(default_factory=list)
    pin: bool = False  # taskset: other benchmarks on a shared machine pin to the same cores
    policies: bool = False  # guardrail, workspace budget and key limit on the key (bench/policies.py)
    key: str = ""
    upstream: subprocess.Popen | None = None
    gateway: subprocess.Popen | None = None
    tmpdir: str = ""

    def __post_init__(self) -> None:
        self.upstream_port = free_port()
        self.port = free_port()
        self.tmpdir = tempfile.mkdtemp(prefix="gateway-load-")
        db = os.environ.get("BENCH_DATABASE_URL") or f"sqlite:///{self.tmpdir}/gateway.sqlite3"
        self.env = dict(
            os.environ,
            DATABASE_URL=db,
            REDIS_URL=os.environ.get("BENCH_REDIS_URL", ""),
            DJANGO_DEBUG="false",
            DJANGO_SECRET_KEY="load-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
            GATEWAY_BYOK_ENCRYPTION_KEYS=base64.urlsafe_b64encode(os.urandom(32)).decode(),
            GATEWAY_LOG_LEVEL="WARNING",
            GATEWAY_DRAIN_SECONDS="0",  # no balancer in front: SIGTERM stops at once
            BENCH_KEY="sk-bench-upstream",
            UPSTREAM_PORT=str(self.upstream_port),
            FAKE_CHUNKS=str(self.chunks),
            FAKE_CHUNK_MS=str(self.chunk_ms),
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1/responses"

    def __enter__(self) -> Stack:
        log = open(Path(self.tmpdir) / "upstream.log", "w")
        self.upstream = subprocess.Popen(
            [*_cpu(0 if self.pin else None), PY, str(ROOT / "bench" / "fake_upstream.py"), str(self.upstream_port)],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        out = subprocess.run(
            [PY, str(ROOT / "bench" / "prepare.py")], env=self.env, check=True, capture_output=True, text=True
        )
        self.key = out.stdout.strip().splitlines()[-1]
        if self.policies:
            policies = [PY, str(ROOT / "bench" / "policies.py"), self.key]
            subprocess.run(policies, env=self.env, check=True, capture_output=True, text=True)
        self.start_gateway()
        return self

    def start_gateway(self) -> None:
        log = open(Path(self.tmpdir) / "gateway.log", "w")  # noqa: SIM115
        # The production command line (gateway_project.serve: uvicorn with the gateway's HTTP protocol, proxy headers
        # off unless configured), as bench/run.sh and bench/report.py start it.
        args = [PY, "-m", "gateway_project.serve", "gateway_project.asgi:application"]
        args += ["--host", "127.0.0.1", "--port", str(self.port)]
        args += ["--loop", "uvloop", "--http", "httptools", "--lifespan", "on", "--no-access-log"]
        args += ["--log-level", "warning", "--no-server-header", *self.uvicorn_args]
        self.gateway = subprocess.Popen(
            [*_cpu(1 if self.pin else None), *args], env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        wait_http(self.url, self.gateway)

    def __exit__(self, *exc) -> None:
        for proc in (self.gateway, self.upstream):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for db in Path(self.tmpdir).glob("gateway.sqlite3*"):  # the logs stay, for a look after a failed run
            db.unlink()

    def gateway_log(self) -> str:
        return (Path(self.tmpdir) / "gateway.log").read_text()

    def generation_count(self) -> int:
        """Completed streamed Generation rows."""
        return self.generation_stats().get("completed", 0)

    def generation_stats(self) -> dict[str, int]:
        """Streamed Generation rows by status."""
        code = (
            "import os, json, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'gateway_project.settings');"
            "django.setup(); from django.db.models import Count; from inference.models import Generation;"
            "rows = Generation.objects.filter(streamed=True).values('status').annotate(n=Count('id'));"
            "print(json.dumps({r['status']: r['n'] for r in rows}))"
        )
        out = subprocess.run([PY, "-c", code], env=self.env, cwd=ROOT, check=True, capture_output=True, text=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before serving {url}")
        try:
            with socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 1e6


def open_fds(pid: int) -> tuple[int, int]:
    """(open file descriptors, open TCP sockets) of a process."""
    proc = psutil.Process(pid)
    return proc.num_fds(), len(proc.net_connections(kind="tcp"))


def client_session(limit: int = 0) -> aiohttp.ClientSession:
    """The load client; idle connections are dropped after 2 s, before uvicorn's 5 s keep-alive timeout closes
    them (otherwise a request sent on a connection the server is closing fails with "Server disconnected")."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=limit, keepalive_timeout=2), timeout=aiohttp.ClientTimeout(total=None)
    )


@dataclass
class StreamResult:
    status: int = 0
    completed: bool = False  # the stream ended with response.completed
    events: int = 0
    error: str = ""


async def stream_one(
    session: aiohttp.ClientSession,
    url: str,
    key: str,
    started: asyncio.Event | None = None,
    counter: list[int] | None = None,
) -> StreamResult:
    """One streamed request read to its end; `counter[0]` counts streams that received their first event."""
    result = StreamResult()
    body = b'{"model":"bench/fake","input":"Say hello","stream":true}'
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    try:
        async with session.post(url, data=body, headers=headers) as resp:
            result.status = resp.status
            first = True
            async for line in resp.content:
                if line.startswith(b"event: "):
                    result.events += 1
                    if first and counter is not None:
                        counter[0] += 1
                        first = False
                    if line.startswith(b"event: response.completed"):
                        result.completed = True
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    return result


def emit(line: str) -> None:
    print(line, flush=True)
    sys.stdout.flush()
