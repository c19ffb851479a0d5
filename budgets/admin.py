"""Django admin of workspace budgets, spend counters and in-flight reservations."""

from django.contrib import admin

from budgets.models import SpendCounter, SpendReservation, WorkspaceBudget


@admin.register(WorkspaceBudget)
class WorkspaceBudgetAdmin(admin.ModelAdmin):
    list_display = ("workspace", "reset_interval", "limit_usd", "updated_at")
    list_filter = ("reset_interval",)
    search_fields = ("workspace__name", "workspace__slug", "id")
    readonly_fields = ("id", "created_at", "updated_at")


@admin.register(SpendCounter)
class SpendCounterAdmin(admin.ModelAdmin):
    list_display = ("scope", "scope_id", "interval", "period_start", "spent_usd", "reserved_usd", "byok_spent_units")
    list_filter = ("scope", "interval")
    search_fields = ("scope_id",)
    readonly_fields = ("created_at",)


@admin.register(SpendReservation)
class SpendReservationAdmin(admin.ModelAdmin):
    list_display = ("id", "request_id", "amount_units", "created_at", "expires_at", "reaped_at")
    list_filter = (("reaped_at", admin.EmptyFieldListFilter),)
    search_fields = ("request_id", "id")
    readonly_fields = ("id", "created_at", "expires_at", "reaped_at", "counter_ids", "amount_units", "request_id")
