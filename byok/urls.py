"""URL routes of the byok app, mounted under /api/v1/ by gateway_project/urls.py."""

from rest_framework.routers import SimpleRouter

from byok.views import ProviderCredentialViewSet

router = SimpleRouter(trailing_slash=False)
router.register("byok", ProviderCredentialViewSet, basename="byok")

urlpatterns = router.urls
