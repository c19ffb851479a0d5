"""Security headers on both planes, through the real server (uvicorn, as `make run` starts it):
`X-Content-Type-Options: nosniff` on every answer and no `Server` header naming the software or version."""

from __future__ import annotations

import httpx
import pytest

from tests.inference.conftest import add_endpoint, wait_idle

pytestmark = pytest.mark.slow


@pytest.fixture
def client(gateway_server, transactional_db):
    from inference.routing import clear_caches

    add_endpoint("echo/echo-1", "echo")
    clear_caches()
    with httpx.Client(base_url=gateway_server.url, timeout=30) as http:
        yield http
    wait_idle()


def assert_headers(response: httpx.Response, where: str) -> None:
    assert response.headers.get("x-content-type-options") == "nosniff", f"{where}: {dict(response.headers)}"
    assert "server" not in response.headers, f"{where}: Server: {response.headers.get('server')}"
    assert "x-powered-by" not in response.headers, where


def test_management_plane_answers(client, org):
    auth = {"Authorization": f"Bearer {org.management_key}"}
    for method, path, headers in [
        ("GET", "/api/v1/keys", auth),
        ("GET", "/api/v1/key", auth),
        ("GET", "/api/v1/keys", {}),  # 401
        ("GET", "/api/v1/keys", {"Authorization": f"Bearer {org.inference_key}"}),  # 403
        ("GET", "/api/v1/workspaces/00000000-0000-0000-0000-000000000000", auth),  # 404
        ("GET", "/api/v1/no-such-endpoint", auth),  # 404 from the URL resolver
        ("POST", "/api/v1/workspaces", auth),  # 400
        ("GET", "/api/v1/openapi.json", {}),
        ("GET", "/admin/login/", {}),
    ]:
        response = client.request(method, path, headers=headers)
        assert response.status_code < 500, (path, response.status_code)
        assert_headers(response, f"{method} {path} ({response.status_code})")


def test_data_plane_answers(client, org):
    auth = {"Authorization": f"Bearer {org.inference_key}"}
    cases = [
        ({"model": "echo/echo-1", "input": "hi"}, auth, 200),
        ({"model": "echo/echo-1", "input": "hi", "stream": True}, auth, 200),
        ({"model": "echo/echo-1", "input": "hi"}, {}, 401),
        ({"model": "echo/echo-1", "temperature": 9}, auth, 400),
        ({"model": "nobody/nothing", "input": "hi"}, auth, 404),
    ]
    for body, headers, status in cases:
        response = client.post("/api/v1/responses", json=body, headers=headers)
        wait_idle()
        assert response.status_code == status, response.text
        assert_headers(response, f"POST /responses {body} ({status})")
    response = client.get("/api/v1/responses", headers=auth)  # 405
    assert response.status_code == 405
    assert_headers(response, "GET /responses")


def test_every_uvicorn_command_of_the_makefile_turns_the_server_header_off():
    from pathlib import Path

    lines = [
        line
        for line in Path("Makefile").read_text().splitlines()
        if ("uvicorn " in line or "gateway_project.serve" in line) and "gateway_project" in line
    ]
    assert lines
    assert all("--no-server-header" in line for line in lines), lines
