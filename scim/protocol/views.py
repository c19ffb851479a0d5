"""SCIM 2.0 endpoints (RFC 7644) under /api/v1/scim/v2/: Users, Groups, their /.search, and discovery.

Requests and responses are parsed and written by scim2-models; the writes are the scim services.
These are plain Django views (not DRF): they speak `application/scim+json` and SCIM errors, not the
gateway's envelope, and are therefore not part of the OpenAPI document.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpResponse
from scim2_models import (
    Context,
    NotFoundException,
    PatchOp,
    ResponseParameters,
    SearchRequest,
)

from scim import services
from scim.protocol import discovery
from scim.protocol.http import ScimView, scim_response
from scim.selectors import GROUPS, GROUPS_WITHOUT_MEMBERS, USERS, Kind, scim_query

LIST_RESPONSE = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
# RFC 7644 §3.4.2 query parameters; any other query parameter is ignored.
QUERY_PARAMETERS = ("filter", "sortBy", "sortOrder", "startIndex", "count", "attributes", "excludedAttributes")

WRITES = {
    "User": (
        services.scim_user_create,
        services.scim_user_replace,
        services.scim_user_patch,
        services.scim_user_delete,
    ),
    "Group": (
        services.scim_group_create,
        services.scim_group_replace,
        services.scim_group_patch,
        services.scim_group_delete,
    ),
}


def list_response(resources: list[dict[str, Any]], *, total: int, start: int) -> HttpResponse:
    """A ListResponse message."""
    body = {"schemas": [LIST_RESPONSE], "totalResults": total, "startIndex": start, "itemsPerPage": len(resources)}
    body["Resources"] = resources
    return scim_response(body)


class ResourceMixin:
    kind: Kind | None = None

    def dump(self, resource, ctx: Context, params: ResponseParameters | None = None) -> dict[str, Any]:
        return resource.model_dump(scim_ctx=ctx, response_parameters=params)

    def read_kind(self, params: ResponseParameters | None) -> Kind:
        """The kind to read rows with: groups without their members when the response leaves them out."""
        if self.kind is not GROUPS or params is None:
            return self.kind
        names = {str(p).lower().rsplit(":", 1)[-1].split(".")[0] for p in params.attributes or []}
        excluded = {str(p).lower().rsplit(":", 1)[-1] for p in params.excluded_attributes or []}
        if "members" in excluded or (params.attributes and "members" not in names):
            return GROUPS_WITHOUT_MEMBERS
        return self.kind

    def response_parameters(self) -> ResponseParameters | None:
        query = self.request.GET
        raw = {k: query[k] for k in ("attributes", "excludedAttributes") if query.get(k)}
        if not raw:
            return None
        return ResponseParameters[self.kind.model].model_validate(raw)

    def row(self, resource_id: str, kind: Kind | None = None):
        """The organization's row of `resource_id`, or a SCIM 404."""
        try:
            key = uuid.UUID(resource_id)
        except ValueError:
            key = None
        row = None
        if key is not None:
            field = "user_id" if self.kind is USERS else "id"
            row = (kind or self.kind).queryset(self.principal.organization_id).filter(**{field: key}).first()
        if row is None:
            raise NotFoundException(detail=f"{self.kind.name} {resource_id} not found")
        return row

    def reloaded(self, row, kind: Kind | None = None):
        return self.row(str(row.pk), kind)

    def updated(self, row, ctx: Context) -> HttpResponse:
        """The response of a PUT or PATCH: the resource as it is now."""
        params = self.response_parameters()
        kind = self.read_kind(params)
        return scim_response(self.dump(kind.to_resource(self.reloaded(row, kind), self.base_url), ctx, params))

    def search(self, request: SearchRequest) -> HttpResponse:
        count = min(request.count if request.count is not None else discovery.MAX_RESULTS, discovery.MAX_RESULTS)
        start = request.start_index or 1
        params = ResponseParameters[self.kind.model](
            attributes=request.attributes, excluded_attributes=request.excluded_attributes
        )
        page = scim_query(
            kind=self.read_kind(params),
            organization_id=self.principal.organization_id,
            filter=request.filter,
            start_index=start,
            count=count,
            base_url=self.base_url,
        )
        return list_response(
            [self.dump(r, Context.SEARCH_RESPONSE, params) for r in page.resources], total=page.total, start=start
        )


