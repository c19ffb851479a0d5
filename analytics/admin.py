"""The usage dashboard in the admin: one page for staff, charts drawn on the server as SVG (no script)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.template.response import TemplateResponse

from accounts.models import Organization
from analytics.dashboard import WINDOWS, dashboard_context
from analytics.models import UsageDashboard


@admin.register(UsageDashboard)
class UsageDashboardAdmin(admin.ModelAdmin):
    """Spend per day by model, requests and error rate, latency, top keys and workspaces, budgets against limits.

    `?organization=<id>` picks the organization (default: the first), `?days=7|30|90` the window (default 30)."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def changelist_view(self, request, extra_context=None):
        organizations = list(Organization.objects.order_by("created_at"))
        chosen = request.GET.get("organization")
        default = organizations[0] if organizations else None
        organization = next((o for o in organizations if str(o.id) == chosen), default)
        if chosen and (organization is None or str(organization.id) != chosen):
            messages.warning(request, f"No organization {chosen!r}: showing {organization}.")
        days_param = request.GET.get("days", "30")
        days = int(days_param) if days_param in {str(w) for w in WINDOWS} else 30
        if days_param != str(days):
            messages.warning(request, f"days must be one of {', '.join(map(str, WINDOWS))}; showing 30 days.")
        context = {
            **self.admin_site.each_context(request),
            "title": "Usage dashboard",
            "opts": self.model._meta,
            "organizations": organizations,
            "organization": organization,
            **(dashboard_context(organization, days) if organization else {"days": days, "windows": WINDOWS}),
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/analytics/dashboard.html", context)
