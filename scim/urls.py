"""URL routes of the scim app, mounted under /api/v1/ by gateway_project/urls.py.

/api/v1/scim/group-mappings and /api/v1/scim/groups are management endpoints (gateway envelope);
/api/v1/scim/v2/ is the SCIM 2.0 service the identity provider talks to (application/scim+json)."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from scim.views import GroupMappingViewSet, ScimGroupViewSet

router = SimpleRouter(trailing_slash=False)
router.register("scim/group-mappings", GroupMappingViewSet, basename="scim-group-mappings")
router.register("scim/groups", ScimGroupViewSet, basename="scim-groups")

urlpatterns = [
    path("scim/v2/", include("scim.protocol.urls")),
    *router.urls,
]
