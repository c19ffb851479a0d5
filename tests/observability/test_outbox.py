"""Outbox rows written with the generation (matching, sampling) and the payload each destination gets from the
stored trace at delivery time (filter rules, privacy mode, broadcast flags)."""

from __future__ import annotations

import random
import uuid

import pytest
from django.db import transaction

from accounts import services as account_services
from inference.models import Generation
from observability.delivery import delivery_payload
from observability.models import OutboxEntry
from observability.payload import sampled
from tests.observability.conftest import make_ctx, record_generation

pytestmark = pytest.mark.django_db

URL = "/api/v1/observability/destinations"


def destination(api, **body):
    body.setdefault("name", "hook")
    body.setdefault("type", "webhook")
    body.setdefault("config", {"url": "https://hooks.example.com/in"})
    response = api.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["data"]


def rows_for(generation, dest=None):
    rows = OutboxEntry.objects.filter(generation_id=generation.id)
    return rows.filter(destination_id=dest["id"]) if dest else rows


def payload_of(generation, dest) -> dict | None:
    """What the worker would send to `dest` for `generation` (None: left out by its filter rules)."""
    return delivery_payload(rows_for(generation, dest).select_related("destination").get())


def forwarded(generation, dest) -> bool:
    return payload_of(generation, dest) is not None


def test_one_row_per_matching_destination_in_the_generation_transaction(api, org):
    first, second = (
        destination(api),
        destination(api, name="second", type="otel-collector", config={"endpoint": "http://collector:4318"}),
    )
    destination(api, name="disabled", enabled=False)
    generation = record_generation(org)
    assert {str(r.destination_id) for r in rows_for(generation)} == {first["id"], second["id"]}
    row = rows_for(generation, first).get()
    assert row.status == "pending" and row.attempts == 0
    assert payload_of(generation, first)["id"] == str(generation.id)


def test_rows_roll_back_with_the_generation(api, org):
    destination(api)
    with pytest.raises(RuntimeError), transaction.atomic():
        record_generation(org)
        raise RuntimeError("accounting failed")
    assert Generation.objects.count() == 0 and OutboxEntry.objects.count() == 0


def test_other_workspaces_and_deleted_destinations_do_not_match(api, org):
    other = account_services.workspace_create(organization=org.organization, name="Other", slug="other")
    destination(api, workspace_id=str(other.id))
    deleted = destination(api, name="deleted")
    api.delete(f"{URL}/{deleted['id']}")
    assert rows_for(record_generation(org)).count() == 0


def test_key_allowlist(api, org):
    only_inference = destination(api, api_key_hashes=[org.inference_hash])
    only_management = destination(api, name="m", api_key_hashes=[org.management_hash])
    generation = record_generation(org)
    assert rows_for(generation, only_inference).count() == 1
    assert rows_for(generation, only_management).count() == 0


def test_changes_apply_to_the_next_generation(api, org):
    dest = destination(api)
    assert rows_for(record_generation(org)).count() == 1
    api.patch(f"{URL}/{dest['id']}", {"enabled": False}, format="json")
    assert rows_for(record_generation(org)).count() == 0


def test_sampling_is_deterministic_and_statistically_right():
    rng = random.Random(20261121)
    destination_id = uuid.UUID(int=rng.getrandbits(128))
    generation_ids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(20_000)]
    for rate in (0.0001, 0.1, 0.5, 0.9):
        kept = sum(sampled(g, destination_id, rate) for g in generation_ids)
        expected = rate * len(generation_ids)
        tolerance = 4 * (expected * (1 - rate)) ** 0.5 + 2  # four standard deviations
        assert abs(kept - expected) <= tolerance, (rate, kept)
    assert all(sampled(g, destination_id, 1) for g in generation_ids[:100])
    assert [sampled(g, destination_id, 0.5) for g in generation_ids[:50]] == [
        sampled(g, destination_id, 0.5) for g in generation_ids[:50]
    ]


def test_sampling_rate_applies_to_recorded_generations(api, org):
    dest = destination(api, sampling_rate=0.5)
    generations = [record_generation(org) for _ in range(60)]
    kept = OutboxEntry.objects.filter(destination_id=dest["id"]).count()
    assert kept == sum(sampled(g.id, dest["id"], 0.5) for g in generations)
    assert 10 <= kept <= 50


