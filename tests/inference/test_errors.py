"""Every failure of POST /api/v1/responses is the error envelope, with the right status and headers."""

from __future__ import annotations

import httpx
import pytest
from django.test import override_settings


def assert_envelope(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["error"]["code"] == status and isinstance(body["error"]["message"], str)
    return body


def test_missing_and_invalid_key(gateway_server, echo_catalog):
    url = f"{gateway_server.url}/api/v1/responses"
    body = assert_envelope(httpx.post(url, json={"model": "echo/echo-1", "input": "hi"}), 401)
    assert body["error"]["message"] == "Missing Authentication header"
    response = httpx.post(url, json={"model": "echo/echo-1", "input": "hi"}, headers={"Authorization": "Bearer nope"})
    assert assert_envelope(response, 401)["error"]["message"] == "Invalid API key"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_other_methods_405(http, method):
    response = http.request(method, "/responses")
    assert_envelope(response, 405)
    assert response.headers["allow"] == "POST, OPTIONS"


def test_malformed_json_400(http):
    response = http.post(
        "/responses", content=b'{"model": "echo/echo-1",', headers={"content-type": "application/json"}
    )
    assert assert_envelope(response, 400)["error"]["message"].startswith("Malformed JSON body")


def test_validation_400_names_field(http):
    body = assert_envelope(http.post("/responses", json={"model": "echo/echo-1", "previous_response_id": "r1"}), 400)
    assert body["error"]["metadata"] == {"field": "previous_response_id"}
    assert body["error"]["message"].startswith("previous_response_id: ")


def test_body_over_limit_413(http):
    with override_settings(GATEWAY_MAX_BODY_BYTES=1000):
        big = b'{"model": "echo/echo-1", "input": "' + b"x" * 2000 + b'"}'
        assert_envelope(http.post("/responses", content=big), 413)

        def chunks():  # no Content-Length: the limit applies while receiving
            yield b'{"model": "echo/echo-1", "input": "'
            for _ in range(10):
                yield b"x" * 500
            yield b'"}'

        assert_envelope(http.post("/responses", content=chunks()), 413)


def test_unknown_model_404(http):
    body = assert_envelope(http.post("/responses", json={"model": "nope/none", "input": "hi"}), 404)
    assert "nope/none" in body["error"]["message"]


def test_missing_model_400(http):
    body = assert_envelope(http.post("/responses", json={"input": "hi"}), 400)
    assert body["error"]["metadata"]["field"] == "model"
