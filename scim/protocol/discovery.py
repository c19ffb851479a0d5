"""What the SCIM service announces (RFC 7644 §4): ServiceProviderConfig, ResourceTypes and Schemas,
described by scim2-models from the resource models the service serves."""

from __future__ import annotations

from functools import cache
from typing import Any

from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    Context,
    EnterpriseUser,
    ETag,
    Filter,
    Group,
    Patch,
    ResourceType,
    ScimProvider,
    ServiceProviderConfig,
    Sort,
    User,
)

from scim.protocol.resources import GroupResource, UserResource

MAX_RESULTS = 200
DOCUMENTATION_URI = "https://github.com/model-gateway/model-gateway/blob/main/docs/scim.md"


@cache
def provider() -> ScimProvider:
    config = ServiceProviderConfig(
        documentation_uri=DOCUMENTATION_URI,
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=MAX_RESULTS),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=False),
        authentication_schemes=[
            AuthenticationScheme(
                type="oauthbearertoken",
                name="Management API key",
                description="Authorization: Bearer <management key of the organization>",
                primary=True,
            )
        ],
    )
    resource_types = [ResourceType.from_resource(UserResource), ResourceType.from_resource(GroupResource)]
    return ScimProvider(models=[User, EnterpriseUser, Group], resource_types=resource_types, config=config)


def _dump(obj: Any, kind: str, location: str) -> dict[str, Any]:
    data = obj.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    data["meta"] = {"resourceType": kind, "location": location}
    return data


def service_provider_config(base_url: str) -> dict[str, Any]:
    return _dump(provider().config, "ServiceProviderConfig", f"{base_url}/ServiceProviderConfig")


def resource_types(base_url: str) -> dict[str, dict[str, Any]]:
    """Resource types by id."""
    return {rt.id: _dump(rt, "ResourceType", f"{base_url}/ResourceTypes/{rt.id}") for rt in provider().resource_types}


def schemas(base_url: str) -> dict[str, dict[str, Any]]:
    """Schemas by id (their URN)."""
    return {s.id: _dump(s, "Schema", f"{base_url}/Schemas/{s.id}") for s in provider().schemas}
