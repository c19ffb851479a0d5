"""SIGTERM to a gateway process: it leaves the balancer's rotation, keeps serving, finishes its stream, exits 0.

The production command line (`python -m gateway_project.serve ... --lifespan on`) in a subprocess on the test
database, GATEWAY_DRAIN_SECONDS=2. A stream is open when SIGTERM arrives: `/health/ready` answers 503 at once
(`/health/live` still 200), a new request during the drain is served (with `Connection: close`), a connection
after the drain is refused, the stream ends with `response.completed`, the process exits 0, and both answers
have their Generation row. Runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import signal
import tempfile
import threading
import time

import httpx
import pytest

from inference.models import Generation
from tests.conftest import free_port
from tests.deploy.processes import process_env, start_gateway
from tests.inference.conftest import add_endpoint

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

KEY_ENV = "FAKE_UPSTREAM_DRAIN_KEY"
DRAIN_SECONDS = 2.0


@pytest.fixture
def catalog(fake_upstream):
    from inference.routing import clear_caches

    clear_caches()
    add_endpoint("echo/echo-1", "echo")
    add_endpoint(
        "drain/slow",
        "drain-upstream",
        api_format="openai-chat",
        base_url=fake_upstream.base_url,
        api_key_env=KEY_ENV,
        upstream_model="slow-stream-700",  # 5 pieces 0.7 s apart: the stream outlasts the drain
    )


class StreamReader(threading.Thread):
    def __init__(self, url: str, key: str) -> None:
        super().__init__(daemon=True)
        self.url, self.key = url, key
        self.first_event = threading.Event()
        self.events: list[str] = []
        self.error = ""

    def run(self) -> None:
        body = {"model": "drain/slow", "input": "hello", "stream": True}
        headers = {"Authorization": f"Bearer {self.key}"}
        try:
            with httpx.stream("POST", f"{self.url}/api/v1/responses", json=body, headers=headers, timeout=30) as r:
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        self.events.append(line[7:])
                        self.first_event.set()
        except httpx.HTTPError as exc:
            self.error = repr(exc)


def test_sigterm_drains_then_finishes_the_stream_and_exits_0(org, catalog):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = process_env(GATEWAY_DRAIN_SECONDS=str(DRAIN_SECONDS), **{KEY_ENV: "sk-fake"})
    with tempfile.TemporaryFile() as log:
        process = start_gateway(port, env, log)
        try:
            assert httpx.get(f"{url}/health/ready", timeout=10).status_code == 200
            stream = StreamReader(url, org.inference_key)
            stream.start()
            assert stream.first_event.wait(20), stream.error

            process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            ready = httpx.get(f"{url}/health/ready", timeout=10)
            left_rotation_after = time.monotonic() - signalled
            live = httpx.get(f"{url}/health/live", timeout=10)
            headers = {"Authorization": f"Bearer {org.inference_key}"}
            body = {"model": "echo/echo-1", "input": "during the drain"}
            during = httpx.post(f"{url}/api/v1/responses", json=body, headers=headers, timeout=10)
            served_within_drain = time.monotonic() - signalled < DRAIN_SECONDS

            time.sleep(max(DRAIN_SECONDS + 0.5 - (time.monotonic() - signalled), 0))
            with pytest.raises(httpx.ConnectError):  # the listening socket is closed after the drain
                httpx.get(f"{url}/health/live", timeout=5)
            stream.join(30)
            exit_code = process.wait(30)
            stopped_after = time.monotonic() - signalled
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            log.seek(0)
            output = log.read().decode(errors="replace")
    print(output[-3000:])  # shown when the test fails
    assert ready.status_code == 503, ready.text
    assert ready.json()["error"]["metadata"]["checks"] == {"shutdown": "draining"}
    assert left_rotation_after < 0.5
    assert live.status_code == 200
    assert during.status_code == 200 and served_within_drain, during.text
    assert during.headers["connection"] == "close"
    assert stream.error == "" and stream.events[-1] == "response.completed", (stream.error, stream.events[-3:])
    assert exit_code == 0
    assert DRAIN_SECONDS <= stopped_after < DRAIN_SECONDS + 10
    rows = list(Generation.objects.order_by("created_at"))
    assert [(row.model, row.streamed, row.status) for row in rows] == [
        ("drain/slow", True, "completed"),
        ("echo/echo-1", False, "completed"),
    ]
