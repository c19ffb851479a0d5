"""The `response-healing` plugin end to end: the model's broken JSON reaches the client repaired, the repair is
reported in service_metadata and on the Generation, unrepairable output is a 502, and the refusals are 400s."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tests.inference.conftest import generations
from tests.servertools.conftest import MODEL, text

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
JSON_SCHEMA = {"format": {"type": "json_schema", "name": "person", "schema": SCHEMA, "strict": True}}
HEAL = [{"id": "response-healing"}]


def post(agent, plugins=HEAL, text_format=JSON_SCHEMA, **extra):
    body = {"model": MODEL, "input": "Alice is 30. Return her as JSON.", "plugins": plugins, "text": text_format}
    return agent.post("/responses", json={**body, **extra}, headers={"X-Service-Metadata": "enabled"})


def stage_of(data):
    return next(s for s in data["service_metadata"]["pipeline"] if s.get("name") == "response-healing")


def test_fenced_json_with_a_trailing_comma_is_repaired(agent_sdk, agent_catalog):
    agent_catalog.script = [text("Here you go:\n```json\n", '{"name": "Alice", "age": 30,}\n```')]
    response = agent_sdk.responses.create(
        model=MODEL,
        input="Alice is 30. Return her as JSON.",
        text=JSON_SCHEMA,
        extra_body={"plugins": HEAL},
        extra_headers={"X-Service-Metadata": "enabled"},
    )
    assert json.loads(response.output_text) == {"name": "Alice", "age": 30}
    assert len(response.output) == 1 and response.output[0].content[0].text == '{"name":"Alice","age":30}'
    # the upstream was asked for the schema as the client sent it; the plugin itself never goes upstream
    [request] = agent_catalog.requests
    assert request.body["text"]["format"]["schema"] == SCHEMA and "plugins" not in request.body
    stage = stage_of({"service_metadata": response.model_extra["service_metadata"]})
    assert stage["data"] == {
        "healed": True,
        "repairs": ["unwrapped a markdown code block", "repaired the JSON syntax"],
        "schema_valid": True,
    }
    [row] = generations(1)
    assert row.status == "completed"
    assert any(s.get("name") == "response-healing" and s["data"]["healed"] for s in row.pipeline)
    assert row.cost == Decimal("0.000020")  # the model's tokens as billed (12 × 1e-6 + 4 × 2e-6): no fee


def test_json_object_with_prose_around_it_and_valid_json_unchanged(agent, agent_catalog):
    agent_catalog.script = [text('Sure! {"colors": ["red", "blue"]} Anything else?'), text('{"ok": true}')]
    response = post(agent, text_format={"format": {"type": "json_object"}})
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["output"][0]["content"][0]["text"] == '{"colors":["red","blue"]}'
    assert stage_of(data)["data"] == {"healed": True, "repairs": ["removed text around the JSON"], "schema_valid": None}
    response = post(agent, text_format={"format": {"type": "json_object"}})
    data = response.json()
    assert data["output"][0]["content"][0]["text"] == '{"ok": true}'  # valid: the model's text as it was
    assert stage_of(data)["summary"] == "output was valid JSON" and stage_of(data)["data"]["healed"] is False


def test_unrepairable_output_is_502_with_the_text_and_is_charged(agent, agent_catalog):
    agent_catalog.script = [text("I cannot help with that.")]
    response = post(agent)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["message"] == "response-healing: the model's output is not valid JSON and could not be repaired"
    assert error["metadata"] == {"error_type": "response_healing_failed", "output": "I cannot help with that."}
    assert stage_of(response.json())["summary"] == "output is not JSON and could not be repaired"
    [row] = generations(1)
    assert row.status == "failed" and row.error_code == 502
    assert row.cost > 0  # the provider billed the answer


def test_json_that_does_not_match_the_schema_is_502_naming_the_errors(agent, agent_catalog):
    agent_catalog.script = [text('{"name": "Alice", "age": "thirty"}')]
    response = post(agent)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["metadata"]["schema_errors"] == ["age: 'thirty' is not of type 'integer'"]
    assert "does not match text.format.schema: age: 'thirty' is not of type 'integer'" in error["message"]
    assert stage_of(response.json())["data"]["schema_valid"] is False


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"text_format": {"format": {"type": "text"}}}, "plugins[0]", "needs text.format of type json_object"),
        ({"text_format": None}, "plugins[0]", "needs text.format of type json_object"),
        ({"stream": True}, "plugins[0]", "cannot be combined with stream: true"),
        ({"plugins": [{"id": "response-healing", "mode": "x"}]}, "plugins[0].mode", "unknown parameter"),
    ],
)
def test_refusals_are_400_naming_the_field(agent, agent_catalog, extra, field, words):
    if "text_format" in extra and extra["text_format"] is None:
        extra = {"text_format": {}}
    response = post(agent, **extra)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["metadata"]["field"] == field and words in error["message"]
    assert agent_catalog.requests == []


def test_switched_off_plugin_leaves_the_output_alone(agent, agent_catalog):
    agent_catalog.script = [text("not json")]
    response = post(agent, plugins=[{"id": "response-healing", "enabled": False}])
    assert response.status_code == 200 and response.json()["output"][0]["content"][0]["text"] == "not json"


def test_chat_completions_response_format_is_healed(agent_catalog, gateway_server, org):
    from openai import OpenAI

    client = OpenAI(base_url=f"{gateway_server.url}/api/v1", api_key=org.inference_key, max_retries=0)
    agent_catalog.script = [text('```json\n{"name": "Alice", "age": 30}\n```')]
    completion = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Alice is 30. Return her as JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}},
        extra_body={"plugins": HEAL},
    )
    assert completion.choices[0].message.content == '{"name":"Alice","age":30}'
    [row] = generations(1)
    assert row.ingress_format == "chat-completions" and any(s.get("name") == "response-healing" for s in row.pipeline)
