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
