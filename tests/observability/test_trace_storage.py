"""How a generation's trace is stored for its deliveries: once for every destination, encrypted at rest, cut to
GATEWAY_OBSERVABILITY_MAX_BODY_BYTES, deleted when the deliveries are done; filter rules run in the worker."""

from __future__ import annotations

import base64
import json
import threading
import time
from datetime import timedelta

import pytest
from cryptography.fernet import Fernet
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inference.models import Generation
from observability import filters
from observability.bodies import MARKER, fit
from observability.delivery import delivery_payload
from observability.models import OutboxEntry, TraceBody
from observability.services import outbox_entry_retry
from tests.fakes.fake_receiver import Reply
from tests.observability.conftest import TEST_FERNET_KEY, make_ctx, record_generation
from tests.observability.test_outbox import destination
from tests.observability.test_worker import make_worker, webhook

PROMPT = "confidential-prompt-7f3a " * 800  # 20,000 characters


def raw_rows(table: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
        return cursor.fetchall()


def three_destinations(api, receiver=None):
    url = f"{receiver.url}/hook" if receiver else "https://hooks.example.com/in"
    return [destination(api, name=f"hook-{i}", config={"url": url}) for i in range(3)]


@pytest.mark.django_db
def test_the_accounting_transaction_writes_the_prompt_once_and_never_in_plaintext(api, org):
    three_destinations(api)
    with CaptureQueriesContext(connection) as queries:
        generation = record_generation(org, body={"model": "openai/gpt-4o-mini", "input": PROMPT})
    statements = [q["sql"] for q in queries.captured_queries]
    assert not any("confidential-prompt" in sql for sql in statements)
    written = sum(len(sql) for sql in statements if sql.lstrip().upper().startswith(("INSERT", "WITH")))
    assert written < 1.5 * len(PROMPT) + 8_000, written  # one encrypted copy (base64: 4/3), not three
    rows = OutboxEntry.objects.filter(generation_id=generation.id)
    assert rows.count() == 3 and set(rows.values_list("payload", flat=True)) == {None}
    assert TraceBody.objects.count() == 1
    outbox_bytes = sum(len(str(row)) for row in raw_rows(OutboxEntry._meta.db_table))
    assert outbox_bytes < 3 * 600, outbox_bytes  # three light rows: ids, status, times
    body = TraceBody.objects.get()
    assert len(PROMPT) < body.size < len(PROMPT) + 4_000 and not body.truncated


@pytest.mark.django_db
def test_the_stored_body_is_encrypted_with_the_configured_keys(api, org):
    destination(api)
    generation = record_generation(org, body={"model": "m", "input": PROMPT}, output_text="secret-answer-42")
    ((generation_id, data, size, truncated, created_at),) = [
        row[:5]
        for row in raw_rows(TraceBody._meta.db_table)  # column order of the model: generation_id, data, ...
    ]
    assert "confidential-prompt" not in data and "secret-answer-42" not in data
    ciphertext = base64.urlsafe_b64decode(data)
    assert ciphertext[0] == 0x80 and b"confidential-prompt" not in ciphertext  # a Fernet token
    stored = json.loads(Fernet(TEST_FERNET_KEY).decrypt(data.encode()))
    assert stored["input"] == PROMPT and stored["output_text"] == "secret-answer-42"
    assert (
        stored["id"] == str(generation.id)
        and stored["truncated"] is None
        and size == len(Fernet(TEST_FERNET_KEY).decrypt(data.encode()))
    )


@pytest.mark.django_db
def test_a_body_no_configured_key_opens_makes_the_delivery_dead(api, org, receiver, settings):
    webhook(api, receiver)
    record_generation(org)
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]  # the old key was dropped
    make_worker().drain()
    row = OutboxEntry.objects.get()
    assert row.status == "dead" and "cannot be decrypted" in row.last_error and receiver.requests == []


@pytest.mark.django_db
def test_input_and_output_are_not_stored_when_no_destination_receives_or_filters_them(api, org):
    destination(api, privacy_mode=True)
    destination(api, name="filtered", privacy_mode=True, filter_rules={"groups": [{"rules": [
        {"field": "model", "operator": "starts_with", "value": "openai/"}]}]})  # fmt: skip
    record_generation(org, body={"model": "m", "instructions": "be brief", "input": PROMPT})
    stored = json.loads(Fernet(TEST_FERNET_KEY).decrypt(TraceBody.objects.get().data.encode()))
    assert not {"input", "instructions", "output", "output_text"} & set(stored)
    assert stored["usage"]["total_tokens"] == 17
    destination(api, name="reads input", privacy_mode=True, filter_rules={"groups": [{"rules": [
        {"field": "input", "operator": "contains", "value": "confidential"}]}]})  # fmt: skip
    generation = record_generation(org, body={"model": "m", "input": PROMPT})
    stored = json.loads(Fernet(TEST_FERNET_KEY).decrypt(TraceBody.objects.get(pk=generation.id).data.encode()))
    assert stored["input"] == PROMPT  # the filter needs it; privacy mode still keeps it out of the payload


