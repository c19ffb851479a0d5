"""POST/GET/PATCH/DELETE /api/v1/scim/group-mappings, GET /api/v1/scim/groups, and the workspace
memberships that follow the identity provider's groups."""

from __future__ import annotations

import uuid

import pytest

from accounts.models import WorkspaceMember
from accounts.services import user_create, workspace_create, workspace_members_add
from tests.scim.conftest import ScimClient

pytestmark = pytest.mark.django_db

MAPPINGS = "/api/v1/scim/group-mappings"


@pytest.fixture
def ws(org):
    return workspace_create(organization=org.organization, name="Research")


@pytest.fixture
def people(scim):
    return [scim.create_user(name)["id"] for name in ("ann", "ben", "cat")]


def roles(workspace) -> dict[str, str]:
    return {str(m.user_id): m.role for m in WorkspaceMember.objects.filter(workspace=workspace)}


def create_mapping(api, group_id, workspace, role="member"):
    return api.post(
        MAPPINGS, {"scim_group_id": str(group_id), "workspace_id": str(workspace.id), "role": role}, format="json"
    )


def test_create_mapping_applies_it_to_current_members(api, scim, org, ws, people):
    group = scim.create_group("eng", people[:2])
    response = create_mapping(api, group["id"], ws)
    assert response.status_code == 201
    data = response.json()["data"]
    assert set(data) == {"id", "organization_id", "scim_group_id", "workspace_id", "role", "created_at", "updated_at"}
    assert data["organization_id"] == str(org.organization.id)
    assert (data["scim_group_id"], data["workspace_id"], data["role"]) == (group["id"], str(ws.id), "member")
    assert data["created_at"].endswith("Z") and len(data["created_at"]) == 24
    assert roles(ws) == {people[0]: "member", people[1]: "member"}


def test_same_mapping_same_role_reapplies(api, scim, ws, people):
    group = scim.create_group("eng", people[:1])
    first = create_mapping(api, group["id"], ws).json()["data"]
    WorkspaceMember.objects.filter(workspace=ws).delete()  # membership lost outside SCIM
    again = create_mapping(api, group["id"], ws)
    assert again.status_code == 201
    assert again.json()["data"]["id"] == first["id"]
    assert roles(ws) == {people[0]: "member"}


def test_same_mapping_other_role_is_409(api, scim, ws, people):
    group = scim.create_group("eng", people[:1])
    create_mapping(api, group["id"], ws, "member")
    response = create_mapping(api, group["id"], ws, "admin")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == 409
    assert roles(ws) == {people[0]: "member"}


def test_create_validation_and_404s(api, scim, ws, other_org):
    group = scim.create_group("eng")
    response = api.post(MAPPINGS, {"scim_group_id": group["id"], "workspace_id": str(ws.id)}, format="json")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "role"
    response = create_mapping(api, group["id"], ws, "owner")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "role"
    response = api.post(MAPPINGS, {"scim_group_id": "x", "workspace_id": str(ws.id), "role": "member"}, format="json")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "scim_group_id"
    assert create_mapping(api, uuid.uuid4(), ws).status_code == 404
    assert create_mapping(api, group["id"], other_org.workspace).status_code == 404
    foreign_group = ScimClient(other_org.management_key).create_group("theirs")
    assert create_mapping(api, foreign_group["id"], ws).status_code == 404


def test_management_key_required(org, scim, ws):
    group = scim.create_group("eng")
    response = org.client(org.inference_key).post(
        MAPPINGS, {"scim_group_id": group["id"], "workspace_id": str(ws.id), "role": "member"}, format="json"
    )
    assert response.status_code == 403
    assert org.client("nope").get(MAPPINGS).status_code == 401


