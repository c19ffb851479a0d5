"""Django admin of guardrails and their assignments."""

from django.contrib import admin

from guardrails.models import Guardrail, GuardrailKeyAssignment, GuardrailMemberAssignment


class KeyAssignmentInline(admin.TabularInline):
    model = GuardrailKeyAssignment
    fk_name = "guardrail"
    extra = 0
    raw_id_fields = ("api_key", "assigned_by")


class MemberAssignmentInline(admin.TabularInline):
    model = GuardrailMemberAssignment
    extra = 0
    raw_id_fields = ("user", "assigned_by")


@admin.register(Guardrail)
class GuardrailAdmin(admin.ModelAdmin):
    list_display = ("name", "id", "workspace", "is_default", "limit_usd", "reset_interval", "created_at", "updated_at")
    list_filter = ("is_default", "reset_interval", "enforce_zdr_other", "organization")
    search_fields = ("name", "id", "description", "workspace__name", "workspace__slug")
    readonly_fields = ("id", "created_at", "updated_at")
    raw_id_fields = ("organization", "workspace")
    inlines = [KeyAssignmentInline, MemberAssignmentInline]


@admin.register(GuardrailKeyAssignment)
class GuardrailKeyAssignmentAdmin(admin.ModelAdmin):
    list_display = ("guardrail", "api_key", "created_at")
    search_fields = ("guardrail__name", "api_key__hash", "api_key__name")
    list_filter = ("guardrail__organization",)
    raw_id_fields = ("guardrail", "api_key", "assigned_by")


@admin.register(GuardrailMemberAssignment)
class GuardrailMemberAssignmentAdmin(admin.ModelAdmin):
    list_display = ("guardrail", "user", "created_at")
    search_fields = ("guardrail__name", "user__username", "user__email", "user__id")
    list_filter = ("guardrail__organization",)
    raw_id_fields = ("guardrail", "user", "assigned_by")