RULE_CASES = [
    ({"field": "model", "operator": "equals", "value": "openai/gpt-4o-mini"}, True),
    ({"field": "model", "operator": "equals", "value": "openai/gpt-4o"}, False),
    ({"field": "provider", "operator": "not_equals", "value": "anthropic"}, True),
    ({"field": "provider", "operator": "not_equals", "value": "openai"}, False),
    ({"field": "input", "operator": "contains", "value": "hello"}, True),
    ({"field": "input", "operator": "contains", "value": "goodbye"}, False),
    ({"field": "output", "operator": "not_contains", "value": "secret"}, True),
    ({"field": "output", "operator": "not_contains", "value": "model"}, False),
    ({"field": "input", "operator": "regex", "value": r"^Say\s+h"}, True),
    ({"field": "input", "operator": "regex", "value": r"^\d+$"}, False),
    ({"field": "model", "operator": "starts_with", "value": "openai/"}, True),
    ({"field": "model", "operator": "starts_with", "value": "anthropic/"}, False),
    ({"field": "model", "operator": "ends_with", "value": "-mini"}, True),
    ({"field": "model", "operator": "ends_with", "value": "-max"}, False),
    ({"field": "total_tokens", "operator": "gt", "value": 16}, True),
    ({"field": "total_tokens", "operator": "gt", "value": 17}, False),
    ({"field": "prompt_tokens", "operator": "lt", "value": 13}, True),
    ({"field": "prompt_tokens", "operator": "lt", "value": 12}, False),
    ({"field": "completion_tokens", "operator": "gte", "value": 5}, True),
    ({"field": "completion_tokens", "operator": "gte", "value": 6}, False),
    ({"field": "total_cost", "operator": "lte", "value": 0.0000048}, True),
    ({"field": "total_cost", "operator": "lte", "value": "0.000004"}, False),
    ({"field": "session_id", "operator": "exists"}, True),
    ({"field": "user_id", "operator": "not_exists"}, False),
    ({"field": "finish_reason", "operator": "not_exists"}, False),
    ({"field": "api_key_name", "operator": "equals", "value": "inference"}, True),
    ({"field": "user_id", "operator": "equals", "value": "end-user-7"}, True),
]


@pytest.mark.parametrize(("rule", "expected"), RULE_CASES, ids=[f"{r['operator']}-{f}" for r, f in RULE_CASES])
def test_each_filter_operator(api, org, rule, expected):
    dest = destination(api, filter_rules={"groups": [{"rules": [rule]}]})
    body = {"model": "openai/gpt-4o-mini", "input": "Say hello", "session_id": "sess-1", "user": "end-user-7"}
    generation = record_generation(org, body=body)
    assert forwarded(generation, dest) is expected


def test_group_logic_and_disabled_rules(api, org):
    miss = {"field": "model", "operator": "equals", "value": "other"}
    hit = {"field": "model", "operator": "exists"}
    any_group = destination(api, name="or", filter_rules={"groups": [{"logic": "or", "rules": [miss, hit]}]})
    all_group = destination(api, name="and", filter_rules={"groups": [{"logic": "and", "rules": [miss, hit]}]})
    two_groups = destination(api, name="groups", filter_rules={"groups": [{"rules": [hit]}, {"rules": [miss]}]})
    off = destination(api, name="off", filter_rules={"enabled": False, "groups": [{"rules": [miss]}]})
    generation = record_generation(org)
    assert rows_for(generation).count() == 4  # filter rules are the worker's
    assert forwarded(generation, any_group) is True
    assert forwarded(generation, all_group) is False
    assert forwarded(generation, two_groups) is False
    assert forwarded(generation, off) is True


def test_payload_with_inputs_outputs_and_trace_fields(api, org):
    dest = destination(api)
    body = {
        "model": "openai/gpt-4o-mini",
        "instructions": "Be brief",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Say hello"}]}],
        "temperature": 0.2,
        "trace": {
            "trace_id": "t-1",
            "trace_name": "checkout",
            "span_name": "answer",
            "generation_name": "reply",
            "parent_span_id": "p-1",
            "team": "payments",
        },
    }
    payload = payload_of(record_generation(org, body=body), dest)
    assert payload["trace_id"] == "t-1" and payload["trace_name"] == "checkout" and payload["span_name"] == "answer"
    assert payload["generation_name"] == "reply" and payload["parent_span_id"] == "p-1"
    assert payload["metadata"] == {"team": "payments"}
    assert payload["instructions"] == "Be brief" and payload["input"] == body["input"]
    assert payload["output_text"] == "Hello from the model" and payload["output"][0]["type"] == "message"
    assert payload["usage"] == {
        "input_tokens": 12,
        "output_tokens": 5,
        "cached_tokens": 0,
        "reasoning_tokens": 0,
        "total_tokens": 17,
    }
    assert payload["ttft_ms"] == 120 and payload["latency_ms"] == 480 and payload["finish_reason"] == "stop"
    assert payload["parameters"] == {"temperature": 0.2}
    assert payload["privacy_mode"] is False
    assert "cost" not in payload and "identity" not in payload and "request_context" not in payload


def test_privacy_mode_strips_inputs_and_outputs(api, org):
    dest = destination(api, privacy_mode=True)
    payload = payload_of(record_generation(org, body={"model": "m", "instructions": "x", "input": "Say hello"}), dest)
    for key in ("input", "instructions", "output_text", "output"):
        assert key not in payload
    assert "Say hello" not in str(payload) and "Hello from the model" not in str(payload)
    assert payload["privacy_mode"] is True and payload["usage"]["total_tokens"] == 17