def test_list_get_patch(api, scim, ws, org, other_org, people):
    eng = scim.create_group("eng", people[:1])
    ops = scim.create_group("ops")
    m1 = create_mapping(api, eng["id"], ws).json()["data"]
    m2 = create_mapping(api, ops["id"], org.workspace, "admin").json()["data"]
    listing = api.get(MAPPINGS).json()
    assert listing["total_count"] == 2 and [m["id"] for m in listing["data"]] == [m1["id"], m2["id"]]
    assert [m["id"] for m in api.get(MAPPINGS, {"workspace_id": str(ws.id)}).json()["data"]] == [m1["id"]]
    assert [m["id"] for m in api.get(MAPPINGS, {"scim_group_id": ops["id"]}).json()["data"]] == [m2["id"]]
    assert api.get(MAPPINGS, {"limit": 1, "offset": 1}).json()["data"][0]["id"] == m2["id"]
    assert api.get(f"{MAPPINGS}/{m1['id']}").json()["data"] == m1
    assert other_org.client().get(f"{MAPPINGS}/{m1['id']}").status_code == 404
    response = api.patch(f"{MAPPINGS}/{m1['id']}", {"role": "admin"}, format="json")
    assert response.status_code == 200 and response.json()["data"]["role"] == "admin"
    assert roles(ws) == {people[0]: "admin"}
    assert api.patch(f"{MAPPINGS}/{m1['id']}", {"role": "boss"}, format="json").status_code == 400


def test_groups_listing(api, scim, ws, people, other_org):
    eng = scim.create_group("eng", people, externalId="okta-1")
    create_mapping(api, eng["id"], ws)
    ScimClient(other_org.management_key).create_group("theirs")
    body = api.get("/api/v1/scim/groups").json()
    assert body["total_count"] == 1
    (group,) = body["data"]
    assert (group["id"], group["display_name"], group["external_id"]) == (eng["id"], "eng", "okta-1")
    assert (group["member_count"], group["mapping_count"]) == (3, 1)
    assert api.get(f"/api/v1/scim/groups/{eng['id']}").json()["data"]["id"] == eng["id"]


def test_membership_follows_the_group_both_ways(api, scim, ws, people):
    group = scim.create_group("eng", people[:1])
    create_mapping(api, group["id"], ws)
    path = f"/Groups/{group['id']}"
    scim.patch(path, [{"op": "add", "path": "members", "value": [{"value": people[1]}]}])
    assert roles(ws) == {people[0]: "member", people[1]: "member"}
    scim.patch(path, [{"op": "remove", "path": f'members[value eq "{people[0]}"]'}])
    assert roles(ws) == {people[1]: "member"}
    scim.put(path, {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "eng"})
    assert roles(ws) == {}


def test_two_groups_give_the_higher_role(api, scim, ws, people):
    members = scim.create_group("members", people[:2])
    admins = scim.create_group("admins", people[:1])
    create_mapping(api, members["id"], ws, "member")
    create_mapping(api, admins["id"], ws, "admin")
    assert roles(ws) == {people[0]: "admin", people[1]: "member"}
    scim.patch(f"/Groups/{admins['id']}", [{"op": "add", "path": "members", "value": [{"value": people[1]}]}])
    assert roles(ws) == {people[0]: "admin", people[1]: "admin"}
    scim.patch(f"/Groups/{admins['id']}", [{"op": "remove", "path": "members"}])
    assert roles(ws) == {people[0]: "member", people[1]: "member"}  # still held by the other mapping


def test_manual_membership_is_never_removed(api, scim, org, ws, people):
    manual = user_create(organization=org.organization, username="manual-admin")
    group = scim.create_group("eng", people[:1])
    workspace_members_add(workspace=ws, user_ids=[people[0]], role="member")
    create_mapping(api, group["id"], ws, "admin")
    assert roles(ws)[people[0]] == "admin"  # the mapping raises it
    scim.patch(f"/Groups/{group['id']}", [{"op": "remove", "path": "members"}])
    assert roles(ws) == {people[0]: "member"}  # back to the manual role, not removed
    workspace_members_add(workspace=ws, user_ids=[manual.id], role="admin")
    scim.delete(f"/Groups/{group['id']}")
    assert roles(ws) == {people[0]: "member", str(manual.id): "admin"}


def test_delete_requires_keep_members(api, scim, ws, people):
    group = scim.create_group("eng", people[:1])
    mapping = create_mapping(api, group["id"], ws).json()["data"]
    response = api.delete(f"{MAPPINGS}/{mapping['id']}")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "keep_members"
    assert api.delete(f"{MAPPINGS}/{mapping['id']}?keep_members=maybe").status_code == 400
    assert api.get(f"{MAPPINGS}/{mapping['id']}").status_code == 200


