"""URL routes of the guardrails app, mounted under /api/v1/ by gateway_project/urls.py."""

from rest_framework.routers import SimpleRouter

from guardrails.views import GuardrailViewSet

router = SimpleRouter(trailing_slash=False)
router.register("guardrails", GuardrailViewSet, basename="guardrails")

urlpatterns = router.urls
