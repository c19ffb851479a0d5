"""Routes of the accounts app under /api/v1/."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from accounts.views import ApiKeyViewSet, CurrentKeyView, WorkspaceViewSet

router = SimpleRouter(trailing_slash=False)
router.register("keys", ApiKeyViewSet, basename="keys")
router.register("workspaces", WorkspaceViewSet, basename="workspaces")

urlpatterns = [
    path("key", CurrentKeyView.as_view(), name="key-current"),
    *router.urls,
]
