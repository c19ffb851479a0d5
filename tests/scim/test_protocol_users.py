"""SCIM 2.0 Users: create, read, filter, paginate, replace, patch, delete, errors and authentication."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import httpx
import pytest
from asgiref.sync import async_to_sync

from accounts.middleware import KeyAuthMiddleware
from accounts.models import ApiKey, User
from accounts.services import api_key_create
from gateway_project.api.errors import GatewayError
from inference.pipeline.context import Context
from scim.models import ScimUser
from tests.conftest import make_org
from tests.scim.conftest import ERROR_SCHEMA, SCIM, USER_SCHEMA, ScimClient, assert_scim_error

pytestmark = pytest.mark.django_db

ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"


def test_create_user_makes_an_organization_member(scim, org):
    response = scim.post(
        "/Users",
        {
            "schemas": [USER_SCHEMA, ENTERPRISE],
            "userName": "bjensen@example.com",
            "externalId": "00u1",
            "name": {"givenName": "Barbara", "familyName": "Jensen"},
            "displayName": "Babs Jensen",
            "emails": [{"value": "home@example.com"}, {"value": "bjensen@example.com", "primary": True}],
            "password": "never-returned",
            ENTERPRISE: {"employeeNumber": "701984"},
        },
    )
    assert response.status_code == 201
    assert response["Content-Type"] == "application/scim+json"
    body = response.json()
    assert response["Location"] == body["meta"]["location"] == f"http://testserver{SCIM}/Users/{body['id']}"
    assert body["meta"]["resourceType"] == "User"
    assert body["userName"] == "bjensen@example.com"
    assert body["externalId"] == "00u1"
    assert body[ENTERPRISE] == {"employeeNumber": "701984"}
    assert "password" not in body
    user = User.objects.get(pk=body["id"])
    assert user.organization_id == org.organization.id
    assert (user.email, user.first_name, user.last_name, user.is_active) == (
        "bjensen@example.com",
        "Barbara",
        "Jensen",
        True,
    )
    assert "never-returned" not in str(ScimUser.objects.get(pk=user.pk).attributes)


def test_get_user_and_attributes_selection(scim):
    created = scim.create_user("alice", displayName="Alice", title="Engineer")
    body = scim.get(f"/Users/{created['id']}").json()
    assert (body["displayName"], body["title"]) == ("Alice", "Engineer")
    only = scim.get(f"/Users/{created['id']}?attributes=displayName").json()
    assert only["displayName"] == "Alice" and "title" not in only and only["id"] == created["id"]
    without = scim.get(f"/Users/{created['id']}?excludedAttributes=title").json()
    assert "title" not in without and without["displayName"] == "Alice"


def test_user_name_is_unique_case_insensitively(scim):
    scim.create_user("Carol")
    response = scim.post("/Users", {"schemas": [USER_SCHEMA], "userName": "carol"})
    assert_scim_error(response, 409, "uniqueness")


def test_same_user_name_in_two_organizations(scim, db):
    scim.create_user("dave")
    other = ScimClient(make_org("Other").management_key)
    other.create_user("dave")
    assert ScimUser.objects.filter(user_name="dave").count() == 2


@pytest.fixture
def people(scim):
    return {
        name: scim.create_user(name, externalId=ext, displayName=display)
        for name, ext, display in [
            ("alice@example.com", "EXT-1", "Alice Liddell"),
            ("bob@example.com", "EXT-2", "Bob Builder"),
            ("carol@corp.test", "ext-3", "Carol Danvers"),
        ]
    }


@pytest.mark.parametrize(
    "expression, expected",
    [
        ('userName eq "ALICE@example.com"', {"alice@example.com"}),
        ('userName co "example"', {"alice@example.com", "bob@example.com"}),
        ('userName sw "car"', {"carol@corp.test"}),
        ('userName ew ".test"', {"carol@corp.test"}),
        ('externalId eq "EXT-2"', {"bob@example.com"}),
        ('externalId eq "ext-2"', set()),  # externalId is caseExact
        ('displayName co "builder"', {"bob@example.com"}),
        ('userName sw "alice" or displayName sw "carol"', {"alice@example.com", "carol@corp.test"}),
        ('userName co "example" and externalId eq "EXT-1"', {"alice@example.com"}),
        ('not (userName co "example")', {"carol@corp.test"}),
        ('userName ne "bob@example.com" and (externalId sw "EXT" or displayName eq "nobody")', {"alice@example.com"}),
        ("externalId pr", {"alice@example.com", "bob@example.com", "carol@corp.test"}),
        ('title eq "nope"', set()),  # no column: evaluated by scim2-models
    ],
)
def test_user_filters(scim, people, expression, expected):
    response = scim.query("/Users", filter=expression)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:ListResponse"]
    assert {r["userName"] for r in body["Resources"]} == expected
    assert body["totalResults"] == len(expected)


def test_filter_on_an_attribute_without_a_column_uses_scim2_models(scim, people):
    scim.create_user("erin@example.com", title="CTO", emails=[{"value": "erin@work.example.org", "type": "work"}])
    found = scim.query("/Users", filter='emails[type eq "work" and value co "@work"]').json()
    assert [r["userName"] for r in found["Resources"]] == ["erin@example.com"]


def test_invalid_filter_is_a_scim_400(scim, people):
    assert_scim_error(scim.query("/Users", filter="userName eq"), 400, "invalidFilter")
    assert_scim_error(scim.query("/Users", filter='nosuch eq "x"'), 400, "invalidFilter")
    assert_scim_error(scim.query("/Users", filter='userName gt true and active co "x"'), 400, "invalidFilter")


def test_pagination_with_start_index_and_count(scim):
    ids = [scim.create_user(f"user{i}")["id"] for i in range(5)]
    page = scim.get("/Users?startIndex=2&count=2").json()
    assert (page["totalResults"], page["startIndex"], page["itemsPerPage"]) == (5, 2, 2)
    assert [r["id"] for r in page["Resources"]] == ids[1:3]
    last = scim.get("/Users?startIndex=5&count=10").json()
    assert [r["id"] for r in last["Resources"]] == ids[4:]
    none = scim.get("/Users?count=0").json()
    assert (none["totalResults"], none["Resources"]) == (5, [])
    assert scim.get("/Users?count=2&utm_source=idp").json()["itemsPerPage"] == 2  # unknown parameters ignored
    assert_scim_error(scim.get("/Users?startIndex=abc"), 400, "invalidValue")
    capped = scim.get("/Users?count=5000").json()
    assert capped["itemsPerPage"] == 5
    floor = scim.get("/Users?startIndex=0&count=1").json()
    assert floor["startIndex"] == 1 and [r["id"] for r in floor["Resources"]] == ids[:1]


def test_search_endpoint(scim, people):
    response = scim.post(
        "/Users/.search",
        {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
            "filter": 'userName sw "bob"',
            "attributes": ["userName"],
        },
    )
    assert response.status_code == 200
    (resource,) = response.json()["Resources"]
    assert resource["userName"] == "bob@example.com" and "displayName" not in resource


def test_put_replaces_the_user(scim, people):
    alice = people["alice@example.com"]
    response = scim.put(
        f"/Users/{alice['id']}",
        {"schemas": [USER_SCHEMA], "userName": "alice@new.test", "nickName": "Al"},
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["userName"], body["nickName"]) == ("alice@new.test", "Al")
    assert "displayName" not in body and "externalId" not in body
    assert scim.get('/Users?filter=userName eq "alice@example.com"').json()["totalResults"] == 0


def test_patch_add_replace_remove(scim, people):
    bob = people["bob@example.com"]
    path = f"/Users/{bob['id']}"
    response = scim.patch(
        path,
        [
            {"op": "add", "path": "emails", "value": [{"value": "bob@work.example.org", "type": "work"}]},
            {"op": "replace", "path": "displayName", "value": "Robert"},
            {"op": "add", "value": {"title": "Builder"}},
        ],
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["displayName"], body["title"]) == ("Robert", "Builder")
    assert body["emails"] == [{"value": "bob@work.example.org", "type": "work"}]
    body = scim.patch(path, [{"op": "remove", "path": "title"}, {"op": "remove", "path": 'emails[type eq "work"]'}])
    body = body.json()
    assert "title" not in body and "emails" not in body
    assert ScimUser.objects.get(pk=bob["id"]).display_name == "Robert"


def test_patch_errors(scim, people):
    path = f"/Users/{people['bob@example.com']['id']}"
    assert_scim_error(scim.patch(path, [{"op": "jump", "path": "title", "value": "x"}]), 400, "invalidValue")
    assert_scim_error(scim.patch(path, [{"op": "replace", "path": "id", "value": "x"}]), 400, "mutability")
    assert_scim_error(scim.patch(path, [{"op": "replace", "path": "groups", "value": []}]), 400, "mutability")
    assert_scim_error(scim.patch(path, [{"op": "remove", "path": "userName"}]), 400, "mutability")
    assert_scim_error(scim.patch(path, [{"op": "add", "path": "nosuch", "value": 1}]), 400, "invalidPath")
    assert scim.get(path).json()["displayName"] == "Bob Builder"


def test_deactivation_disables_the_users_keys_and_reactivation_restores_them(scim, org):
    created = scim.create_user("frank")
    user = User.objects.get(pk=created["id"])
    key = api_key_create(organization=org.organization, name="franks", creator=user).api_key
    already_off = api_key_create(organization=org.organization, name="off", creator=user, disabled=True).api_key
    response = scim.patch(f"/Users/{created['id']}", [{"op": "replace", "value": {"active": False}}])
    assert response.json()["active"] is False
    key.refresh_from_db()
    user.refresh_from_db()
    assert key.disabled is True and user.is_active is False
    assert ApiKey.objects.get(hash=org.management_hash).disabled is False  # another creator's key
    scim.patch(f"/Users/{created['id']}", [{"op": "replace", "path": "active", "value": True}])
    key.refresh_from_db()
    already_off.refresh_from_db()
    user.refresh_from_db()
    assert key.disabled is False and already_off.disabled is True and user.is_active is True


def test_deactivated_users_key_is_refused(scim, org):
    created = scim.create_user("gina")
    user = User.objects.get(pk=created["id"])
    raw = api_key_create(organization=org.organization, name="g", creator=user, is_management=True).raw_key
    assert ScimClient(raw).get("/Users").status_code == 200
    scim.put(f"/Users/{created['id']}", {"schemas": [USER_SCHEMA], "userName": "gina", "active": False})
    assert_scim_error(ScimClient(raw).get("/Users"), 401)


def test_delete_user(scim, org):
    created = scim.create_user("hank")
    user = User.objects.get(pk=created["id"])
    key = api_key_create(organization=org.organization, name="h", creator=user).api_key
    response = scim.delete(f"/Users/{created['id']}")
    assert response.status_code == 204 and response.content == b""
    assert_scim_error(scim.get(f"/Users/{created['id']}"), 404)
    assert_scim_error(scim.delete(f"/Users/{created['id']}"), 404)
    user.refresh_from_db()
    key.refresh_from_db()
    assert user.is_active is False and key.disabled is True


def test_unknown_and_foreign_ids_are_404(scim, db):
    assert_scim_error(scim.get("/Users/not-a-uuid"), 404)
    foreign = ScimClient(make_org("Else").management_key).create_user("ivy")
    assert_scim_error(scim.get(f"/Users/{foreign['id']}"), 404)
    assert_scim_error(scim.patch(f"/Users/{foreign['id']}", [{"op": "replace", "path": "title", "value": "x"}]), 404)


def test_invalid_bodies(scim):
    assert_scim_error(scim.post("/Users", raw="{not json"), 400, "invalidSyntax")
    assert_scim_error(scim.post("/Users", raw="[]"), 400, "invalidSyntax")
    assert_scim_error(scim.post("/Users", {"schemas": [USER_SCHEMA], "displayName": "no user name"}), 400)
    body = assert_scim_error(scim.post("/Users", {"schemas": [USER_SCHEMA], "userName": "x", "emails": "nope"}), 400)
    assert body["schemas"] == [ERROR_SCHEMA] and body["detail"]


def test_authentication(org, scim):
    assert_scim_error(ScimClient("").get("/Users"), 401)
    response = ScimClient("sk-wrong").get("/Users")
    assert_scim_error(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer")
    body = assert_scim_error(ScimClient(org.inference_key).get("/Users"), 403)
    assert body["detail"] == "Only management keys can perform this operation"


def test_methods_and_unknown_paths(scim):
    assert_scim_error(scim.delete("/Users"), 405)
    assert_scim_error(scim.get("/Nope"), 404)
    assert_scim_error(scim.get("/.search"), 405)


def test_search_across_resource_types(scim, people):
    group = scim.create_group("example team", [people["alice@example.com"]["id"]])
    body = scim.post("/.search", {"filter": 'userName co "example" or displayName sw "example"'}).json()
    assert body["totalResults"] == 3
    assert [r.get("userName", r.get("displayName")) for r in body["Resources"]] == [
        "alice@example.com",
        "bob@example.com",
        "example team",
    ]
    page = scim.post("/.search", {"startIndex": 2, "count": 2, "attributes": ["displayName"]}).json()
    assert (page["totalResults"], page["startIndex"], page["itemsPerPage"]) == (4, 2, 2)
    assert [r["id"] for r in page["Resources"]] == [people["bob@example.com"]["id"], people["carol@corp.test"]["id"]]
    assert "userName" not in page["Resources"][0]
    last = scim.post("/.search", {"startIndex": 4}).json()
    assert [r["id"] for r in last["Resources"]] == [group["id"]]
    assert_scim_error(scim.post("/.search", {"filter": "userName eq"}), 400, "invalidFilter")


@pytest.mark.django_db(transaction=True)
def test_deactivation_reaches_the_data_plane_on_the_next_request(org):
    """The data plane caches principals per policy version; deactivation bumps it, so the key is refused next."""
    scim = ScimClient(org.management_key)
    created = scim.create_user("jill")
    raw = api_key_create(organization=org.organization, name="j", creator=User.objects.get(pk=created["id"])).raw_key
    seen = []

    async def downstream(ctx):
        seen.append(ctx.principal.key_name)

    def call():
        ctx = Context(
            request_id="r",
            created_at=datetime.now(UTC),
            started=time.perf_counter(),
            method="POST",
            path="/api/v1/responses",
            host="testserver",
            headers={"authorization": f"Bearer {raw}"},
            raw_body=b"{}",
        )
        async_to_sync(KeyAuthMiddleware(downstream))(ctx)

    call()  # cached now
    assert seen == ["j"]
    scim.patch(f"/Users/{created['id']}", [{"op": "replace", "path": "active", "value": False}])
    with pytest.raises(GatewayError) as refused:
        call()
    assert refused.value.status == 401 and seen == ["j"]


@pytest.mark.django_db(transaction=True)
def test_deactivated_users_inference_key_is_refused_by_post_responses(gateway_server):
    """End to end over HTTP: the data plane refuses the key of a user the identity provider deactivated."""
    org = make_org("Deact")
    scim = ScimClient(org.management_key)
    created = scim.create_user("lee")
    raw = api_key_create(organization=org.organization, name="l", creator=User.objects.get(pk=created["id"])).raw_key
    body = {"model": "no/such-model", "input": "hi"}
    headers = {"Authorization": f"Bearer {raw}"}
    before = httpx.post(f"{gateway_server.url}/api/v1/responses", json=body, headers=headers, timeout=10)
    assert before.status_code != 401, before.text
    scim.patch(f"/Users/{created['id']}", [{"op": "replace", "value": {"active": False}}])
    after = httpx.post(f"{gateway_server.url}/api/v1/responses", json=body, headers=headers, timeout=10)
    assert after.status_code == 401
    assert after.json()["error"] == {"code": 401, "message": "API key is disabled"}


def test_long_values(scim):
    assert_scim_error(scim.post("/Users", {"schemas": [USER_SCHEMA], "userName": "u" * 256}), 400, "invalidValue")
    long_name = "D" * 300
    created = scim.create_user("long", displayName=long_name)
    assert scim.get(f"/Users/{created['id']}").json()["displayName"] == long_name
    assert scim.query("/Users", filter=f'displayName sw "{"D" * 200}"').json()["totalResults"] == 1
    group = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "g", "externalId": "x" * 256}
    assert_scim_error(scim.post("/Groups", group), 400, "invalidValue")