def test_delete_keep_members_false_removes_what_it_granted(api, scim, org, ws, people):
    eng = scim.create_group("eng", people[:2])
    admins = scim.create_group("admins", people[1:2])
    workspace_members_add(workspace=ws, user_ids=[people[2]], role="member")  # manual, not in the group
    mapping = create_mapping(api, eng["id"], ws, "member").json()["data"]
    create_mapping(api, admins["id"], ws, "admin")
    response = api.delete(f"{MAPPINGS}/{mapping['id']}?keep_members=false")
    assert response.status_code == 200 and response.json() == {"deleted": True}
    assert roles(ws) == {people[1]: "admin", people[2]: "member"}
    assert api.get(f"{MAPPINGS}/{mapping['id']}").status_code == 404


def test_delete_keep_members_true_keeps_them_for_good(api, scim, ws, people):
    group = scim.create_group("eng", people[:2])
    mapping = create_mapping(api, group["id"], ws, "admin").json()["data"]
    response = api.delete(f"{MAPPINGS}/{mapping['id']}?keep_members=true")
    assert response.status_code == 200 and response.json() == {"deleted": True}
    assert roles(ws) == {people[0]: "admin", people[1]: "admin"}
    scim.patch(f"/Groups/{group['id']}", [{"op": "remove", "path": "members"}])
    assert roles(ws) == {people[0]: "admin", people[1]: "admin"}  # no longer managed by SCIM


def test_deleting_a_user_removes_mapped_memberships(api, scim, ws, people):
    group = scim.create_group("eng", people[:2])
    create_mapping(api, group["id"], ws)
    scim.delete(f"/Users/{people[0]}")
    assert roles(ws) == {people[1]: "member"}


def test_group_delete_removes_its_mappings_and_memberships(api, scim, ws, people):
    group = scim.create_group("eng", people[:1])
    mapping = create_mapping(api, group["id"], ws).json()["data"]
    scim.delete(f"/Groups/{group['id']}")
    assert roles(ws) == {}
    assert api.get(f"{MAPPINGS}/{mapping['id']}").status_code == 404


def test_failed_group_change_leaves_memberships_untouched(api, scim, ws, people):
    group = scim.create_group("eng", people[:1])
    create_mapping(api, group["id"], ws)
    response = scim.patch(
        f"/Groups/{group['id']}",
        [
            {"op": "add", "path": "members", "value": [{"value": people[1]}]},
            {"op": "remove", "path": f'members[value eq "{people[0]}"]'},
            {"op": "replace", "path": "id", "value": "x"},
        ],
    )
    assert response.status_code == 400
    assert roles(ws) == {people[0]: "member"}


def test_other_org_cannot_see_groups(api, other_org, scim):
    group = scim.create_group("eng")
    assert other_org.client().get(f"/api/v1/scim/groups/{group['id']}").status_code == 404
    assert other_org.client().get("/api/v1/scim/groups").json() == {"data": [], "total_count": 0}


def test_mixed_patch_goes_through_the_whole_resource_and_still_propagates(api, scim, ws, people):
    group = scim.create_group("eng", people[:1])
    create_mapping(api, group["id"], ws)
    response = scim.patch(
        f"/Groups/{group['id']}",
        [
            {"op": "add", "path": "members", "value": [{"value": people[2], "display": "Cat"}]},
            {"op": "replace", "path": "displayName", "value": "Engineering"},
            {"op": "remove", "path": f'members[value eq "{people[0]}"]'},
        ],
    )
    assert response.status_code == 200
    body = response.json()
    assert body["displayName"] == "Engineering"
    assert body["members"] == [
        {
            "value": people[2],
            "display": "Cat",
            "type": "User",
            "$ref": f"http://testserver/api/v1/scim/v2/Users/{people[2]}",
        }
    ]
    assert roles(ws) == {people[2]: "member"}


def test_member_only_patch_updates_last_modified(scim, people):
    group = scim.create_group("eng")
    before = group["meta"]["lastModified"]
    body = scim.patch(f"/Groups/{group['id']}", [{"op": "add", "path": "members", "value": [{"value": people[0]}]}])
    assert body.json()["meta"]["lastModified"] > before
