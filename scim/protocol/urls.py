"""Routes of the SCIM 2.0 service, mounted at /api/v1/scim/v2/ by scim/urls.py."""

from django.urls import path, re_path

from scim.protocol.http import NotFoundView
from scim.protocol.views import (
    GROUPS,
    USERS,
    DiscoveryView,
    ResourceDetailView,
    ResourceListView,
    ResourceSearchView,
    RootSearchView,
    ServiceProviderConfigView,
)

urlpatterns = [
    path("", NotFoundView.as_view(), name="scim-v2-root"),
    path("ServiceProviderConfig", ServiceProviderConfigView.as_view(), name="scim-v2-spc"),
    path("ResourceTypes", DiscoveryView.as_view(collection="ResourceTypes"), name="scim-v2-resource-types"),
    path("ResourceTypes/<str:item_id>", DiscoveryView.as_view(collection="ResourceTypes")),
    path("Schemas", DiscoveryView.as_view(collection="Schemas"), name="scim-v2-schemas"),
    path("Schemas/<str:item_id>", DiscoveryView.as_view(collection="Schemas")),
    path(".search", RootSearchView.as_view()),
    path("Users", ResourceListView.as_view(kind=USERS), name="scim-v2-users"),
    path("Users/.search", ResourceSearchView.as_view(kind=USERS)),
    path("Users/<str:resource_id>", ResourceDetailView.as_view(kind=USERS), name="scim-v2-user"),
    path("Groups", ResourceListView.as_view(kind=GROUPS), name="scim-v2-groups"),
    path("Groups/.search", ResourceSearchView.as_view(kind=GROUPS)),
    path("Groups/<str:resource_id>", ResourceDetailView.as_view(kind=GROUPS), name="scim-v2-group"),
    re_path(r"^.*$", NotFoundView.as_view()),
]
