"""`Vary: Origin` on every data-plane answer that depends on the origin: once CORS is configured, every answer
(allowed origin, other origin, no origin; JSON, stream, error, preflight) carries it, so a shared cache never
serves one origin's CORS headers (or their absence) to another. Without CORS configured no answer depends on
the origin and none carries it. Through the loopback server, on the echo model."""

from __future__ import annotations

import httpx
import pytest

from tests.inference.conftest import wait_idle
from tests.inference.test_stream_hygiene import BODIES

pytestmark = pytest.mark.django_db(transaction=True)

ALLOWED = "https://app.example"
PATHS = [*BODIES, "/embeddings"]


def body(path: str, stream: bool) -> dict:
    if path == "/embeddings":
        return {"model": "echo/echo-1", "input": "hi"}
    return {**BODIES[path]("echo/echo-1"), "stream": stream}


def varies_on_origin(response: httpx.Response) -> bool:
    return "origin" in [v.strip().lower() for v in response.headers.get("vary", "").split(",")]


@pytest.fixture
def client(gateway_server, echo_catalog):
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as client:
        yield client
    wait_idle()


@pytest.mark.parametrize("origins", [[ALLOWED], ["*"]])
@pytest.mark.parametrize("path", PATHS)
def test_every_answer_varies_on_origin_once_cors_is_configured(client, org, settings, path, origins):
    settings.GATEWAY_CORS_ALLOWED_ORIGINS = origins
    key = {"Authorization": f"Bearer {org.inference_key}"}
    for origin in ({"Origin": ALLOWED}, {"Origin": "https://other.example"}, {}):
        for stream in (False, True):
            answer = client.post(path, json=body(path, stream), headers={**key, **origin})
            assert answer.status_code in (200, 400), answer.text[:200]  # /embeddings refuses a text model
            assert varies_on_origin(answer), (origin, stream, dict(answer.headers))
        refused = client.post(path, json=body(path, False), headers=origin)  # no key: 401
        assert refused.status_code == 401 and varies_on_origin(refused)
        preflight = client.options(path, headers={**origin, "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 204 and varies_on_origin(preflight)
        wrong = client.get(path, headers=origin)
        assert wrong.status_code == 405 and varies_on_origin(wrong)


@pytest.mark.parametrize("path", PATHS)
def test_no_vary_on_origin_without_cors(client, org, settings, path):
    settings.GATEWAY_CORS_ALLOWED_ORIGINS = []
    answer = client.post(path, json=body(path, False), headers={"Authorization": f"Bearer {org.inference_key}"})
    assert not varies_on_origin(answer) and "access-control-allow-origin" not in answer.headers