@pytest.mark.django_db
def test_truncation_at_the_documented_size(api, org, settings):
    settings.GATEWAY_OBSERVABILITY_MAX_BODY_BYTES = 8192
    dest = destination(api)
    body = {"model": "m", "instructions": "Be brief", "input": PROMPT}
    generation = record_generation(org, body=body)
    stored = TraceBody.objects.get()
    assert stored.truncated and stored.size <= 8192
    row = OutboxEntry.objects.select_related("destination").get(destination_id=dest["id"])
    payload = delivery_payload(row)
    assert payload["truncated"] == {"original_bytes": payload["truncated"]["original_bytes"], "limit_bytes": 8192}
    assert payload["truncated"]["original_bytes"] > len(PROMPT)
    kept, _, rest = payload["input"].partition("…[truncated ")
    assert PROMPT.startswith(kept) and len(kept) > 4000
    assert rest == f"{len(PROMPT) - len(kept)} characters]"
    assert payload["instructions"] == "Be brief" and payload["output_text"] == "Hello from the model"
    assert payload["id"] == str(generation.id) and payload["usage"]["total_tokens"] == 17

    small = record_generation(org, body={"model": "m", "input": "short"})
    assert delivery_payload(OutboxEntry.objects.get(generation_id=small.id))["truncated"] is None
    settings.GATEWAY_OBSERVABILITY_MAX_BODY_BYTES = 10  # below the floor: 4096
    record_generation(org, body=body)
    assert TraceBody.objects.order_by("-created_at").first().size <= 4096


def test_truncation_policy_cases():
    record = {"id": "g", "metadata": {"team": "x"}, "input": [{"content": "é" * 30_000}], "output_text": "ok"}
    data, cut = fit(record, 5000)
    stored = json.loads(data)
    assert cut and len(data) <= 5000 and stored["output_text"] == "ok"
    kept, _, rest = stored["input"][0]["content"].partition("…[truncated ")
    assert set(kept) == {"é"} and rest == f"{30_000 - len(kept)} characters]"
    assert MARKER.format(30_000 - len(kept)) == stored["input"][0]["content"][len(kept) :]
    many = {"id": "g", "metadata": {}, "input": ["ab"] * 5000}  # many short strings: cut to null
    data, cut = fit(many, 5000)
    assert cut and len(data) <= 5000 and json.loads(data)["input"] is None
    assert json.loads(data)["truncated"]["original_bytes"] == len(json.dumps(many, separators=(",", ":")))
    assert fit({"id": "g", "input": "x"}, 5000) == (b'{"id":"g","input":"x"}', False)


@pytest.mark.django_db
def test_filtered_out_deliveries_are_marked_and_bodies_deleted_when_deliveries_are_done(api, org, receiver):
    webhook(api, receiver)
    miss = {"field": "model", "operator": "equals", "value": "anthropic/claude"}
    filtered = destination(api, name="filtered", config={"url": f"{receiver.url}/f"}, filter_rules={
        "groups": [{"rules": [miss]}]})  # fmt: skip
    generation = record_generation(org)
    assert TraceBody.objects.filter(pk=generation.id).exists()
    make_worker().drain()
    rows = {str(r.destination_id): r for r in OutboxEntry.objects.all()}
    assert rows[filtered["id"]].status == "filtered" and rows[filtered["id"]].attempts == 0
    assert rows[filtered["id"]].last_error == "filtered out by the destination's filter_rules"
    assert rows[filtered["id"]].delivered_at is not None
    assert [r.path for r in receiver.requests] == ["/hook"]
    assert TraceBody.objects.count() == 0  # every delivery done: the stored trace is gone


