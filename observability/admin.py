"""Django admin of destinations and of the outbox (dead rows with their last error, and a retry action)."""

from django.contrib import admin, messages

from observability import services
from observability.models import Destination, OutboxEntry
from observability.serializers import masked_config


@admin.register(Destination)
class DestinationAdmin(admin.ModelAdmin):
    """Destinations are managed through the API (secrets are encrypted); the admin shows them read-only."""

    list_display = ("name", "type", "workspace", "enabled", "sampling_rate", "privacy_mode", "deleted_at", "created_at")
    list_filter = ("type", "enabled", "privacy_mode")
    search_fields = ("name", "id", "workspace__slug")
    readonly_fields = ("masked_config",)
    exclude = ("config", "secret_config")

    @admin.display(description="config (secrets masked)")
    def masked_config(self, obj):
        return masked_config(obj) if obj.pk else {}

    def has_add_permission(self, request):
        return False


@admin.register(OutboxEntry)
class OutboxEntryAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "destination",
        "status",
        "attempts",
        "last_status_code",
        "short_error",
        "next_attempt_at",
        "created_at",
        "delivered_at",
    )
    list_filter = ("status", "destination__type")
    search_fields = ("id", "generation_id", "destination__name", "last_error")
    readonly_fields = [f.name for f in OutboxEntry._meta.fields]
    actions = ["retry"]

    @admin.display(description="last error")
    def short_error(self, obj):
        return obj.last_error[:120]

    @admin.action(description="Retry delivery of the selected rows")
    def retry(self, request, queryset):
        count = services.outbox_entry_retry(entries=list(queryset))
        self.message_user(request, f"{count} row(s) queued for delivery again", messages.SUCCESS)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
