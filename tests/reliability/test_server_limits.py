"""Issue 18 rows 12-13, over a real uvicorn serving the application as `python -m gateway_project.serve` does
(uvicorn's own protocols): a request body that trickles in is 408 after GATEWAY_REQUEST_READ_TIMEOUT_SECONDS on
both planes (gateway_project/read_deadline.py); with `--http h11`, a request head over GATEWAY_MAX_HEADER_BYTES
(serve.py's `--h11-max-incomplete-event-size`) is refused and the connection closed before the rest is buffered
(with httptools that limit is the reverse proxy's: docs/deploy.md, "Request limits"); ordinary requests are
unaffected."""

from __future__ import annotations

import socket
import threading
import time

import orjson
import pytest
from django.conf import settings

from gateway_project.serve import with_head_limit_default
from tests.conftest import free_port
from tests.inference.conftest import wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def _serve(http: str, django_db_blocker):
    import uvicorn

    from gateway_project.asgi import application

    port = free_port()
    config = uvicorn.Config(
        application,
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_level="warning",
        http=http,
        h11_max_incomplete_event_size=settings.GATEWAY_MAX_HEADER_BYTES,
    )
    server = uvicorn.Server(config)
    with django_db_blocker.unblock():
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        yield port
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def protected_server(django_db_setup, django_db_blocker):
    yield from _serve("httptools", django_db_blocker)


@pytest.fixture(scope="module")
def h11_server(django_db_setup, django_db_blocker):
    yield from _serve("h11", django_db_blocker)


def read_response(sock: socket.socket, timeout: float = 10) -> tuple[int, dict, float]:
    sock.settimeout(timeout)
    started = time.monotonic()
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    length = int(
        next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    )
    while len(body) < length:
        body += sock.recv(65536)
    return status, orjson.loads(body), time.monotonic() - started


def test_with_h11_a_huge_header_is_refused_and_the_connection_closed(h11_server):
    with socket.create_connection(("127.0.0.1", h11_server)) as sock:
        sock.sendall(b"POST /api/v1/responses HTTP/1.1\r\nhost: x\r\nx-big: ")
        sent = 0
        try:
            while sent < 100 * 1024 * 1024:  # the server stops reading long before 100 MB
                sock.sendall(b"a" * 65536)
                sent += 65536
        except OSError:
            pass
        sock.settimeout(10)
        try:
            head = sock.recv(65536)
        except ConnectionResetError:  # the refusal may be lost when the server closes with unread bytes
            head = b""
    assert head == b"" or head.startswith(b"HTTP/1.1 400 "), head
    assert sent < 16 * 1024 * 1024, sent


def test_serve_sets_the_head_limit_unless_given():
    assert with_head_limit_default(["app"], 65536) == ["app", "--h11-max-incomplete-event-size", "65536"]
    given = ["app", "--h11-max-incomplete-event-size=1024"]
    assert with_head_limit_default(given, 65536) == given


@pytest.mark.parametrize("path", ["/api/v1/responses", "/api/v1/workspaces"])
def test_a_trickling_body_is_408(protected_server, settings, org, path):
    settings.GATEWAY_REQUEST_READ_TIMEOUT_SECONDS = 1
    with socket.create_connection(("127.0.0.1", protected_server)) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {org.management_key}\r\n"
            "content-type: application/json\r\ncontent-length: 100\r\n\r\n{".encode()
        )
        status, body, waited = read_response(sock)
    assert status == 408 and body["error"]["code"] == 408
    assert waited < 3


def test_ordinary_requests_are_served(protected_server, org, echo_catalog):
    import httpx

    base = f"http://127.0.0.1:{protected_server}/api/v1"
    headers = {"Authorization": f"Bearer {org.inference_key}"}
    response = httpx.post(f"{base}/responses", json={"model": "echo/echo-1", "input": "hi"}, headers=headers)
    assert response.status_code == 200, response.text
    mgmt = httpx.get(f"{base}/workspaces", headers={"Authorization": f"Bearer {org.management_key}"})
    assert mgmt.status_code == 200
    wait_idle()  # the Generation row is written after the answer: not while the teardown empties the tables