@pytest.mark.django_db
def test_a_dead_delivery_keeps_its_body_for_a_retry_until_the_retention(api, org, receiver):
    webhook(api, receiver)
    record_generation(org)
    receiver.default = Reply(500)
    worker = make_worker(max_attempts=1)
    worker.drain()
    row = OutboxEntry.objects.get()
    assert row.status == "dead" and TraceBody.objects.count() == 1
    assert worker.purge() == 0 and TraceBody.objects.count() == 1  # a dead row may be retried from the admin
    TraceBody.objects.update(created_at=timezone.now() - timedelta(days=8))
    worker.purge()
    assert TraceBody.objects.count() == 0  # GATEWAY_OBSERVABILITY_BODY_RETENTION_DAYS (7)
    assert len(receiver.requests) == 1
    outbox_entry_retry(entries=[row])  # the admin's retry, after the retention
    receiver.default = Reply(200)
    worker.drain()
    row.refresh_from_db()
    assert row.status == "dead" and "stored trace is gone" in row.last_error and len(receiver.requests) == 1


@pytest.mark.django_db
def test_the_purge_deletes_bodies_left_by_a_crashed_worker(api, org, receiver):
    webhook(api, receiver)
    record_generation(org)
    OutboxEntry.objects.update(status="delivered", delivered_at=timezone.now())  # finished, body not released
    assert TraceBody.objects.count() == 1
    make_worker().purge()
    assert TraceBody.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_catastrophic_filter_is_evaluated_by_the_worker_not_on_the_request_path(http, org, receiver, monkeypatch):
    """`^(a+)+$` took the whole process down for seconds when the accounting write evaluated it. Every regex
    evaluation is recorded with its thread and time: none happens before the request and its accounting are
    done; the worker's evaluation marks the row filtered."""
    evaluations: list[tuple[str, float]] = []
    real_compile = filters.compile_pattern

    class Spy:
        def __init__(self, pattern):
            self.pattern = pattern

        def search(self, text):
            evaluations.append((threading.current_thread().name, time.monotonic()))
            return self.pattern.search(text)

    monkeypatch.setattr(filters, "compile_pattern", lambda value: Spy(real_compile(value)))
    rules = {"groups": [{"rules": [{"field": "input", "operator": "regex", "value": "^(a+)+$"}]}]}
    response = org.client().post(
        "/api/v1/observability/destinations",
        {"name": "hook", "type": "webhook", "config": {"url": f"{receiver.url}/hook"}, "filter_rules": rules},
        format="json",
    )
    assert response.status_code == 201, response.content
    answer = http.post("/responses", json={"model": "echo/echo-1", "input": "a" * 40 + "!"})
    assert answer.status_code == 200
    deadline = time.monotonic() + 15
    while not OutboxEntry.objects.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    answered = time.monotonic()
    row = OutboxEntry.objects.get()
    assert Generation.objects.filter(pk=row.generation_id).exists() and row.status == "pending"
    assert evaluations == []  # the request and its accounting write never ran the filter
    make_worker().drain()
    row.refresh_from_db()
    assert row.status == "filtered" and receiver.requests == []
    ((thread, when),) = evaluations
    assert thread == threading.current_thread().name and when >= answered  # the worker's
    assert TraceBody.objects.count() == 0


@pytest.mark.django_db
def test_rows_queued_with_a_payload_by_an_earlier_version_are_delivered_as_they_are(api, org, receiver):
    dest = webhook(api, receiver)
    OutboxEntry.objects.create(
        destination_id=dest["id"],
        generation_id="00000000-0000-4000-8000-000000000001",
        payload={"id": "legacy", "model": "m", "privacy_mode": True},
        next_attempt_at=timezone.now(),
    )
    make_worker().drain()
    assert OutboxEntry.objects.get().status == "delivered"
    assert receiver.requests[0].json()["trace"]["id"] == "legacy"


@pytest.mark.django_db
def test_no_destination_no_stored_trace(org):
    record_generation(org, ctx=make_ctx(org))
    assert TraceBody.objects.count() == 0 and OutboxEntry.objects.count() == 0


@pytest.mark.django_db
def test_key_rotation_reencrypts_stored_traces(api, org, receiver, settings):
    from io import StringIO

    from django.core.management import call_command

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [old]
    webhook(api, receiver)
    record_generation(org, body={"model": "m", "input": PROMPT})
    before = TraceBody.objects.get().data
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [new, old]
    out = StringIO()
    call_command("rotate_byok_encryption", stdout=out)
    assert "Re-encrypted 1 stored observability trace(s)" in out.getvalue()
    settings.GATEWAY_BYOK_ENCRYPTION_KEYS = [new]  # the old key can go now
    assert TraceBody.objects.get().data != before
    make_worker().drain()
    assert OutboxEntry.objects.get().status == "delivered" and receiver.requests[0].json()["trace"]["input"] == PROMPT