def test_broadcast_flags_add_cost_identity_and_request_context(api, org):
    dest = destination(
        api,
        broadcast_generation_cost=True,
        broadcast_generation_identity=True,
        broadcast_generation_request_context=True,
    )
    body = {"model": "m", "input": "hi", "user": "end-user-7", "metadata": {"order": "42"}}
    body["client_metadata"] = {"x-codex-window-id": "w:0"}
    generation = record_generation(org, body=body)
    payload = payload_of(generation, dest)
    assert payload["cost"] == {"total_cost": "0.0000048", "currency": "USD", "is_byok": False}
    assert payload["identity"] == {
        "organization_id": str(org.organization.id),
        "workspace_id": str(org.workspace.id),
        "api_key_hash": org.inference_hash,
        "api_key_name": "inference",
        "user_id": str(org.admin.id),
        "end_user_id": "end-user-7",
    }
    context = payload["request_context"]
    assert context["method"] == "POST" and context["host"] == "gateway.test" and context["region"] == "global"
    assert context["headers"] == {"user-agent": "tests/1.0", "x-session-id": "s-1"}
    assert context["request_metadata"] == {"order": "42"}
    assert context["client_metadata"] == {"x-codex-window-id": "w:0"}


def test_no_destinations_means_no_work(org, django_assert_num_queries):
    ctx = make_ctx(org)
    from observability.services import outbox_record

    generation = record_generation(org, ctx=ctx)
    with django_assert_num_queries(0):
        assert outbox_record(generation=generation, ctx=ctx) == 0


def test_a_failing_outbox_never_loses_the_generation(api, org, monkeypatch, caplog):
    destination(api)

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("observability.outbox._insert_outbox", broken)
    generation = record_generation(org)
    assert Generation.objects.filter(pk=generation.pk).exists()
    assert OutboxEntry.objects.count() == 0
    assert f"could not queue the traces of generation {generation.id}" in caplog.text


def test_nul_characters_do_not_break_the_write(api, org):
    dest = destination(api)
    body = {"model": "m", "input": "a\x00b and a literal \\u0000"}
    generation = record_generation(org, body=body, output_text="out\x00put")
    payload = payload_of(generation, dest)
    assert payload["input"] == "ab and a literal \\u0000" and payload["output_text"] == "output"


def test_a_catastrophic_regex_does_not_stall_the_accounting_write(api, org):
    """`^(a+)+$` against 40 characters took hours with Python's `re` (28 took 6.4 s, holding the GIL for every
    tenant); the worker evaluates it, with RE2, in linear time."""
    import time

    dest = destination(api, filter_rules={"groups": [{"rules": [
        {"field": "input", "operator": "regex", "value": "^(a+)+$"}]}]})  # fmt: skip
    started = time.monotonic()
    generation = record_generation(org, body={"model": "openai/gpt-4o-mini", "input": "a" * 40 + "!"})
    assert time.monotonic() - started < 2
    assert rows_for(generation, dest).count() == 1 and forwarded(generation, dest) is False
    generation = record_generation(org, body={"model": "openai/gpt-4o-mini", "input": "a" * 40})
    assert forwarded(generation, dest) is True


def test_the_accounting_batch_writes_the_outbox_or_keeps_the_generation_without_it(api, org, monkeypatch, caplog):
    """Through the accounting writer's own call (on PostgreSQL the outbox insert goes with the batch's one query,
    in a savepoint of its own): the rows are written; an insert the database refuses loses neither the
    generation nor its rollups, and is logged."""
    from analytics.models import UsageRollup
    from inference.accounting import record_generations_sync
    from observability import outbox
    from tests.observability.conftest import make_ctx

    dest = destination(api)

    def batch_of_one():
        ctx = make_ctx(org)
        ctx.request_id = str(uuid.uuid4())
        return record_generations_sync([ctx])[0]

    written = batch_of_one()
    assert rows_for(written, dest).count() == 1
    assert payload_of(written, dest)["id"] == str(written.id)

    def refused(rows: int) -> tuple[str, str, str]:
        failing = "SELECT * FROM no_such_outbox_table WHERE " + " AND ".join(["%s IS NULL"] * (5 + 9 * rows))
        return failing, failing, failing

    monkeypatch.setattr(outbox, "_statements_for", refused)
    generation = batch_of_one()
    assert Generation.objects.filter(pk=generation.pk).exists()
    assert not rows_for(generation).exists()
    rollup = UsageRollup.objects.get(organization_id=generation.organization_id, dimension="status")
    assert rollup.requests == 2
    assert f"could not queue the traces of generation {generation.id}" in caplog.text
