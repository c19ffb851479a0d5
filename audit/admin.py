"""The audit log in the Django admin: read-only, filterable, searchable."""

from django.contrib import admin

from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = (
        "created_at",
        "source",
        "actor",
        "action",
        "resource_type",
        "resource_label",
        "count",
        "organization_id",
    )
    list_filter = ("source", "action", "resource_type", "actor_type")
    search_fields = ("actor", "actor_name", "resource_id", "resource_label", "request_id")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    readonly_fields = [f.name for f in AuditEvent._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
