"""Django admin of the response cache: entries are read-only (they are written by the data plane)."""

from django.contrib import admin

from responsecache.models import ResponseCacheEntry


@admin.register(ResponseCacheEntry)
class ResponseCacheEntryAdmin(admin.ModelAdmin):
    list_display = ("key", "model", "organization", "size", "created_at", "expires_at")
    list_filter = ("organization", "model")
    search_fields = ("key", "model")
    readonly_fields = ("organization", "key", "model", "data", "size", "created_at", "expires_at")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
