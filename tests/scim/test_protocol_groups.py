"""SCIM 2.0 Groups: members through POST, PUT and PATCH, filters, discovery endpoints."""

from __future__ import annotations

import pytest

from scim.models import ScimGroup, ScimGroupMember
from tests.conftest import make_org
from tests.scim.conftest import GROUP_SCHEMA, PATCH_SCHEMA, SCIM, ScimClient, assert_scim_error

pytestmark = pytest.mark.django_db


@pytest.fixture
def users(scim):
    return [scim.create_user(name, displayName=name.title())["id"] for name in ("ann", "ben", "cat")]


def member_ids(body: dict) -> set[str]:
    return {m["value"] for m in body.get("members", [])}


def test_create_group_with_members(scim, users):
    response = scim.post(
        "/Groups",
        {
            "schemas": [GROUP_SCHEMA],
            "displayName": "Engineering",
            "externalId": "g-1",
            "members": [{"value": users[0]}],
        },
    )
    assert response.status_code == 201
    body = response.json()
    assert body["displayName"] == "Engineering" and body["externalId"] == "g-1"
    assert body["members"] == [
        {"value": users[0], "$ref": f"http://testserver{SCIM}/Users/{users[0]}", "type": "User", "display": "Ann"}
    ]
    user = scim.get(f"/Users/{users[0]}").json()
    assert user["groups"] == [
        {"value": body["id"], "$ref": body["meta"]["location"], "display": "Engineering", "type": "direct"}
    ]


def test_unknown_member_is_invalid_value(scim, users, db):
    foreign = ScimClient(make_org("Elsewhere").management_key).create_user("zed")["id"]
    for value in ("not-a-uuid", foreign):
        body = {"schemas": [GROUP_SCHEMA], "displayName": "G", "members": [{"value": value}]}
        assert_scim_error(scim.post("/Groups", body), 400, "invalidValue")
    assert not ScimGroup.objects.exists()


def test_patch_members_add_remove_replace(scim, users):
    group = scim.create_group("Team", [users[0]])
    path = f"/Groups/{group['id']}"
    body = scim.patch(path, [{"op": "add", "path": "members", "value": [{"value": users[1]}, {"value": users[2]}]}])
    assert body.status_code == 200 and member_ids(body.json()) == set(users)
    body = scim.patch(path, [{"op": "remove", "path": f'members[value eq "{users[1]}"]'}]).json()
    assert member_ids(body) == {users[0], users[2]}
    body = scim.patch(path, [{"op": "replace", "path": "members", "value": [{"value": users[1]}]}]).json()
    assert member_ids(body) == {users[1]}
    body = scim.patch(path, [{"op": "replace", "value": {"displayName": "Renamed"}}]).json()
    assert body["displayName"] == "Renamed" and member_ids(body) == {users[1]}
    body = scim.patch(path, [{"op": "remove", "path": "members"}]).json()
    assert "members" not in body
    assert not ScimGroupMember.objects.exists()


def test_patch_add_unknown_member_changes_nothing(scim, users):
    group = scim.create_group("Team", [users[0]])
    response = scim.patch(
        f"/Groups/{group['id']}",
        [
            {"op": "add", "path": "members", "value": [{"value": users[1]}]},
            {"op": "add", "path": "members", "value": [{"value": "00000000-0000-0000-0000-000000000000"}]},
        ],
    )
    assert_scim_error(response, 400, "invalidValue")
    assert member_ids(scim.get(f"/Groups/{group['id']}").json()) == {users[0]}


def test_put_replaces_members(scim, users):
    group = scim.create_group("Team", users[:2])
    response = scim.put(
        f"/Groups/{group['id']}",
        {"schemas": [GROUP_SCHEMA], "displayName": "Team", "members": [{"value": users[2]}]},
    )
    assert response.status_code == 200
    assert member_ids(response.json()) == {users[2]}


def test_group_filters(scim, users):
    eng = scim.create_group("Engineering", users[:2], externalId="E")
    ops = scim.create_group("Operations", [users[2]], externalId="O")
    cases = [
        ('displayName eq "engineering"', {eng["id"]}),
        ('displayName sw "Op"', {ops["id"]}),
        ('displayName co "ing" or displayName co "tion"', {eng["id"], ops["id"]}),
        (f'members.value eq "{users[0]}"', {eng["id"]}),
        (f'members[value eq "{users[2]}"]', {ops["id"]}),
        (f'members.value eq "{users[1]}" and externalId eq "E"', {eng["id"]}),
        ('externalId eq "e"', set()),
    ]
    for expression, expected in cases:
        body = scim.query("/Groups", filter=expression).json()
        assert {r["id"] for r in body["Resources"]} == expected, expression
        assert body["totalResults"] == len(expected)


