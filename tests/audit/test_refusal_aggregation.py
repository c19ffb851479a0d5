"""Refusals are aggregated in the audit log (one record per key, reason and minute, with a count) and the log
keeps its records GATEWAY_AUDIT_RETENTION_DAYS. Over the real server: a key hammering a spent budget."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from audit import retention
from audit.models import AuditEvent
from tests.audit.test_audit_log import audit_log, infer, manage, settled  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

REFUSALS = 60


def spend_budget(manage, org) -> None:  # noqa: F811
    response = manage.put(f"/workspaces/{org.workspace.slug}/budgets/daily", json={"limit_usd": 0.000001})
    assert response.status_code == 200


def test_refusals_on_a_spent_budget_are_one_record_a_minute_with_a_count(manage, infer, org):  # noqa: F811
    spend_budget(manage, org)
    ids = []
    for _ in range(REFUSALS):
        refused = infer.post("/responses", json={"model": "echo/echo-1", "input": "a b c"})
        assert refused.status_code == 402
        ids.append(refused.headers["x-request-id"])

    def total() -> int:
        return sum(AuditEvent.objects.filter(action="refuse").values_list("count", flat=True))

    settled(lambda: total() == REFUSALS)
    records = audit_log(manage, action="refuse", resource_type="budget")
    assert 1 <= len(records) <= 2  # one per minute: the run may straddle a minute's end
    assert sum(r["count"] for r in records) == REFUSALS
    first = records[-1]
    assert first["request_id"] == ids[0] and first["resource_id"] == "workspace/daily"
    assert first["actor"] == org.inference_hash and first["changes"]["status"] == 402


def old_record(org, days: float) -> AuditEvent:
    return AuditEvent.objects.create(
        organization_id=org.organization.id,
        created_at=timezone.now() - timedelta(days=days),
        source="api",
        actor_type="api_key",
        actor="k",
        resource_type="guardrail",
        action="create",
    )


def test_prune_audit_log_deletes_records_past_the_retention(org, settings, capsys):
    settings.GATEWAY_AUDIT_RETENTION_DAYS = 30
    old, recent = old_record(org, 31), old_record(org, 29)
    call_command("prune_audit_log")
    assert "deleted 1 audit record(s) older than 30 day(s)" in capsys.readouterr().out
    assert list(AuditEvent.objects.values_list("id", flat=True)) == [recent.id]
    assert not AuditEvent.objects.filter(id=old.id).exists()
    settings.GATEWAY_AUDIT_RETENTION_DAYS = 0
    old_record(org, 3650)
    call_command("prune_audit_log")
    assert "every audit record is kept" in capsys.readouterr().out
    assert AuditEvent.objects.count() == 2


def test_the_refusal_writer_prunes_without_a_cron_job(manage, infer, org, settings, monkeypatch):  # noqa: F811
    settings.GATEWAY_AUDIT_RETENTION_DAYS = 7
    monkeypatch.setattr(retention, "_last_prune", [None])
    old = old_record(org, 8)
    spend_budget(manage, org)
    assert infer.post("/responses", json={"model": "echo/echo-1", "input": "a"}).status_code == 402
    settled(lambda: AuditEvent.objects.filter(action="refuse").exists())
    settled(lambda: not AuditEvent.objects.filter(id=old.id).exists())
