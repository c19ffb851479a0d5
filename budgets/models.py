"""Workspace budgets and the durable spend counters every spending limit is enforced with."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.db import models

from metering.cost import units_to_usd


class BudgetInterval(models.TextChoices):
    DAILY = "daily", "Daily"
    WEEKLY = "weekly", "Weekly"
    MONTHLY = "monthly", "Monthly"
    LIFETIME = "lifetime", "Lifetime"


# Narrowest first: limits must strictly increase along this order.
INTERVAL_ORDER = (BudgetInterval.DAILY, BudgetInterval.WEEKLY, BudgetInterval.MONTHLY, BudgetInterval.LIFETIME)


class WorkspaceBudget(models.Model):
    """A spending limit (USD) of a workspace per UTC day, ISO week, month, or for its whole life."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="budgets")
    reset_interval = models.CharField(max_length=10, choices=BudgetInterval.choices)
    limit_usd = models.DecimalField(max_digits=18, decimal_places=6, verbose_name="limit USD")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workspace", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "reset_interval"], name="workspace_budget_unique_interval"),
            models.CheckConstraint(condition=models.Q(limit_usd__gt=0), name="workspace_budget_limit_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.workspace_id} {self.reset_interval} ${self.limit_usd}"


class SpendCounter(models.Model):
    """Spend of one limit scope (workspace, API key, guardrail subject) in one period, plus the holds of the
    requests in flight. Amounts are integers of 1e-10 USD; BYOK spend is kept apart so whether it counts is
    decided when a limit is checked. Rows are created on first use and never deleted by the gateway."""

    id = models.BigAutoField(primary_key=True, verbose_name="ID")
    scope = models.CharField(max_length=20)
    scope_id = models.CharField(max_length=200, verbose_name="scope ID")
    interval = models.CharField(max_length=10, choices=BudgetInterval.choices)
    period_start = models.DateTimeField()
    spent_units = models.BigIntegerField(default=0)
    byok_spent_units = models.BigIntegerField(default=0, verbose_name="BYOK spent units")
    reserved_units = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-period_start", "scope", "scope_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["scope", "scope_id", "interval", "period_start"], name="spend_counter_unique_period"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scope}:{self.scope_id} {self.interval} from {self.period_start:%Y-%m-%d}"

    @property
    def spent_usd(self) -> Decimal:
        return units_to_usd(self.spent_units)

    @property
    def byok_spent_usd(self) -> Decimal:
        return units_to_usd(self.byok_spent_units)

    @property
    def reserved_usd(self) -> Decimal:
        return units_to_usd(self.reserved_units)


class SpendReservation(models.Model):
    """The hold of one request in flight on its counters: created with the reservation, deleted when the
    request settles. Once `expires_at` passed (a process that died mid-request) the reaper charges the hold
    as spent and marks the row `reaped_at`; the row then stays as the record of that charge (reconciliation
    counts it), unless the request still settles, which replaces the charge by its cost and deletes it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    request_id = models.CharField(max_length=100, blank=True, default="", verbose_name="request ID")
    amount_units = models.BigIntegerField()
    counter_ids = models.JSONField(default=list)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)
    reaped_at = models.DateTimeField(
        null=True, blank=True, help_text="When the hold was charged as spent because its request never settled"
    )
    record = models.JSONField(
        null=True,  # a hold of the previous release's function (migration 0006) has none
        default=dict,
        blank=True,
        help_text="What the request's Generation row needs if its process dies: written by the hold's own statement",
    )

    class Meta:
        ordering = ["expires_at"]

    def __str__(self) -> str:
        return f"{self.request_id or self.id} holds {self.amount_units} units until {self.expires_at:%H:%M:%S}"


class AppliedSettlement(models.Model):
    """A settlement (one request's cost and the release of its hold) applied to the counters. Written in the
    settlement's own transaction, so that applying it again (a retry after the database committed it but its
    answer was lost) changes nothing; `budgets_reap` deletes the rows older than an hour. On PostgreSQL
    `created_at` has a BRIN index (migration 0005: rows come in time order, and a BRIN index costs next to
    nothing per insert)."""

    id = models.UUIDField(primary_key=True, editable=False, verbose_name="ID")
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"settlement {self.id} applied at {self.created_at:%Y-%m-%d %H:%M:%S}"