def test_delete_group(scim, users):
    group = scim.create_group("Gone", users)
    assert scim.delete(f"/Groups/{group['id']}").status_code == 204
    assert_scim_error(scim.get(f"/Groups/{group['id']}"), 404)
    assert "groups" not in scim.get(f"/Users/{users[0]}").json()


def test_discovery(scim):
    config = scim.get("/ServiceProviderConfig")
    assert config.status_code == 200 and config["Content-Type"] == "application/scim+json"
    body = config.json()
    assert body["patch"] == {"supported": True}
    assert body["filter"] == {"supported": True, "maxResults": 200}
    assert body["bulk"]["supported"] is False
    types = scim.get("/ResourceTypes").json()
    assert {r["id"]: r["endpoint"] for r in types["Resources"]} == {"User": "/Users", "Group": "/Groups"}
    assert scim.get("/ResourceTypes/Group").json()["schema"] == "urn:ietf:params:scim:schemas:core:2.0:Group"
    schemas = scim.get("/Schemas").json()
    assert {s["id"] for s in schemas["Resources"]} == {
        "urn:ietf:params:scim:schemas:core:2.0:User",
        "urn:ietf:params:scim:schemas:core:2.0:Group",
        "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User",
    }
    user_schema = scim.get("/Schemas/urn:ietf:params:scim:schemas:core:2.0:User").json()
    assert "userName" in {a["name"] for a in user_schema["attributes"]}
    assert_scim_error(scim.get("/Schemas/urn:nope"), 404)
    assert_scim_error(scim.post("/ServiceProviderConfig", {}), 405)


def test_entra_id_style_patches(scim, users):
    """Microsoft Entra ID removes members with a `value` and adds emails through an unmatched path filter."""
    group = scim.create_group("Team", users)
    response = scim.patch(
        f"/Groups/{group['id']}", [{"op": "Remove", "path": "members", "value": [{"value": users[0]}]}]
    )
    assert response.status_code == 200, response.content
    assert member_ids(response.json()) == set(users[1:])
    response = scim.patch(
        f"/Users/{users[0]}",
        [
            {"op": "Add", "path": 'emails[type eq "work"].value', "value": "ann@work.example.org"},
            {"op": "Replace", "path": "active", "value": "False"},
        ],
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["emails"] == [{"type": "work", "value": "ann@work.example.org"}]
    assert body["active"] is False


def test_members_left_out_when_not_returned(scim, users):
    group = scim.create_group("Team", users)
    assert "members" not in scim.get(f"/Groups/{group['id']}?excludedAttributes=members").json()
    assert "members" not in scim.get(f"/Groups/{group['id']}?attributes=displayName").json()
    assert member_ids(scim.get(f"/Groups/{group['id']}?attributes=members").json()) == set(users)
    assert member_ids(scim.get(f"/Groups/{group['id']}?attributes=members.value").json()) == set(users)
    listing = scim.query("/Groups", filter='displayName eq "Team"', excludedAttributes="members").json()
    assert listing["totalResults"] == 1 and "members" not in listing["Resources"][0]
    # a filter without a column still sees the members
    listing = scim.query("/Groups", filter='members[display eq "Ann"]', excludedAttributes="members").json()
    assert [r["id"] for r in listing["Resources"]] == [group["id"]]
    response = scim.request(
        "PATCH",
        f"/Groups/{group['id']}?excludedAttributes=members",
        {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "remove", "path": f'members[value eq "{users[0]}"]'}]},
    )
    assert response.status_code == 200 and "members" not in response.json()
    assert member_ids(scim.get(f"/Groups/{group['id']}").json()) == set(users[1:])


def test_member_display_follows_the_user_unless_the_provider_sent_one(scim, users):
    group = scim.create_group("Team", users[:1])
    scim.patch(f"/Groups/{group['id']}", [{"op": "replace", "path": "displayName", "value": "Team 2"}])
    scim.patch(f"/Users/{users[0]}", [{"op": "replace", "path": "displayName", "value": "Annie"}])
    assert scim.get(f"/Groups/{group['id']}").json()["members"][0]["display"] == "Annie"
    scim.patch(
        f"/Groups/{group['id']}", [{"op": "add", "path": "members", "value": [{"value": users[0], "display": "A."}]}]
    )
    assert scim.get(f"/Groups/{group['id']}").json()["members"][0]["display"] == "A."
