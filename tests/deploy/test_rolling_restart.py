"""Three replicas behind HAProxy under traffic: each restarted in turn without a failed request, then one killed.

The production command line (`python -m gateway_project.serve ... --lifespan on`, GATEWAY_DRAIN_SECONDS=2) three
times on one PostgreSQL and Redis, behind HAProxy running deploy/haproxy/haproxy.cfg itself (health checks on
`/health/ready` every 500 ms). 16 clients (8 streaming, 8 not, each on its own keep-alive connection to HAProxy)
send requests for the whole run, on priced models under a workspace budget (every request holds and settles).

1. Rolling restart: each replica in turn gets SIGTERM, leaves HAProxy's rotation (measured), exits 0 and is
   started again; the next one goes once it is back UP. Then: 0 failed requests, 0 cut streams, every answer has
   its Generation row (by its x-request-id), no budget hold left.
2. SIGKILL of one replica under the same traffic: HAProxy marks it DOWN within its check interval (its first
   refused connection, or 2 failed checks 500 ms apart) and retries the requests it could not connect for on
   another replica. The only failures allowed are requests that the killed replica had already received (cut
   mid-flight: not retried, they may have been billed upstream); every request started after the kill succeeds.

Skipped without PostgreSQL and Redis; without haproxy skipped, or failed when GATEWAY_REQUIRE_HAPROXY is set.
About 40 s; everything on loopback.
"""

from __future__ import annotations

import asyncio
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection

from budgets.models import SpendReservation
from inference.models import Generation
from tests.budgets.test_concurrency import wait_for_port
from tests.conftest import free_port
from tests.deploy.haproxy import HAProxy, haproxy_binary
from tests.deploy.processes import process_env, spawn_gateway, start_gateway
from tests.inference.conftest import add_endpoint

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),  # about 60 s; a busy machine starts the replicas slower
]

KEY_ENV = "FAKE_UPSTREAM_ROLLING_KEY"
STREAMED = "rolling/streamed"
PLAIN = "rolling/plain"
CLIENTS = 16
DRAIN_SECONDS = 2.0


@dataclass
class Answer:
    streamed: bool
    started: float
    ended: float = 0.0
    status: int = 0
    completed: bool = False
    error: str = ""
    replica: str = ""
    request_id: str = ""

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.completed and not self.error


class Traffic:
    """CLIENTS clients in a thread of their own, each sending one request after another until stopped."""

    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url, key
        self.answers: list[Answer] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def __enter__(self) -> Traffic:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.thread.join(60)
        assert not self.thread.is_alive(), "the clients did not stop"

    async def _run(self) -> None:
        await asyncio.gather(*(self._client(index % 2 == 0) for index in range(CLIENTS)))

    async def _client(self, streamed: bool) -> None:
        headers = {"Authorization": f"Bearer {self.key}"}
        body = {"model": STREAMED if streamed else PLAIN, "input": "hello", "max_output_tokens": 7, "stream": streamed}
        async with httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30) as client:
            while not self.stopping.is_set():
                answer = Answer(streamed, time.monotonic())
                self.answers.append(answer)
                try:
                    async with client.stream("POST", "/api/v1/responses", json=body) as response:
                        answer.status = response.status_code
                        answer.replica = response.headers.get("x-gateway-replica", "")
                        answer.request_id = response.headers.get("x-request-id", "")
                        if streamed:
                            async for line in response.aiter_lines():
                                answer.completed = answer.completed or line == "event: response.completed"
                        else:
                            answer.completed = (await response.aread()).startswith(b"{")
                except httpx.HTTPError as exc:
                    answer.error = f"{type(exc).__name__}: {exc}"
                answer.ended = time.monotonic()
                await asyncio.sleep(0.05)


class Replicas:
    def __init__(self, env: dict[str, str], log) -> None:
        self.env, self.log = env, log
        self.ports = [free_port() for _ in range(3)]
        self.processes = [spawn_gateway(port, env, log) for port in self.ports]  # started together
        for port, process in zip(self.ports, self.processes, strict=True):
            wait_for_port(port, process, timeout=120)

    def restart(self, index: int) -> None:
        self.processes[index] = start_gateway(self.ports[index], self.env, self.log)

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture
def catalog(fake_upstream):
    from inference.routing import clear_caches

    clear_caches()
    priced = {"base_url": fake_upstream.base_url, "api_key_env": KEY_ENV, "prompt_price": "0"}
    add_endpoint(
        STREAMED, "rolling", api_format="openai-chat", upstream_model="slow-stream-100", completion_price="0.001",
        **priced,
    )  # fmt: skip
    add_endpoint(
        PLAIN, "rolling", api_format="openai-responses", upstream_model="slow-first-byte-30",
        completion_price="0.001", **priced,
    )  # fmt: skip


def failures(answers: list[Answer]) -> list[Answer]:
    return [answer for answer in answers if not answer.ok]


