"""Django admin of presets: status editable in the list and the form, versions shown read-only."""

from django.contrib import admin

from presets import services
from presets.models import Preset, PresetVersion


class PresetVersionInline(admin.TabularInline):
    model = PresetVersion
    extra = 0
    can_delete = False
    fields = ("version", "format", "config", "system_prompt", "creator_id", "created_at")
    readonly_fields = fields
    ordering = ("-version",)

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Preset)
class PresetAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "status", "organization", "workspace", "designated_version", "updated_at")
    list_editable = ("status",)
    list_filter = ("status", "organization")
    search_fields = ("slug", "name", "id")
    fields = (
        "id",
        "slug",
        "name",
        "description",
        "status",
        "status_updated_at",
        "organization",
        "workspace",
        "creator_user_id",
        "designated_version",
        "created_at",
        "updated_at",
    )
    readonly_fields = (
        "id",
        "slug",
        "status_updated_at",
        "organization",
        "workspace",
        "creator_user_id",
        "designated_version",
        "created_at",
        "updated_at",
    )
    inlines = [PresetVersionInline]

    def has_add_permission(self, request) -> bool:
        return False  # presets are created through POST /presets/{slug}/responses or /messages

    def save_model(self, request, obj, form, change):
        if change and "status" in form.changed_data:
            obj.status_updated_at = services.status_timestamp()
        super().save_model(request, obj, form, change)


@admin.register(PresetVersion)
class PresetVersionAdmin(admin.ModelAdmin):
    list_display = ("preset", "version", "format", "creator_id", "created_at")
    list_filter = ("format",)
    search_fields = ("preset__slug", "id")
    readonly_fields = ("id", "preset", "version", "format", "config", "system_prompt", "creator_id", "created_at")
    fields = readonly_fields

    def has_add_permission(self, request) -> bool:
        return False