class ResourceListView(ResourceMixin, ScimView):
    """GET /Users (query with filter, startIndex, count, attributes) and POST /Users; same for Groups."""

    http_method_names = ["get", "post"]

    def get(self, request):
        params = {k: request.GET[k] for k in QUERY_PARAMETERS if request.GET.get(k, "") != ""}
        return self.search(SearchRequest[self.kind.model].model_validate(params, scim_ctx=Context.SEARCH_REQUEST))

    def post(self, request):
        resource = self.kind.model.model_validate(self.body(), scim_ctx=Context.RESOURCE_CREATION_REQUEST)
        create = WRITES[self.kind.name][0]
        row = self.reloaded(create(organization_id=self.principal.organization_id, resource=resource))
        created = self.kind.to_resource(row, self.base_url)
        body = self.dump(created, Context.RESOURCE_CREATION_RESPONSE, self.response_parameters())
        return scim_response(body, status=201, headers={"Location": created.meta.location})


class ResourceSearchView(ResourceMixin, ScimView):
    """POST /Users/.search and /Groups/.search (RFC 7644 §3.4.3)."""

    http_method_names = ["post"]

    def post(self, request):
        return self.search(SearchRequest[self.kind.model].model_validate(self.body(), scim_ctx=Context.SEARCH_REQUEST))


class ResourceDetailView(ResourceMixin, ScimView):
    """GET, PUT, PATCH and DELETE /Users/{id} and /Groups/{id}."""

    def get(self, request, resource_id: str):
        params = self.response_parameters()
        kind = self.read_kind(params)
        resource = kind.to_resource(self.row(resource_id, kind), self.base_url)
        return scim_response(self.dump(resource, Context.RESOURCE_QUERY_RESPONSE, params))

    def put(self, request, resource_id: str):
        row = self.row(resource_id)
        resource = self.kind.model.model_validate(self.body(), scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST)
        WRITES[self.kind.name][1](**{self._arg: row, "resource": resource, "base_url": self.base_url})
        return self.updated(row, Context.RESOURCE_REPLACEMENT_RESPONSE)

    def patch(self, request, resource_id: str):
        row = self.row(resource_id)
        patch = PatchOp[self.kind.model].model_validate(self.body(), scim_ctx=Context.RESOURCE_PATCH_REQUEST)
        WRITES[self.kind.name][2](**{self._arg: row, "patch": patch, "base_url": self.base_url})
        return self.updated(row, Context.RESOURCE_PATCH_RESPONSE)

    def delete(self, request, resource_id: str):
        WRITES[self.kind.name][3](**{self._arg: self.row(resource_id)})
        return scim_response(None, status=204)

    @property
    def _arg(self) -> str:
        return "scim_user" if self.kind is USERS else "group"


class RootSearchView(ScimView):
    """POST /.search: one query over Users then Groups (RFC 7644 §3.4.3). A filter attribute a resource type
    does not have matches none of its resources."""

    http_method_names = ["post"]

    def post(self, request):
        search = SearchRequest.model_validate(self.body(), scim_ctx=Context.SEARCH_REQUEST)
        start = search.start_index or 1
        wanted = min(search.count if search.count is not None else discovery.MAX_RESULTS, discovery.MAX_RESULTS)
        total, resources, skip = 0, [], start - 1
        for kind in (USERS, GROUPS):
            query = dict(organization_id=self.principal.organization_id, filter=search.filter, base_url=self.base_url)
            found = scim_query(kind=kind, start_index=1, count=0, **query).total
            if skip < found and len(resources) < wanted:
                page = scim_query(kind=kind, start_index=skip + 1, count=wanted - len(resources), **query)
                resources.extend(page.resources)
            skip = max(0, skip - found)
            total += found
        params = ResponseParameters(attributes=search.attributes, excluded_attributes=search.excluded_attributes)
        return list_response(
            [r.model_dump(scim_ctx=Context.SEARCH_RESPONSE, response_parameters=params) for r in resources],
            total=total,
            start=start,
        )


class ServiceProviderConfigView(ScimView):
    http_method_names = ["get"]

    def get(self, request):
        return scim_response(discovery.service_provider_config(self.base_url))


class DiscoveryView(ScimView):
    """GET /ResourceTypes[/{id}] and /Schemas[/{id}]."""

    http_method_names = ["get"]
    collection = "ResourceTypes"

    def get(self, request, item_id: str | None = None):
        items = (discovery.resource_types if self.collection == "ResourceTypes" else discovery.schemas)(self.base_url)
        if item_id is not None:
            if item_id not in items:
                raise NotFoundException(detail=f"{self.collection}/{item_id} not found")
            return scim_response(items[item_id])
        return list_response(list(items.values()), total=len(items), start=1)


__all__ = [
    "GROUPS",
    "USERS",
    "DiscoveryView",
    "ResourceDetailView",
    "ResourceListView",
    "ResourceSearchView",
    "RootSearchView",
    "ServiceProviderConfigView",
]
