"""Key and member assignments, the organization-wide lists, and the workspace default guardrail lifecycle."""

import uuid

import pytest

from accounts import services as account_services
from accounts.models import Workspace
from guardrails.models import GuardrailKeyAssignment, GuardrailMemberAssignment

pytestmark = pytest.mark.django_db


def new_guardrail(api, name="g", **body):
    response = api.post("/api/v1/guardrails", {"name": name, **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["data"]["id"]


def test_assign_list_and_remove_keys(api, org):
    guardrail = new_guardrail(api)
    url = f"/api/v1/guardrails/{guardrail}/assignments/keys"
    response = api.post(url, {"key_hashes": [org.inference_hash, org.inference_hash]}, format="json")
    assert response.status_code == 200
    assert response.json() == {"assigned_count": 1}
    listed = api.get(url).json()
    assert listed["total_count"] == 1
    row = listed["data"][0]
    assert row["key_hash"] == org.inference_hash
    assert row["guardrail_id"] == guardrail
    assert row["key_name"] == "inference"
    assert row["assigned_by"] == org.management_hash
    removed = api.post(f"{url}/remove", {"key_hashes": [org.inference_hash]}, format="json")
    assert removed.json() == {"unassigned_count": 1}
    assert api.get(url).json()["total_count"] == 0
    again = api.post(f"{url}/remove", {"key_hashes": [org.inference_hash]}, format="json")
    assert again.json() == {"unassigned_count": 0}


def test_a_key_holds_one_guardrail_new_assignment_replaces(api, org):
    first, second = new_guardrail(api, "first"), new_guardrail(api, "second")
    for guardrail in (first, second):
        api.post(
            f"/api/v1/guardrails/{guardrail}/assignments/keys", {"key_hashes": [org.inference_hash]}, format="json"
        )
    assignment = GuardrailKeyAssignment.objects.get(api_key__hash=org.inference_hash)
    assert str(assignment.guardrail_id) == second
    assert api.get(f"/api/v1/guardrails/{first}/assignments/keys").json()["total_count"] == 0


@pytest.mark.parametrize("bad", [["0" * 64], ["nope"]])
def test_unknown_key_hash_is_400(api, bad):
    guardrail = new_guardrail(api)
    response = api.post(f"/api/v1/guardrails/{guardrail}/assignments/keys", {"key_hashes": bad}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "key_hashes"
    assert GuardrailKeyAssignment.objects.count() == 0


def test_other_organizations_key_is_400(api, other_org):
    guardrail = new_guardrail(api)
    response = api.post(
        f"/api/v1/guardrails/{guardrail}/assignments/keys", {"key_hashes": [other_org.inference_hash]}, format="json"
    )
    assert response.status_code == 400


def test_empty_or_missing_list_is_400(api):
    guardrail = new_guardrail(api)
    url = f"/api/v1/guardrails/{guardrail}/assignments"
    assert api.post(f"{url}/keys", {"key_hashes": []}, format="json").status_code == 400
    assert api.post(f"{url}/members", {}, format="json").status_code == 400


def test_assign_list_and_remove_members(api, org):
    guardrail = new_guardrail(api)
    member = account_services.user_create(organization=org.organization, username="member-1")
    url = f"/api/v1/guardrails/{guardrail}/assignments/members"
    response = api.post(url, {"member_user_ids": [str(member.id), str(org.admin.id)]}, format="json")
    assert response.json() == {"assigned_count": 2}
    listed = api.get(url).json()
    assert listed["total_count"] == 2
    assert {row["user_id"] for row in listed["data"]} == {str(member.id), str(org.admin.id)}
    assert all(row["organization_id"] == str(org.organization.id) for row in listed["data"])
    removed = api.post(f"{url}/remove", {"member_user_ids": [str(member.id)]}, format="json")
    assert removed.json() == {"unassigned_count": 1}
    assert GuardrailMemberAssignment.objects.filter(user=org.admin).exists()


@pytest.mark.parametrize("bad", [str(uuid.uuid4()), "not-a-uuid"])
def test_unknown_member_is_400(api, bad):
    guardrail = new_guardrail(api)
    response = api.post(
        f"/api/v1/guardrails/{guardrail}/assignments/members", {"member_user_ids": [bad]}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "member_user_ids"


def test_member_of_other_organization_is_400(api, other_org):
    guardrail = new_guardrail(api)
    response = api.post(
        f"/api/v1/guardrails/{guardrail}/assignments/members",
        {"member_user_ids": [str(other_org.admin.id)]},
        format="json",
    )
    assert response.status_code == 400


def test_member_new_assignment_replaces(api, org):
    first, second = new_guardrail(api, "first"), new_guardrail(api, "second")
    for guardrail in (first, second):
        api.post(
            f"/api/v1/guardrails/{guardrail}/assignments/members",
            {"member_user_ids": [str(org.admin.id)]},
            format="json",
        )
    assert str(GuardrailMemberAssignment.objects.get(user=org.admin).guardrail_id) == second


def test_organization_wide_lists(api, org, other_org):
    first, second = new_guardrail(api, "first"), new_guardrail(api, "second")
    api.post(f"/api/v1/guardrails/{first}/assignments/keys", {"key_hashes": [org.inference_hash]}, format="json")
    api.post(f"/api/v1/guardrails/{second}/assignments/keys", {"key_hashes": [org.management_hash]}, format="json")
    api.post(
        f"/api/v1/guardrails/{second}/assignments/members", {"member_user_ids": [str(org.admin.id)]}, format="json"
    )
    theirs = new_guardrail(other_org.client(), "theirs")
    other_org.client().post(
        f"/api/v1/guardrails/{theirs}/assignments/keys", {"key_hashes": [other_org.inference_hash]}, format="json"
    )
    keys = api.get("/api/v1/guardrails/assignments/keys").json()
    assert keys["total_count"] == 2
    assert {row["key_hash"] for row in keys["data"]} == {org.inference_hash, org.management_hash}
    members = api.get("/api/v1/guardrails/assignments/members").json()
    assert members["total_count"] == 1 and members["data"][0]["guardrail_id"] == second
    assert other_org.client().get("/api/v1/guardrails/assignments/keys").json()["total_count"] == 1


def test_assignments_of_other_organizations_guardrail_are_404(api, other_org):
    theirs = new_guardrail(other_org.client(), "theirs")
    assert api.get(f"/api/v1/guardrails/{theirs}/assignments/keys").status_code == 404
    response = api.post(
        f"/api/v1/guardrails/{theirs}/assignments/keys", {"key_hashes": [other_org.inference_hash]}, format="json"
    )
    assert response.status_code == 404


def test_deleting_a_guardrail_removes_its_assignments(api, org):
    guardrail = new_guardrail(api)
    api.post(f"/api/v1/guardrails/{guardrail}/assignments/keys", {"key_hashes": [org.inference_hash]}, format="json")
    api.delete(f"/api/v1/guardrails/{guardrail}")
    assert GuardrailKeyAssignment.objects.count() == 0


# The workspace default guardrail (DECISIONS.md §3)


def default_id(org) -> str:
    return str(org.workspace.default_guardrail_id)


def test_default_guardrail_is_404_before_its_first_patch(api, org):
    assert api.get(f"/api/v1/guardrails/{default_id(org)}").status_code == 404
    assert api.get("/api/v1/guardrails").json()["total_count"] == 0


def test_first_patch_materializes_the_default_guardrail(api, org):
    response = api.patch(f"/api/v1/guardrails/{default_id(org)}", {"allowed_data_regions": ["europe"]}, format="json")
    assert response.status_code == 200, response.json()
    data = response.json()["data"]
    assert data["id"] == default_id(org)
    assert data["name"] == org.workspace.name
    assert data["is_default"] is True
    assert data["workspace_id"] == str(org.workspace.id)
    assert data["allowed_data_regions"] == ["europe"]
    assert api.get(f"/api/v1/guardrails/{default_id(org)}").json()["data"]["allowed_data_regions"] == ["europe"]
    second = api.patch(f"/api/v1/guardrails/{default_id(org)}", {"enforce_zdr_other": True}, format="json")
    assert second.json()["data"]["allowed_data_regions"] == ["europe"]
    assert second.json()["data"]["enforce_zdr_other"] is True
    assert second.json()["data"]["updated_at"] is not None


def test_default_guardrail_name_follows_workspace_and_is_not_editable(api, org):
    url = f"/api/v1/guardrails/{default_id(org)}"
    before = api.patch(url, {"name": "Mine"}, format="json")
    assert before.status_code == 400 and before.json()["error"]["metadata"]["field"] == "name"
    assert api.get(url).status_code == 404
    api.patch(url, {"description": "all traffic"}, format="json")
    after = api.patch(url, {"name": "Mine"}, format="json")
    assert after.status_code == 400
    Workspace.objects.filter(pk=org.workspace.pk).update(name="Renamed workspace")
    assert api.get(url).json()["data"]["name"] == "Renamed workspace"


def test_default_guardrail_of_other_workspace_and_organization(api, org, other_org):
    research = account_services.workspace_create(organization=org.organization, name="Research")
    response = api.patch(f"/api/v1/guardrails/{research.default_guardrail_id}", {}, format="json")
    assert response.status_code == 200
    assert response.json()["data"]["workspace_id"] == str(research.id)
    theirs = other_org.workspace.default_guardrail_id
    assert api.patch(f"/api/v1/guardrails/{theirs}", {}, format="json").status_code == 404


def test_default_guardrail_validation_on_first_patch(api, org):
    response = api.patch(f"/api/v1/guardrails/{default_id(org)}", {"allowed_data_regions": []}, format="json")
    assert response.status_code == 400
    assert api.get(f"/api/v1/guardrails/{default_id(org)}").status_code == 404


def test_default_guardrail_cannot_be_assigned_and_can_be_deleted(api, org):
    url = f"/api/v1/guardrails/{default_id(org)}"
    api.patch(url, {"enforce_zdr_other": True}, format="json")
    response = api.post(f"{url}/assignments/keys", {"key_hashes": [org.inference_hash]}, format="json")
    assert response.status_code == 400
    assert api.delete(url).json() == {"deleted": True}
    assert api.get(url).status_code == 404
    assert api.patch(url, {}, format="json").json()["data"]["enforce_zdr_other"] is False


def test_django_admin_lists_and_refuses_an_invalid_guardrail(org, client):
    org.admin.is_staff = org.admin.is_superuser = True
    org.admin.save()
    client.force_login(org.admin)
    for model in ("guardrail", "guardrailkeyassignment", "guardrailmemberassignment"):
        assert client.get(f"/admin/guardrails/{model}/").status_code == 200, model
    form = {
        "organization": str(org.organization.id), "workspace": str(org.workspace.id), "name": "from admin",
        "content_filters": '[{"pattern": "(?<=x)y", "action": "block"}]', "allowed_models": "[]",
        "key_assignments-TOTAL_FORMS": "0", "key_assignments-INITIAL_FORMS": "0",
        "member_assignments-TOTAL_FORMS": "0", "member_assignments-INITIAL_FORMS": "0",
    }  # fmt: skip
    response = client.post("/admin/guardrails/guardrail/add/", form)
    assert response.status_code == 200  # the form again, with errors
    assert "invalid regular expression" in response.content.decode()
    assert "must be null or a non-empty list" in response.content.decode()
    from guardrails.models import Guardrail

    assert not Guardrail.objects.exists()
