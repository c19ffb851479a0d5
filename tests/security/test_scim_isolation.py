"""The SCIM 2.0 service (/api/v1/scim/v2/, not in the OpenAPI document) is isolated too: another
organization's management key gets 404 for every user and group of the organization, in SCIM's own
error format, and neither sees them in lists and searches nor changes them."""

from __future__ import annotations

import pytest

from tests.conftest import make_org
from tests.scim.conftest import GROUP_SCHEMA, USER_SCHEMA, ScimClient, assert_scim_error

pytestmark = pytest.mark.django_db


def test_users_and_groups_of_another_organization_are_404_and_unchanged():
    owner, attacker = make_org("Owner"), make_org("Intruder")
    scim = ScimClient(owner.management_key)
    user = scim.create_user("victim-user")
    group = scim.create_group("victim-group", [user["id"]])
    intruder = ScimClient(attacker.management_key)
    for kind, resource, schema in (("Users", user, USER_SCHEMA), ("Groups", group, GROUP_SCHEMA)):
        path = f"/{kind}/{resource['id']}"
        before = scim.get(path).json()
        assert_scim_error(intruder.get(path), 404)
        assert_scim_error(intruder.put(path, {"schemas": [schema], "userName": "x", "displayName": "x"}), 404)
        patch = [{"op": "replace", "path": "active" if kind == "Users" else "displayName", "value": False}]
        assert_scim_error(intruder.patch(path, patch), 404)
        assert_scim_error(intruder.delete(path), 404)
        assert scim.get(path).json() == before
        listing = intruder.get(f"/{kind}").content.decode()
        assert resource["id"] not in listing
        search = intruder.post(f"/{kind}/.search", {"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"]})
        assert resource["id"] not in search.content.decode()
    assert scim.get(f"/Users/{user['id']}").json()["userName"] == "victim-user"
    assert scim.get(f"/Groups/{group['id']}").json()["displayName"] == "victim-group"
