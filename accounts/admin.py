"""Django admin of organizations, users, workspaces, members and API keys."""

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin

from accounts import services
from accounts.admin_login import ThrottledAdminAuthenticationForm
from accounts.models import ApiKey, Organization, User, Workspace, WorkspaceMember

admin.site.login_form = ThrottledAdminAuthenticationForm  # sign-in throttling (accounts/admin_login.py)


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("name", "id", "default_workspace", "created_at")
    search_fields = ("name", "id")
    readonly_fields = ("id", "created_at", "updated_at")


@admin.register(User)
class GatewayUserAdmin(UserAdmin):
    list_display = ("username", "email", "organization", "org_role", "is_active", "is_staff")
    list_filter = ("org_role", "is_active", "is_staff", "organization")
    search_fields = ("username", "email", "id")
    fieldsets = (*UserAdmin.fieldsets, ("Organization", {"fields": ("organization", "org_role")}))
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Organization", {"fields": ("organization", "org_role")}))


class WorkspaceMemberInline(admin.TabularInline):
    model = WorkspaceMember
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "slug",
        "organization",
        "include_byok_in_budgets",
        "requests_per_minute",
        "tokens_per_minute",
        "response_cache_enabled",
        "created_at",
    )
    list_filter = ("organization", "response_cache_enabled")
    search_fields = ("name", "slug", "id")
    readonly_fields = ("id", "default_guardrail", "created_at", "updated_at")
    inlines = [WorkspaceMemberInline]

    @admin.display(description="default guardrail ID")
    def default_guardrail(self, workspace: Workspace):
        return workspace.default_guardrail_id


@admin.register(WorkspaceMember)
class WorkspaceMemberAdmin(admin.ModelAdmin):
    list_display = ("user", "workspace", "role", "created_at")
    list_filter = ("role", "workspace")
    search_fields = ("user__username", "user__email", "workspace__slug")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are created here with only name, workspace and flags; the raw key is shown once in a message."""

    list_display = (
        "name",
        "label",
        "organization",
        "workspace",
        "is_management",
        "disabled",
        "limit",
        "expires_at",
        "last_used_at",
    )
    list_filter = ("is_management", "disabled", "limit_reset", "organization")
    search_fields = ("name", "label", "hash")
    readonly_fields = ("id", "hash", "label", "organization", "last_used_at", "created_at", "updated_at")
    fields = (
        "name",
        "workspace",
        "creator",
        "is_management",
        "disabled",
        "limit",
        "limit_reset",
        "include_byok_in_limit",
        "requests_per_minute",
        "tokens_per_minute",
        "expires_at",
        "id",
        "hash",
        "label",
        "organization",
        "last_used_at",
        "created_at",
        "updated_at",
    )

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        created = services.api_key_create(
            organization=obj.workspace.organization,
            name=obj.name,
            workspace=obj.workspace,
            creator=obj.creator,
            is_management=obj.is_management,
            limit=obj.limit,
            limit_reset=obj.limit_reset,
            include_byok_in_limit=obj.include_byok_in_limit,
            expires_at=obj.expires_at,
            disabled=obj.disabled,
            requests_per_minute=obj.requests_per_minute,
            tokens_per_minute=obj.tokens_per_minute,
        )
        obj.pk = created.api_key.pk
        obj.hash, obj.label, obj.organization = (
            created.api_key.hash,
            created.api_key.label,
            created.api_key.organization,
        )
        obj._state.adding = False
        # Shown once through the messages framework, kept in the server-side session (MESSAGE_STORAGE), never
        # in a cookie.
        messages.warning(request, f"New API key (shown once, copy it now): {created.raw_key}")
