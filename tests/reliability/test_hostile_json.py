"""Issue 18 rows 1-2: JSON nested too deeply and NUL characters are refused at parse time, on both planes,
with a 400 naming the field, so nothing reaches a write the database (or the JSON encoder) refuses. Over the
real loopback server; the data plane's rows are checked in the database."""

from __future__ import annotations

import httpx
import orjson
import pytest

from gateway_project.json_input import MAX_JSON_DEPTH
from tests.inference.conftest import generations

pytestmark = pytest.mark.django_db(transaction=True)


def nested(depth: int, leaf=1):
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


class Deep:
    """A placeholder for an object nested `depth` levels, written as bytes (encoders stop before 1000)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth


def encode(body: dict) -> bytes:
    """`body` as JSON, each `Deep` value written out as `{"a": {"a": ... 1}}`."""
    deep: list[Deep] = []

    def default(value):
        deep.append(value)
        return f"__deep_{len(deep) - 1}__"

    raw = orjson.dumps(body, default=default)
    for index, value in enumerate(deep):
        raw = raw.replace(f'"__deep_{index}__"'.encode(), b'{"a":' * value.depth + b"1" + b"}" * value.depth)
    return raw


def assert_400(response: httpx.Response, field: str, words: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == 400 and error["metadata"]["field"] == field, error
    assert words in error["message"] and error["message"].startswith(field), error


NUL_BODIES = [
    ({"metadata": {"k\u0000": "v"}}, "metadata.k\\u0000", "NUL"),
    ({"metadata": {"k": "v\u0000"}}, "metadata.k", "NUL"),
    ({"trace": {"trace_id": "t\u0000"}}, "trace.trace_id", "NUL"),
    ({"trace": {"tags": ["x", {"a\u0000b": 1}]}}, "trace.tags[1].a\\u0000b", "NUL"),
    ({"session_id": "s\u0000"}, "session_id", "NUL"),
    ({"input": [{"role": "user", "content": "hi\u0000"}]}, "input[0].content", "NUL"),
    ({"trace": Deep(300)}, "trace" + ".a" * (MAX_JSON_DEPTH - 1), "nested too deeply"),
    (
        {"text": {"format": {"type": "json_schema", "name": "x", "schema": Deep(1000)}}},
        "text.format.schema" + ".a" * (MAX_JSON_DEPTH - 3),
        "nested too deeply",
    ),
]


@pytest.mark.parametrize(("extra", "field", "words"), NUL_BODIES)
def test_data_plane_refuses_nul_and_depth_naming_the_field(http, extra, field, words):
    body = {"model": "echo/echo-1", "input": "hi", **extra}
    assert_400(http.post("/responses", content=encode(body)), field, words)


def test_deep_tool_parameters_are_refused(http):
    tool = {"type": "function", "name": "f", "parameters": Deep(512)}
    response = http.post("/responses", content=encode({"model": "echo/echo-1", "input": "hi", "tools": [tool]}))
    field = response.json()["error"]["metadata"]["field"]
    assert response.status_code == 400 and field.startswith("tools[0].parameters.a.a"), field


def test_deeper_than_the_decoder_is_malformed_json(http):
    response = http.post("/responses", content=b'{"trace":' + b"[" * 2000 + b"]" * 2000 + b"}")
    assert response.status_code == 400 and "Malformed JSON" in response.json()["error"]["message"]


def test_a_deep_but_allowed_trace_is_answered_and_recorded(http):
    trace = nested(MAX_JSON_DEPTH - 1, "leaf")
    response = http.post("/responses", json={"model": "echo/echo-1", "input": "hi", "trace": trace})
    assert response.status_code == 200, response.text
    [row] = generations(1)
    assert str(row.id) == response.headers["x-request-id"] and row.trace == trace


def test_a_refused_row_is_written_again_without_its_free_form_fields(http, monkeypatch):
    """A value the database or encoder refuses that validation missed still leaves the row with its usage."""
    from inference import schema

    monkeypatch.setattr(schema, "needs_scan", lambda raw: False)  # a validation gap, as main had
    body = {"model": "echo/echo-1", "input": "hi", "trace": Deep(300), "metadata": {"m": "v"}}
    response = http.post("/responses", content=encode(body))
    assert response.status_code == 200, response.text
    [row] = generations(1)
    assert str(row.id) == response.headers["x-request-id"] and row.output_tokens > 0
    from django.db import connection

    if connection.vendor == "postgresql":  # orjson stops at 254 levels: the row is kept without trace
        assert row.trace == {} and row.metadata == {}


@pytest.fixture
def mgmt(gateway_server, org):
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1",
        headers={"Authorization": f"Bearer {org.management_key}", "Content-Type": "application/json"},
        timeout=30,
    ) as client:
        yield client


DEEP = b'{"name": "w", "x": ' + b"[" * 1000 + b"]" * 1000 + b"}"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/workspaces"),
        ("POST", "/guardrails"),
        ("POST", "/scim/group-mappings"),
        ("POST", "/presets/x/responses"),
        ("PATCH", "/keys/{hash}"),
    ],
)
def test_management_plane_refuses_deep_bodies(mgmt, org, method, path):
    response = mgmt.request(method, path.format(hash=org.inference_hash), content=DEEP)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["metadata"]["field"] == "x" + "[0]" * (MAX_JSON_DEPTH - 1)


def test_management_plane_refuses_nul_in_bodies(mgmt):
    response = mgmt.post("/workspaces", content=orjson.dumps({"name": "w\u0000", "slug": "w"}))
    assert_400(response, "name", "NUL")


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/workspaces/%00", "path"),
        ("/keys/ab%00cd", "path"),
        ("/keys?workspace=%00", "workspace"),
        ("/workspaces?x%00=1", "query"),
    ],
)
def test_management_plane_refuses_nul_in_the_url(mgmt, path, field):
    response = mgmt.get(path)
    assert_400(response, field, "NUL")


def test_scim_refuses_deep_bodies(gateway_server, org):
    response = httpx.post(
        f"{gateway_server.url}/api/v1/scim/v2/Users",
        content=DEEP,
        headers={"Authorization": f"Bearer {org.management_key}", "Content-Type": "application/scim+json"},
    )
    assert response.status_code == 400 and response.json()["scimType"] == "invalidSyntax", response.text
