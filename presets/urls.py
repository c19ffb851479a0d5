"""URL routes of the presets app, mounted under /api/v1/ by gateway_project/urls.py."""

from rest_framework.routers import SimpleRouter

from presets.views import PresetViewSet

router = SimpleRouter(trailing_slash=False)
router.register("presets", PresetViewSet, basename="presets")

urlpatterns = router.urls
