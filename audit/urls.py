"""URL routes of the audit app, mounted under /api/v1/ by gateway_project/urls.py."""

from rest_framework.routers import SimpleRouter

from audit.views import AuditLogViewSet

router = SimpleRouter(trailing_slash=False)
router.register("audit-log", AuditLogViewSet, basename="audit-log")

urlpatterns = router.urls
