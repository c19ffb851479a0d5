"""Routes of the accounts app under /api/v1/."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from accounts.credits import CreditsView
from accounts.views import ApiKeyViewSet, CurrentKeyView, OrganizationMemberViewSet, WorkspaceViewSet

router = SimpleRouter(trailing_slash=False)
router.register("keys", ApiKeyViewSet, basename="keys")
router.register("workspaces", WorkspaceViewSet, basename="workspaces")
router.register("organization/members", OrganizationMemberViewSet, basename="organization-members")

urlpatterns = [
    path("key", CurrentKeyView.as_view(), name="key-current"),
    path("credits", CreditsView.as_view(), name="credits"),
    *router.urls,
]
