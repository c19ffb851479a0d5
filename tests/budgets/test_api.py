"""PUT/GET/DELETE /workspaces/{id}/budgets[/{interval}]: every validation rule and the response shapes."""

import pytest

from accounts import services
from budgets.models import WorkspaceBudget

pytestmark = pytest.mark.django_db


def url(org, interval=None, workspace=None):
    base = f"/api/v1/workspaces/{workspace or org.workspace.id}/budgets"
    return f"{base}/{interval}" if interval else base


def put(api, org, interval, body, workspace=None):
    return api.put(url(org, interval, workspace), body, format="json")


def test_put_creates_then_updates_and_answers_the_spec_shape(api, org):
    response = put(api, org, "daily", {"limit_usd": 5})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data", "include_byok_in_budgets"}
    assert body["include_byok_in_budgets"] is False
    budget = body["data"]
    assert set(budget) == {"id", "workspace_id", "limit_usd", "reset_interval", "created_at", "updated_at"}
    assert budget["workspace_id"] == str(org.workspace.id)
    assert budget["limit_usd"] == 5 and budget["reset_interval"] == "daily"
    assert budget["created_at"].endswith("Z") and len(budget["created_at"]) == 24
    response = put(api, org, "daily", {"limit_usd": 7.25})
    assert response.status_code == 200
    assert response.json()["data"]["id"] == budget["id"] and response.json()["data"]["limit_usd"] == 7.25
    assert WorkspaceBudget.objects.get(workspace=org.workspace).limit_usd == pytest.approx(7.25)


def test_workspace_by_slug_and_lifetime_interval(api, org):
    response = put(api, org, "lifetime", {"limit_usd": 1000}, workspace=org.workspace.slug)
    assert response.status_code == 200 and response.json()["data"]["reset_interval"] == "lifetime"


@pytest.mark.parametrize("value", [0, -1, "10", None, True, [1], 0.0000001])
def test_limit_usd_must_be_a_number_greater_than_zero(api, org, value):
    response = put(api, org, "daily", {"limit_usd": value})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == 400 and error["metadata"]["field"] == "limit_usd"
    assert error["message"].startswith("limit_usd: ")
    assert not WorkspaceBudget.objects.exists()


def test_limit_usd_is_required(api, org):
    response = put(api, org, "weekly", {"include_byok_in_budgets": True})
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "limit_usd"


def test_unknown_interval_is_400_naming_it(api, org):
    response = put(api, org, "hourly", {"limit_usd": 1})
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "interval"
    assert api.get(url(org, "yearly")).status_code == 400


@pytest.mark.parametrize(
    "existing, interval, limit, conflicting",
    [
        ({"weekly": 10}, "daily", 10, "weekly"),  # equal is not strictly less
        ({"weekly": 10}, "daily", 11, "weekly"),
        ({"daily": 10}, "weekly", 5, "daily"),
        ({"daily": 10}, "monthly", 10, "daily"),
        ({"monthly": 100}, "lifetime", 99, "monthly"),
        ({"lifetime": 100}, "monthly", 100, "lifetime"),
        ({"daily": 1, "lifetime": 100}, "weekly", 200, "lifetime"),
        ({"daily": 5, "monthly": 100}, "weekly", 4, "daily"),
    ],
)
def test_limits_strictly_decrease_as_the_interval_narrows(api, org, existing, interval, limit, conflicting):
    for name, value in existing.items():
        assert put(api, org, name, {"limit_usd": value}).status_code == 200
    response = put(api, org, interval, {"limit_usd": limit})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["metadata"] == {"field": "limit_usd", "conflicting_interval": conflicting}
    assert f"the {conflicting} budget" in error["message"]
    assert not WorkspaceBudget.objects.filter(reset_interval=interval).exists()


def test_a_full_consistent_ladder_is_accepted_and_listed_narrowest_first(api, org):
    for interval, limit in [("lifetime", 1000), ("daily", 10), ("monthly", 200), ("weekly", 50)]:
        assert put(api, org, interval, {"limit_usd": limit}).status_code == 200
    body = api.get(url(org)).json()
    assert [b["reset_interval"] for b in body["data"]] == ["daily", "weekly", "monthly", "lifetime"]
    assert [b["limit_usd"] for b in body["data"]] == [10, 50, 200, 1000]
    assert body["include_byok_in_budgets"] is False
    # Updating one inside the ladder must also respect both neighbours.
    assert put(api, org, "weekly", {"limit_usd": 200}).json()["error"]["metadata"]["conflicting_interval"] == "monthly"
    assert put(api, org, "weekly", {"limit_usd": 199}).status_code == 200


def test_include_byok_is_workspace_wide_and_unchanged_when_omitted(api, org):
    response = put(api, org, "daily", {"limit_usd": 1, "include_byok_in_budgets": True})
    assert response.json()["include_byok_in_budgets"] is True
    response = put(api, org, "weekly", {"limit_usd": 2})
    assert response.json()["include_byok_in_budgets"] is True
    org.workspace.refresh_from_db()
    assert org.workspace.include_byok_in_budgets is True
    response = put(api, org, "weekly", {"limit_usd": 2, "include_byok_in_budgets": False})
    assert response.json()["include_byok_in_budgets"] is False
    assert api.get(url(org, "daily")).json()["include_byok_in_budgets"] is False
    response = put(api, org, "weekly", {"limit_usd": 2, "include_byok_in_budgets": "yes"})
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "include_byok_in_budgets"


def test_get_one_and_delete(api, org):
    put(api, org, "monthly", {"limit_usd": 30})
    response = api.get(url(org, "monthly"))
    assert response.status_code == 200 and response.json()["data"]["limit_usd"] == 30
    assert api.get(url(org, "daily")).status_code == 404
    assert api.delete(url(org, "monthly")).json() == {"deleted": True}
    assert api.get(url(org, "monthly")).status_code == 404
    response = api.delete(url(org, "monthly"))  # 200 even when none existed
    assert response.status_code == 200 and response.json() == {"deleted": True}
    assert api.get(url(org)).json() == {"data": [], "include_byok_in_budgets": False}


def test_other_organization_and_unknown_workspace_are_404(api, org, other_org):
    assert put(api, org, "daily", {"limit_usd": 1}, workspace=other_org.workspace.id).status_code == 404
    assert api.get(url(org, workspace=other_org.workspace.slug + "-nope")).status_code == 404
    assert api.get(url(org, workspace=other_org.workspace.id)).status_code == 404
    assert api.delete(url(org, "daily", workspace=other_org.workspace.id)).status_code == 404


def test_inference_key_gets_403_and_no_key_401(org):
    assert org.client(org.inference_key).put(url(org, "daily"), {"limit_usd": 1}, format="json").status_code == 403
    from rest_framework.test import APIClient

    response = APIClient().get(url(org))
    assert response.status_code == 401 and response.json()["error"]["code"] == 401


def test_budgets_of_another_workspace_are_separate(api, org):
    second = services.workspace_create(organization=org.organization, name="Research")
    put(api, org, "daily", {"limit_usd": 1})
    assert put(api, org, "weekly", {"limit_usd": 0.5}, workspace=second.slug).status_code == 200
    assert len(api.get(url(org, workspace=second.id)).json()["data"]) == 1


def test_workspace_routes_of_accounts_still_work(api, org):
    put(api, org, "daily", {"limit_usd": 1})
    assert api.get(f"/api/v1/workspaces/{org.workspace.slug}").json()["data"]["id"] == str(org.workspace.id)
    assert api.get(f"/api/v1/workspaces/{org.workspace.slug}/members").status_code == 200
