"""The hourly and daily rollups a mixed batch of Generation rows adds (one accounting transaction) equal a
rebuild from the rows."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import transaction

from tests.analytics.test_usage_api import _rollup_rows

pytestmark = pytest.mark.django_db(transaction=True)


def _batch(org, start: datetime) -> list:
    from accounts.models import User
    from inference.models import Generation

    name = f"rollup-{uuid.uuid4().hex[:6]}"
    user = User.objects.create(username=name, email=f"{name}@example.com")
    rows = []
    for i in range(60):
        rows.append(
            Generation(
                id=uuid.uuid4(),
                # rows of one batch may carry the organization id as a UUID or as text
                organization_id=org.organization.id if i % 2 else str(org.organization.id),
                workspace_id=org.workspace.id if i % 5 else None,
                key_hash=f"{i % 3:064d}",
                user_id=user.id if i % 4 == 0 else None,
                model=("a/one", "b/two", "")[i % 3],
                provider=("p1", "p2")[i % 2],
                status=("completed", "failed", "cancelled", "completed")[i % 4],
                input_tokens=100 + i,
                output_tokens=i,
                reasoning_tokens=i % 7,
                cached_tokens=i % 5,
                cost=Decimal("0.0000000001") * (i * 12345 + 1),
                latency_ms=None if i % 7 == 0 else (5, 120, 900, 120)[i % 4],
                created_at=start + timedelta(minutes=4 * i),  # four hours, across a day boundary
            )
        )
    return rows


def test_a_mixed_batch_adds_what_a_rebuild_computes(org):
    from analytics.rebuild import rebuild_day
    from analytics.rollup import rollup_generations
    from inference.accounting import insert_generations

    start = datetime(2026, 11, 20, 20, 41, 7, 250_000, tzinfo=UTC)
    first, second = _batch(org, start), _batch(org, start)
    for rows in (first, second):  # the second batch updates the rows the first inserted
        with transaction.atomic():
            insert_generations(rows)
            rollup_generations(rows)
    kept, kept_daily = _rollup_rows(), _rollup_rows(daily=True)
    assert sum(int(r[4]) for r in kept if r[2] == "status") == 120
    assert sum(int(r[4]) for r in kept_daily if r[2] == "status") == 120 and len(kept_daily) < len(kept)
    for day in {r.created_at.date() for r in first}:
        rebuild_day(day)
    assert _rollup_rows() == kept
    assert _rollup_rows(daily=True) == kept_daily


def test_a_failed_rollup_keeps_the_generation_rows_and_the_transaction(org, monkeypatch, caplog):
    from analytics import rollup
    from analytics.models import UsageRollup
    from inference.accounting import insert_generations
    from inference.models import Generation

    def failing_values(model, rows: int) -> str:
        return f"SELECT * FROM no_such_rollup_table WHERE 1 IN ({', '.join(['%s'] * rows * 37)})"

    def failing_json(models: tuple) -> str:
        return "SELECT * FROM no_such_rollup_table WHERE " + " AND ".join(["%s::text IS NULL"] * len(models))

    monkeypatch.setattr(rollup, "_upsert_sql", failing_values)
    monkeypatch.setattr(rollup, "_upsert_json_sql", failing_json)
    first, second = _batch(org, datetime.now(UTC))[:5], _batch(org, datetime.now(UTC))[:5]
    with transaction.atomic():  # as the accounting writer: rows, rollup (fails), then more statements
        insert_generations(first)
        rollup.rollup_generations(first)
        insert_generations(second)
    assert Generation.objects.filter(id__in=[row.id for row in first + second]).count() == 10
    assert not UsageRollup.objects.exists()
    assert "usage rollup of 5 generation rows failed" in caplog.text
