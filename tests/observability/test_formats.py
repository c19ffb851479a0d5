"""Wire formats: OTLP/JSON parsed with opentelemetry-proto, Langfuse against its ingestion schema, the webhook
signature, and the endpoint and auth of every delivering type."""

from __future__ import annotations

import base64
import json

import jsonschema
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from observability.delivery import delivery_payload
from observability.models import OutboxEntry
from observability.senders import DELIVERING_TYPES, UNSUPPORTED_TYPES, DeliveryNotSupported, build_request
from observability.senders.webhook import SIGNATURE_HEADER, verify
from tests.observability.conftest import record_generation
from tests.observability.langfuse_schema import INGESTION_REQUEST
from tests.observability.test_outbox import destination

pytestmark = pytest.mark.django_db

TRACE_BODY = {
    "model": "openai/gpt-4o-mini",
    "instructions": "Be brief",
    "input": [{"role": "user", "content": "Say hello"}],
    "temperature": 0.3,
    "max_output_tokens": 64,
    "session_id": "sess-9",
    "trace": {"trace_name": "checkout", "span_name": "answer", "generation_name": "reply", "team": "payments"},
}


def queued(generation, dest) -> OutboxEntry:
    """The outbox row, with `payload` set to what the worker builds for it from the stored trace."""
    row = OutboxEntry.objects.select_related("destination").get(generation_id=generation.id, destination_id=dest["id"])
    row.payload = delivery_payload(row)
    return row


def payload_for(api, org, body=None, **dest_fields):
    dest = destination(api, **dest_fields)
    generation = record_generation(org, body=body or TRACE_BODY)
    return queued(generation, dest), generation


def parse_otlp(body: bytes) -> ExportTraceServiceRequest:
    """OTLP/JSON encodes ids as hex; protobuf's JSON mapping expects base64 for bytes: convert, then parse."""
    data = json.loads(body)
    for resource_spans in data["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.Parse(json.dumps(data), ExportTraceServiceRequest())


def attrs(span) -> dict:
    out = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        value = getattr(kv.value, kind)
        out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in value.values] if kind == "array_value" else value
    return out


def test_otlp_payload_parses_as_export_trace_service_request(api, org):
    row, generation = payload_for(
        api, org, type="otel-collector", config={"endpoint": "http://collector:4318"}, broadcast_generation_cost=True
    )
    request = build_request("otel-collector", row.payload, {"endpoint": "http://collector:4318"}, str(row.id))
    assert request.url == "http://collector:4318/v1/traces"
    assert request.headers["Content-Type"] == "application/json"
    message = parse_otlp(request.body)
    resource_spans = message.resource_spans[0]
    assert {kv.key: kv.value.string_value for kv in resource_spans.resource.attributes} == {
        "service.name": "model-gateway"
    }
    wrapper, span = resource_spans.scope_spans[0].spans
    assert wrapper.name == "answer" and span.name == "reply"
    assert len(span.trace_id) == 16 and len(span.span_id) == 8 and span.trace_id == wrapper.trace_id
    assert span.parent_span_id == wrapper.span_id and not wrapper.parent_span_id
    assert span.kind == Span.SPAN_KIND_CLIENT and span.status.code == Status.STATUS_CODE_OK
    assert span.end_time_unix_nano - span.start_time_unix_nano == 0 or span.end_time_unix_nano > 0
    values = attrs(span)
    assert values["gen_ai.operation.name"] == "chat"
    assert values["gen_ai.provider.name"] == "openai"
    assert values["gen_ai.request.model"] == "openai/gpt-4o-mini"
    assert values["gen_ai.response.model"] == "openai/gpt-4o-mini"
    assert values["gen_ai.usage.input_tokens"] == 12 and values["gen_ai.usage.output_tokens"] == 5
    assert values["gen_ai.response.finish_reasons"] == ["stop"]
    assert values["gen_ai.request.temperature"] == 0.3 and values["gen_ai.request.max_tokens"] == 64
    assert values["gen_ai.conversation.id"] == "sess-9"
    assert json.loads(values["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Say hello"}]}
    ]
    assert json.loads(values["gen_ai.output.messages"])[0]["parts"][0]["content"] == "Hello from the model"
    assert json.loads(values["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief"}]
    assert values["gateway.metadata.team"] == "payments" and values["gateway.trace.name"] == "checkout"
    assert values["gateway.cost.total_usd"] == pytest.approx(0.0000048)
    assert values["gateway.generation.id"] == str(generation.id)
    assert [e.name for e in span.events] == ["gen_ai.first_token"]


def test_otlp_trace_and_parent_ids_from_the_request(api, org):
    body = {
        "model": "m",
        "input": "x",
        "trace": {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "parent_span_id": "00f067aa0ba902b7"},
    }
    row, _ = payload_for(
        api, org, body=body, type="otel-collector", config={"endpoint": "http://c:4318"}, privacy_mode=True
    )
    span = parse_otlp(build_request("otel-collector", row.payload, {"endpoint": "http://c:4318"}, str(row.id)).body)
    span = span.resource_spans[0].scope_spans[0].spans[0]
    assert span.trace_id.hex() == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert span.parent_span_id.hex() == "00f067aa0ba902b7"
    assert "gen_ai.input.messages" not in attrs(span) and "gen_ai.output.messages" not in attrs(span)


