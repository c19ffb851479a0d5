"""Issue 18 rows 12-13, over a real uvicorn with the gateway's protocol (what `python -m gateway_project.serve`
and `make run` serve): a request head over GATEWAY_MAX_HEADER_BYTES is 431 and the connection closed before
the rest is buffered; a request that trickles in is 408 after GATEWAY_REQUEST_READ_TIMEOUT_SECONDS, on both
planes; ordinary requests are unaffected."""

from __future__ import annotations

import socket
import threading
import time

import orjson
import pytest

from gateway_project.server_protocol import GatewayHttpProtocol
from tests.conftest import free_port
from tests.inference.conftest import wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def protected_server(django_db_setup, django_db_blocker):
    import uvicorn

    from gateway_project.asgi import application

    port = free_port()
    config = uvicorn.Config(
        application, host="127.0.0.1", port=port, lifespan="off", log_level="warning", http=GatewayHttpProtocol
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


def test_a_huge_header_is_431_and_the_connection_closed(protected_server):
    with socket.create_connection(("127.0.0.1", protected_server)) as sock:
        sock.sendall(b"POST /api/v1/responses HTTP/1.1\r\nhost: x\r\nx-big: ")
        sent = 0
        try:
            while sent < 100 * 1024 * 1024:  # the server stops reading long before 100 MB
                sock.sendall(b"a" * 65536)
                sent += 65536
        except OSError:
            pass
        status, body, _ = read_response(sock)
    assert status == 431 and body["error"]["code"] == 431
    assert sent < 16 * 1024 * 1024, sent


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
