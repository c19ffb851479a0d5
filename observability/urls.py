"""URL routes of the observability app, mounted under /api/v1/ by gateway_project/urls.py."""

from rest_framework.routers import SimpleRouter

from observability.views import DestinationViewSet

router = SimpleRouter(trailing_slash=False)
router.register("observability/destinations", DestinationViewSet, basename="observability-destinations")

urlpatterns = router.urls
