"""The Generation rows written by accounting's own INSERT are stored exactly as the ORM would store them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection, transaction

from accounts import services
from inference.accounting import insert_generations
from inference.models import Generation


def full_row(organization, workspace, key) -> Generation:
    """A row with every column set to a value that needs preparation (UUIDs, decimals, JSON, datetimes)."""
    return Generation(
        id=uuid.uuid4(),
        organization_id=organization.id,
        workspace_id=workspace.id,
        api_key_id=key.id,
        key_hash=key.hash,
        user_id=None,
        session_id="session-é-1",
        requested_model="vendor/model",
        model="vendor/model",
        model_permaslug="vendor/model-2026",
        provider="prov",
        endpoint_id=None,
        upstream_id="resp_123",
        status="completed",
        finish_reason="stop",
        error_code=None,
        error_message="",
        input_tokens=123,
        output_tokens=45,
        cached_tokens=6,
        reasoning_tokens=7,
        cost=Decimal("0.0001234567"),
        is_byok=True,
        streamed=False,
        ingress_format="messages",
        latency_ms=12,
        ttft_ms=None,
        tool_calls=2,
        input_modalities=["image", "text"],
        output_modalities=["text"],
        context_bucket="1k",
        category="programming",
        language_type=None,
        pipeline=[{"stage": "guardrail", "matches": {"email": 1}, "note": "naïve ✓"}],
        trace={"trace_id": "abc", "nested": {"n": 1.5, "ok": True, "none": None}},
        metadata={"user": "u-1"},
        created_at=datetime(2026, 11, 21, 12, 0, 0, 123456, tzinfo=UTC),
        completed_at=datetime(2026, 11, 21, 12, 0, 1, 654321, tzinfo=UTC),
    )


def stored(row_id) -> tuple:
    """The row as the database holds it (raw column values, no ORM conversion)."""
    table = connection.ops.quote_name(Generation._meta.db_table)
    columns = [f.column for f in Generation._meta.concrete_fields if f.column != "id"]
    field = Generation._meta.get_field("id")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(connection.ops.quote_name(c) for c in columns)} FROM {table} WHERE id = %s",
            [field.get_db_prep_value(row_id, connection)],
        )
        return cursor.fetchone()


@pytest.mark.django_db
def test_insert_stores_what_bulk_create_stores():
    organization = services.organization_create(name="Insert")
    key = services.api_key_create(organization=organization, name="k").api_key
    ours = full_row(organization, organization.default_workspace, key)
    orm = full_row(organization, organization.default_workspace, key)
    orm.id = uuid.uuid4()
    with transaction.atomic():
        insert_generations([ours])
    Generation.objects.bulk_create([orm])

    assert stored(ours.id) == stored(orm.id)
    loaded = Generation.objects.get(id=ours.id)
    for field in Generation._meta.concrete_fields:
        assert getattr(loaded, field.attname) == getattr(ours, field.attname), field.attname


@pytest.mark.django_db
def test_insert_writes_a_batch():
    organization = services.organization_create(name="Batch")
    key = services.api_key_create(organization=organization, name="k").api_key
    rows = [full_row(organization, organization.default_workspace, key) for _ in range(25)]
    with transaction.atomic():
        insert_generations(rows)
    assert Generation.objects.filter(id__in=[r.id for r in rows]).count() == 25


_POLICY_VERSION = 2**40 + uuid.uuid4().int % 2**20


def _contexts(organization, n: int, **body) -> list:
    """`n` finished requests' contexts, as AccountingMiddleware hands them to the writer."""
    import time
    from types import SimpleNamespace

    from accounts.principal import Principal
    from inference.pipeline.context import Context, Outcome, Usage

    principal = Principal(
        key_id=None, key_hash="c" * 64, key_name="k", organization_id=organization.id,
        workspace_id=organization.default_workspace.id, user_id=None, is_management=False, disabled=False,
        expires_at=None, limit=None, limit_reset=None, include_byok_in_limit=False,
    )  # fmt: skip
    candidate = SimpleNamespace(
        model_slug="vendor/model", canonical_slug="vendor/model", provider_slug="prov", endpoint_id=None,
        output_modalities=("text",),
    )  # fmt: skip
    now = datetime.now(UTC)
    return [
        Context(
            request_id=str(uuid.uuid4()),
            created_at=now,
            started=time.perf_counter(),
            method="POST",
            path="/api/v1/responses",
            host="127.0.0.1",
            headers={},
            raw_body=b"",
            body={"model": "vendor/model", "input": f"Say hello {i}", **body},
            principal=principal,
            policy_version=_POLICY_VERSION,  # the observability routes cached, as in the running gateway
            outcome=Outcome(
                status="completed",
                candidate=candidate,
                upstream_id=f"resp_{i}",
                finish_reason="stop",
                usage=Usage(input_tokens=10 + i, output_tokens=5),
                cost=Decimal("0.000100"),
                latency_ms=3,
                completed_at=now,
            ),
        )
        for i in range(n)
    ]


postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's one-query batch")


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_batch_is_one_query_with_its_begin_and_commit(tmp_path, settings, monkeypatch):
    """The insert, the rankings sample and the rollups in their savepoint go out in one pipeline on PostgreSQL:
    one round trip (one Sync), every value a bound parameter (no simple query, no statement text with values)."""
    from analytics.models import UsageDailyRollup, UsageRollup
    from inference.accounting import record_generations_sync
    from rankings.models import PendingClassification

    settings.GATEWAY_RANKINGS_SAMPLE_RATE = 1.0  # every row sampled: the pending classification goes with it
    organization = services.organization_create(name="One query")
    # No destinations, as cached in the running gateway (the cache may be cleared by another test's changes)
    monkeypatch.setattr("observability.outbox.workspace_routes", lambda **kwargs: ())
    record_generations_sync(_contexts(organization, 1))
    contexts = _contexts(organization, 3)
    connection.ensure_connection()
    trace = tmp_path / "libpq.trace"
    with open(trace, "w") as out:
        connection.connection.pgconn.trace(out.fileno())
        try:
            record_generations_sync(contexts)
        finally:
            connection.connection.pgconn.untrace()
    sent = [line.split("\t")[3:5] for line in trace.read_text().splitlines() if "\tF\t" in line]
    kinds = [message[0] for message in sent]
    assert kinds.count("Sync") == 1 and "Query" not in kinds, sent
    parsed = [message[1] for message in sent if message[0] == "Parse"]
    assert '"BEGIN"' in parsed[0] and '"COMMIT"' in parsed[-1], [p[:80] for p in parsed]
    assert 'INSERT INTO "inference_generation"' in parsed[1] and "$1::jsonb" in parsed[1]
    assert any("SAVEPOINT accounting_" in p for p in parsed)  # the rollups in a savepoint of their own
    assert not connection.in_atomic_block and connection.get_autocommit()
    ids = [uuid.UUID(ctx.request_id) for ctx in contexts]
    assert Generation.objects.filter(id__in=ids).count() == 3
    assert PendingClassification.objects.filter(generation_id__in=ids).count() == 3
    for model in (UsageRollup, UsageDailyRollup):
        rollup = model.objects.get(organization_id=organization.id, dimension="status", value="completed")
        assert (rollup.requests, rollup.prompt_tokens, rollup.cost) == (4, 33 + 10, Decimal("0.0004"))


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_failed_rollup_in_a_batch_keeps_its_rows(monkeypatch, caplog):
    from analytics import rollup
    from analytics.models import UsageRollup
    from inference.accounting import record_generations_sync

    def failing_json(models: tuple) -> str:
        return "SELECT * FROM no_such_rollup_table WHERE " + " AND ".join(["%s::text IS NULL"] * len(models))

    monkeypatch.setattr(rollup, "_upsert_json_sql", failing_json)
    organization = services.organization_create(name="Failed rollup")
    contexts = _contexts(organization, 4)
    record_generations_sync(contexts)
    assert Generation.objects.filter(id__in=[ctx.request_id for ctx in contexts]).count() == 4
    assert not UsageRollup.objects.filter(organization_id=organization.id).exists()
    assert "usage rollup of 4 generation rows failed" in caplog.text
    monkeypatch.undo()
    later = _contexts(organization, 2)
    record_generations_sync(later)  # the connection is usable, the next batch rolled up
    assert UsageRollup.objects.get(organization_id=organization.id, dimension="status").requests == 2


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_refused_row_fails_its_batch_and_the_next_batch_is_written():
    """A value the database refuses (a NUL in a JSON field) fails the whole batch (the writer then retries row
    by row, inference/recorder.py); nothing of it is kept and the connection stays usable."""
    from django.db import DatabaseError

    from analytics.models import UsageRollup
    from inference.accounting import STRIP_FREE_FORM, record_generations_sync

    organization = services.organization_create(name="Refused row")
    refused = _contexts(organization, 2, metadata={"note": "nul \x00 here"})
    with pytest.raises(DatabaseError):
        record_generations_sync(refused)
    assert not Generation.objects.filter(id__in=[ctx.request_id for ctx in refused]).exists()
    assert not UsageRollup.objects.filter(organization_id=organization.id).exists()
    for ctx in refused:
        ctx.extras[STRIP_FREE_FORM] = True
    record_generations_sync(refused)
    assert Generation.objects.filter(id__in=[ctx.request_id for ctx in refused]).count() == 2
    assert UsageRollup.objects.get(organization_id=organization.id, dimension="status").requests == 2
