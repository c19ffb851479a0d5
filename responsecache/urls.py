"""URL routes of the response cache, mounted under /api/v1/ by gateway_project/urls.py."""

from rest_framework.routers import SimpleRouter

from responsecache.views import ResponseCacheViewSet

router = SimpleRouter(trailing_slash=False)
router.register("cache", ResponseCacheViewSet, basename="cache")

urlpatterns = router.urls
