"""URL routes of the analytics app, mounted under /api/v1/ by gateway_project/urls.py."""

from rest_framework.routers import SimpleRouter

from analytics.views import ActivityViewSet, UsageViewSet

router = SimpleRouter(trailing_slash=False)
router.register("analytics/usage", UsageViewSet, basename="analytics-usage")
router.register("activity", ActivityViewSet, basename="activity")

urlpatterns = router.urls