def wait_for_accounting(answers: list[Answer], timeout: float = 30.0) -> tuple[set[str], int]:
    """(request ids of answers without their Generation row, holds left) once both are settled or time is up."""
    wanted = {answer.request_id for answer in answers if answer.ok}
    deadline = time.monotonic() + timeout
    while True:
        missing = wanted - {str(pk) for pk in Generation.objects.values_list("id", flat=True)}
        holds = SpendReservation.objects.count()
        if (not missing and not holds) or time.monotonic() > deadline:
            return missing, holds
        time.sleep(0.2)


def test_rolling_restart_then_a_killed_replica_behind_haproxy(org, catalog, capsys):
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        pytest.skip("needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL): the replicas share them")
    haproxy_binary()
    began = time.monotonic()
    env = process_env(GATEWAY_DRAIN_SECONDS=f"{DRAIN_SECONDS:g}", **{KEY_ENV: "sk-fake"})
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryFile() as log:
        replicas = Replicas(env, log)
        balancer = HAProxy(Path(folder), free_port(), [f"127.0.0.1:{port}" for port in replicas.ports], log)
        try:
            for name in ("gw1", "gw2", "gw3"):
                balancer.wait_status(name, "UP")
            budget = httpx.put(
                f"{balancer.url}/api/v1/workspaces/{org.workspace.id}/budgets/daily",
                headers={"Authorization": f"Bearer {org.management_key}"}, json={"limit_usd": 1000}, timeout=30,
            )  # fmt: skip
            assert budget.status_code == 200, budget.text

            # 1. Rolling restart under traffic.
            left_rotation, exit_codes, stopped_after, back_up = [], [], [], []
            with Traffic(balancer.url, org.inference_key) as rolling:
                time.sleep(1.0)
                for index, name in enumerate(("gw1", "gw2", "gw3")):
                    process = replicas.processes[index]
                    process.send_signal(signal.SIGTERM)
                    signalled = time.monotonic()
                    left_rotation.append(balancer.wait_status(name, "DOWN"))
                    exit_codes.append(process.wait(30))
                    stopped_after.append(time.monotonic() - signalled)
                    replicas.restart(index)
                    back_up.append(balancer.wait_status(name, "UP") + time.monotonic() - signalled - stopped_after[-1])
                time.sleep(0.5)
            missing, holds = wait_for_accounting(rolling.answers)
            figures.update(
                requests=len(rolling.answers),
                streams=sum(a.streamed for a in rolling.answers),
                left_rotation_s=[round(s, 2) for s in left_rotation],
                stopped_after_s=[round(s, 2) for s in stopped_after],
                started_again_s=[round(s, 2) for s in back_up],
                replicas_served={r: sum(a.replica == r for a in rolling.answers) for r in ("gw1", "gw2", "gw3")},
            )

            # 2. SIGKILL of one replica under traffic.
            with Traffic(balancer.url, org.inference_key) as killing:
                deadline = time.monotonic() + 5
                while int(balancer.servers()["gw2"]["scur"]) < 2 and time.monotonic() < deadline:
                    time.sleep(0.01)  # killed while it has requests in flight
                before = balancer.servers()["gw2"]
                replicas.processes[1].send_signal(signal.SIGKILL)
                killed_at = time.monotonic()
                marked_down_after = balancer.wait_status("gw2", "DOWN", timeout=5)
                time.sleep(2.0)
            after = balancer.servers()["gw2"]
            figures.update(
                kill_requests=len(killing.answers),
                kill_open_on_victim=int(before["scur"]),
                kill_marked_down_s=round(marked_down_after, 2),
                kill_redispatched=int(after["wredis"]) - int(before["wredis"]),
                kill_failed=[(a.replica, a.streamed, a.error or a.status) for a in failures(killing.answers)],
            )
        finally:
            balancer.stop()
            replicas.stop_all()
            log.seek(0)
            output = log.read().decode(errors="replace")
    figures["wall_s"] = round(time.monotonic() - began, 1)
    with capsys.disabled():
        print(f"\nrolling restart behind HAProxy: {figures}")
    if failures(rolling.answers) or missing or holds:
        print(output[-5000:])

    assert len(rolling.answers) > 200 and figures["streams"] > 30, figures
    assert failures(rolling.answers) == [], failures(rolling.answers)[:5]
    assert exit_codes == [0, 0, 0]
    assert all(seconds < DRAIN_SECONDS for seconds in left_rotation), left_rotation  # out before it stops accepting
    assert missing == set(), f"{len(missing)} answers without their Generation row"
    assert holds == 0
    assert all(count > 0 for count in figures["replicas_served"].values())

    assert marked_down_after < 1.5
    late = [a for a in failures(killing.answers) if a.started > killed_at]
    assert late == [], late[:5]  # a request sent after the kill is never lost
    assert all(a.replica in ("gw2", "") for a in failures(killing.answers)), figures["kill_failed"]