def test_failed_generation_is_an_error_span(api, org):
    dest = destination(api, type="otel-collector", config={"endpoint": "http://c:4318"})
    generation = record_generation(org, status="failed", error_code=502, error_message="Provider returned error")
    row = queued(generation, dest)
    span = parse_otlp(build_request("otel-collector", row.payload, {"endpoint": "http://c:4318"}, "x").body)
    span = span.resource_spans[0].scope_spans[0].spans[0]
    assert span.status.code == Status.STATUS_CODE_ERROR and span.status.message == "Provider returned error"


LANGFUSE = {"publicKey": "pk-lf-public", "secretKey": "sk-lf-secret-value", "baseUrl": "https://lf.example.com"}


def test_langfuse_batch_matches_the_ingestion_schema(api, org):
    row, generation = payload_for(
        api, org, type="langfuse", config=LANGFUSE, broadcast_generation_cost=True, broadcast_generation_identity=True
    )
    request = build_request("langfuse", row.payload, LANGFUSE, str(row.id))
    assert request.url == "https://lf.example.com/api/public/ingestion"
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"pk-lf-public:sk-lf-secret-value").decode()
    batch = json.loads(request.body)
    jsonschema.validate(batch, INGESTION_REQUEST)
    trace, span, gen = batch["batch"]
    assert [trace["type"], span["type"], gen["type"]] == ["trace-create", "span-create", "generation-create"]
    assert trace["body"]["name"] == "checkout" and trace["body"]["sessionId"] == "sess-9"
    assert trace["body"]["userId"] == str(org.admin.id)
    assert span["body"]["name"] == "answer" and gen["body"]["parentObservationId"] == span["body"]["id"]
    body = gen["body"]
    assert body["id"] == str(generation.id) and body["traceId"] == trace["body"]["id"] == span["body"]["traceId"]
    assert body["name"] == "reply" and body["model"] == "openai/gpt-4o-mini"
    assert body["usageDetails"] == {"input": 12, "output": 5, "total": 17}
    assert body["costDetails"] == {"total": pytest.approx(0.0000048)}
    assert body["input"] == [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Say hello"}]
    assert body["output"] == {"role": "assistant", "content": "Hello from the model"}
    assert body["modelParameters"] == {"temperature": 0.3, "max_output_tokens": 64}
    assert body["metadata"]["team"] == "payments"
    again = json.loads(build_request("langfuse", row.payload, LANGFUSE, str(row.id)).body)
    assert [e["id"] for e in again["batch"]] == [e["id"] for e in batch["batch"]]  # idempotent event ids


def test_langfuse_without_span_and_in_privacy_mode(api, org):
    row, _ = payload_for(
        api,
        org,
        body={"model": "m", "input": "secret words"},
        type="langfuse",
        config={"publicKey": "pk", "secretKey": "sk"},
        privacy_mode=True,
    )
    request = build_request("langfuse", row.payload, {"publicKey": "pk", "secretKey": "sk"}, str(row.id))
    assert request.url == "https://cloud.langfuse.com/api/public/ingestion"
    batch = json.loads(request.body)
    jsonschema.validate(batch, INGESTION_REQUEST)
    assert [e["type"] for e in batch["batch"]] == ["trace-create", "generation-create"]
    assert "secret words" not in request.body.decode() and "input" not in batch["batch"][1]["body"]


def test_webhook_signature_verifies_and_custom_headers_are_sent(api, org):
    config = {
        "url": "https://hooks.example.com/in",
        "method": "PUT",
        "secret": "whsec-123456789",
        "headers": {"X-Team": "ai"},
    }
    row, generation = payload_for(api, org, config=config)
    request = build_request("webhook", row.payload, config, str(row.id))
    assert request.method == "PUT" and request.headers["X-Team"] == "ai"
    assert request.headers["X-Gateway-Delivery"] == str(row.id)
    assert verify("whsec-123456789", request.headers[SIGNATURE_HEADER], request.body)
    assert not verify("wrong-secret", request.headers[SIGNATURE_HEADER], request.body)
    assert not verify("whsec-123456789", request.headers[SIGNATURE_HEADER], request.body + b" ")
    body = json.loads(request.body)
    assert body["type"] == "generation" and body["trace"]["id"] == str(generation.id)
    unsigned = build_request("webhook", row.payload, {"url": "https://h.example.com"}, str(row.id))
    assert SIGNATURE_HEADER not in unsigned.headers and unsigned.method == "POST"


OTHER_TYPES = {
    "sentry": (
        {
            "dsn": "https://pubkey1@o1.ingest.sentry.io/42",
            "otlpEndpoint": "https://o1.ingest.sentry.io/api/42/integration/otlp",
        },
        "https://o1.ingest.sentry.io/api/42/integration/otlp/v1/traces",
        {"x-sentry-auth": "sentry sentry_key=pubkey1, sentry_version=7"},
    ),
    "grafana": (
        {"apiKey": "glc_key", "instanceId": "12345"},
        "https://otlp-gateway-prod-us-east-0.grafana.net/otlp/v1/traces",
        {"Authorization": "Basic " + base64.b64encode(b"12345:glc_key").decode()},
    ),
    "newrelic": (
        {"licenseKey": "nr-key", "region": "eu"},
        "https://otlp.eu01.nr-data.net/v1/traces",
        {"api-key": "nr-key"},
    ),
    "arize": (
        {"apiKey": "ak", "spaceKey": "sk", "modelId": "m1"},
        "https://otlp.arize.com/v1/traces",
        {"space_id": "sk", "api_key": "ak"},
    ),
    "langsmith": (
        {"apiKey": "ls", "project": "p"},
        "https://api.smith.langchain.com/otel/v1/traces",
        {"x-api-key": "ls", "Langsmith-Project": "p"},
    ),
    "braintrust": (
        {"apiKey": "bt", "projectId": "proj"},
        "https://api.braintrust.dev/otel/v1/traces",
        {"Authorization": "Bearer bt", "x-bt-parent": "project_id:proj"},
    ),
    "opik": (
        {"apiKey": "ok", "workspace": "w", "projectName": "p"},
        "https://www.comet.com/opik/api/v1/private/otel/v1/traces",
        {"Authorization": "ok", "Comet-Workspace": "w", "projectName": "p"},
    ),
    "weave": (
        {"apiKey": "wk", "entity": "e", "project": "p"},
        "https://trace.wandb.ai/otel/v1/traces",
        {"Authorization": "Basic " + base64.b64encode(b"api:wk").decode(), "project_id": "e/p"},
    ),
    "datadog": (
        {"apiKey": "dd", "mlApp": "app"},
        "https://api.datadoghq.com/api/intake/llm-obs/v1/trace/spans",
        {"DD-API-KEY": "dd"},
    ),
    "posthog": ({"apiKey": "phc_x"}, "https://us.i.posthog.com/capture/", {}),
}


@pytest.mark.parametrize("type_", sorted(OTHER_TYPES))
def test_endpoint_and_auth_of_other_delivering_types(api, org, type_):
    config, url, headers = OTHER_TYPES[type_]
    row, _ = payload_for(api, org)
    request = build_request(type_, row.payload, config, str(row.id))
    assert request.url == url
    for name, value in headers.items():
        assert request.headers[name] == value
    body = json.loads(request.body)
    if "resourceSpans" in body:
        parse_otlp(request.body)
    elif type_ == "posthog":
        assert body["event"] == "$ai_generation" and body["api_key"] == "phc_x"
        assert body["properties"]["$ai_model"] == "openai/gpt-4o-mini" and body["properties"]["$ai_input_tokens"] == 12
    elif type_ == "datadog":
        span = body["data"]["attributes"]["spans"][0]
        assert body["data"]["attributes"]["ml_app"] == "app" and span["meta"]["kind"] == "llm"
        assert span["metrics"]["total_tokens"] == 17


def test_clickhouse_insert(api, org):
    row, generation = payload_for(api, org)
    config = {"host": "https://ch.example.com:8443", "database": "obs", "username": "u", "password": "p"}
    request = build_request("clickhouse", row.payload, config, str(row.id))
    assert request.url.startswith("https://ch.example.com:8443/?query=INSERT+INTO+%60obs%60.%60gateway_traces%60")
    assert request.headers["X-ClickHouse-User"] == "u" and request.headers["X-ClickHouse-Key"] == "p"
    line = json.loads(request.body.decode().strip())
    assert line["id"] == str(generation.id) and line["input_tokens"] == 12


def test_types_without_sender():
    assert set(DELIVERING_TYPES) | set(UNSUPPORTED_TYPES) == set(__import__("observability.types").types.TYPE_SPECS)
    for type_ in UNSUPPORTED_TYPES:
        with pytest.raises(DeliveryNotSupported, match=f"delivery not supported for type {type_}"):
            build_request(type_, {}, {}, "x")


def test_snowflake_sql_api_statement(api, org):
    row, generation = payload_for(api, org)
    config = {"account": "Acme-Prod", "token": "pat-token", "database": "OBS", "schema": "PUBLIC", "warehouse": "WH"}
    request = build_request("snowflake", row.payload, config, str(row.id))
    assert request.url == f"https://acme-prod.snowflakecomputing.com/api/v2/statements?requestId={row.id}"
    assert request.headers["Authorization"] == "Bearer pat-token"
    body = json.loads(request.body)
    assert body["statement"].startswith("INSERT INTO IDENTIFIER(?) (ID, REQUEST_ID, STARTED_AT")
    assert body["statement"].count("?") == len(body["bindings"]) == 8
    assert body["bindings"]["1"] == {"type": "TEXT", "value": "GATEWAY_TRACES"}
    assert body["bindings"]["2"]["value"] == str(generation.id)
    assert json.loads(body["bindings"]["8"]["value"])["id"] == str(generation.id)
    assert (body["database"], body["schema"], body["warehouse"]) == ("OBS", "PUBLIC", "WH")
