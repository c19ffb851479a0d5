"""Django admin of the scim app."""

from django.contrib import admin

from scim.models import GroupMapping, MembershipGrant, ScimGroup, ScimGroupMember, ScimUser


@admin.register(ScimUser)
class ScimUserAdmin(admin.ModelAdmin):
    list_display = ("user_name", "display_name", "email", "external_id", "active", "organization", "updated_at")
    list_filter = ("active", "organization")
    search_fields = ("user_name", "display_name", "email", "external_id", "user__id")
    readonly_fields = ("created_at", "updated_at")
    raw_id_fields = ("user",)


class ScimGroupMemberInline(admin.TabularInline):
    model = ScimGroupMember
    extra = 0
    raw_id_fields = ("user",)


class GroupMappingInline(admin.TabularInline):
    model = GroupMapping
    extra = 0
    fields = ("workspace", "role", "created_at")
    readonly_fields = ("created_at",)


@admin.register(ScimGroup)
class ScimGroupAdmin(admin.ModelAdmin):
    list_display = ("display_name", "external_id", "organization", "created_at", "updated_at")
    list_filter = ("organization",)
    search_fields = ("display_name", "external_id", "id")
    readonly_fields = ("id", "created_at", "updated_at")
    inlines = [ScimGroupMemberInline, GroupMappingInline]


@admin.register(GroupMapping)
class GroupMappingAdmin(admin.ModelAdmin):
    list_display = ("id", "group", "workspace", "role", "organization", "created_at")
    list_filter = ("role", "organization")
    search_fields = ("id", "group__display_name", "workspace__name", "workspace__slug")
    readonly_fields = ("id", "created_at", "updated_at")


@admin.register(MembershipGrant)
class MembershipGrantAdmin(admin.ModelAdmin):
    list_display = ("membership", "manual_role", "created_at", "updated_at")
    list_filter = ("manual_role",)
    search_fields = ("membership__user__username", "membership__workspace__slug")
    readonly_fields = ("created_at", "updated_at")
