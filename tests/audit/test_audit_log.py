"""The audit log over a real server: management changes (API, admin, SCIM) and data-plane refusals."""

from __future__ import annotations

import time

import httpx
import pytest
from django.test import Client

from audit.models import AuditEvent
from tests.inference.conftest import add_endpoint, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)

RAW_BYOK_KEY = "sk-proj-audit-secret-0123456789"


@pytest.fixture
def manage(gateway_server, org, echo_catalog):
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.management_key}"}, timeout=30
    ) as client:
        yield client


@pytest.fixture
def infer(gateway_server, org):
    with httpx.Client(
        base_url=f"{gateway_server.url}/api/v1", headers={"Authorization": f"Bearer {org.inference_key}"}, timeout=30
    ) as client:
        yield client
    wait_idle()


def audit_log(client: httpx.Client, **params) -> list[dict]:
    response = client.get("/audit-log", params=params)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def settled(expected, timeout: float = 10.0):
    """Refusal records are written after the answer (group-committed): wait for them."""
    from operations.measure import active

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        wait_idle()
        if not active.count and expected():
            return
        time.sleep(0.02)
    assert expected()


def test_api_changes_are_recorded_with_the_key_and_the_changed_fields(manage, org):
    created = manage.post("/guardrails", json={"name": "strict", "allowed_models": ["echo/echo-1"]})
    assert created.status_code == 201, created.text
    guardrail_id = created.json()["data"]["id"]
    assert manage.patch(f"/guardrails/{guardrail_id}", json={"description": "only echo"}).status_code == 200
    assert manage.delete(f"/guardrails/{guardrail_id}").status_code == 200
    events = audit_log(manage, resource_type="guardrail", resource_id=guardrail_id)
    assert [e["action"] for e in events] == ["delete", "update", "create"]  # newest first
    delete, update, create = events
    assert all(e["actor"] == org.management_hash and e["actor_type"] == "api_key" for e in events)
    assert all(e["source"] == "api" and e["actor_name"] == "mgmt" for e in events)
    assert update["changes"] == {"description": {"old": None, "new": "only echo"}}
    assert create["changes"]["name"] == {"old": None, "new": "strict"}
    assert create["changes"]["allowed_models"]["new"] == ["echo/echo-1"]
    assert create["resource_label"] and delete["created_at"] >= create["created_at"]


def test_secrets_are_masked(manage):
    add_endpoint("openai/gpt-4o-mini", "openai", api_format="openai-responses", base_url="https://api.openai.com/v1")
    response = manage.post("/byok", json={"provider": "openai", "key": RAW_BYOK_KEY, "name": "prod key"})
    assert response.status_code == 201, response.text
    credential_id = response.json()["data"]["id"]
    raw = manage.get("/audit-log", params={"resource_type": "byok_credential"}).text
    assert RAW_BYOK_KEY not in raw and RAW_BYOK_KEY[-8:] not in raw.replace("...", "")
    (event,) = audit_log(manage, resource_type="byok_credential")
    assert event["resource_id"] == credential_id
    assert event["changes"]["key_ciphertext"] == {"old": None, "new": "***"}
    assert AuditEvent.objects.filter(changes__icontains=RAW_BYOK_KEY).count() == 0


def test_budget_changes_and_scim_changes_are_recorded(manage, org):
    put = manage.put(f"/workspaces/{org.workspace.slug}/budgets/daily", json={"limit_usd": 5})
    assert put.status_code == 200, put.text
    assert manage.put(f"/workspaces/{org.workspace.slug}/budgets/daily", json={"limit_usd": 7}).status_code == 200
    budget_events = audit_log(manage, resource_type="workspace_budget")
    assert [e["action"] for e in budget_events] == ["update", "create"]
    assert budget_events[0]["changes"]["limit_usd"]["new"].startswith("7")
    scim = manage.post(
        "/scim/v2/Users",
        json={"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "ada@example.com"},
        headers={"Content-Type": "application/scim+json"},
    )
    assert scim.status_code == 201, scim.text
    scim_events = audit_log(manage, source="scim")
    assert scim_events and {e["actor"] for e in scim_events} == {org.management_hash}
    assert "scim_user" in {e["resource_type"] for e in scim_events}


def admin_form_data(page) -> dict:
    """The POST data an admin change form submits unchanged: its fields and its inlines' management forms."""
    data = {}
    form = page.context["adminform"].form
    for name in form.fields:
        value = form[name].value()
        if value is None or value is False:
            continue
        data[name] = [str(v) for v in value] if isinstance(value, list | tuple) else str(value)
    for inline in page.context["inline_admin_formsets"]:
        management = inline.formset.management_form
        for name in management.fields:
            data[management.add_prefix(name)] = str(management[name].value())
    return data


def test_admin_changes_are_recorded_with_the_staff_user(manage, org):
    org.admin.is_staff = org.admin.is_superuser = True
    org.admin.save()
    browser = Client()
    browser.force_login(org.admin)
    url = f"/admin/accounts/workspace/{org.workspace.id}/change/"
    data = admin_form_data(browser.get(url))
    data["name"] = "Renamed in admin"
    response = browser.post(url, data)
    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    events = audit_log(manage, source="admin", resource_type="workspace")
    (event,) = events
    assert event["actor_type"] == "user" and event["actor"] == org.admin.username
    assert event["changes"]["name"]["new"] == "Renamed in admin"
    assert browser.get("/admin/audit/auditevent/").status_code == 200
    assert browser.get(f"/admin/audit/auditevent/{event['id']}/change/").status_code == 200


def test_refusals_by_budget_and_guardrail_leave_a_record(manage, infer, org):
    assert (
        manage.put(f"/workspaces/{org.workspace.slug}/budgets/daily", json={"limit_usd": 0.000001}).status_code == 200
    )
    refused = infer.post("/responses", json={"model": "echo/echo-1", "input": "a b c"})
    assert refused.status_code == 402
    settled(lambda: AuditEvent.objects.filter(action="refuse", resource_type="budget").exists())
    (budget,) = audit_log(manage, action="refuse", resource_type="budget")
    assert budget["source"] == "data_plane" and budget["actor"] == org.inference_hash
    assert budget["resource_id"] == "workspace/daily"
    assert budget["changes"]["status"] == 402 and budget["changes"]["model"] == "echo/echo-1"
    assert budget["request_id"] == refused.headers["x-request-id"]
    manage.delete(f"/workspaces/{org.workspace.slug}/budgets/daily")
    default = org.workspace.default_guardrail_id
    assert manage.patch(f"/guardrails/{default}", json={"allowed_models": ["other/model"]}).status_code == 200
    blocked = infer.post("/responses", json={"model": "echo/echo-1", "input": "hi"})
    assert blocked.status_code == 403, blocked.text
    settled(lambda: AuditEvent.objects.filter(action="refuse", resource_type="guardrail").exists())
    (guardrail,) = audit_log(manage, action="refuse", resource_type="guardrail")
    assert guardrail["changes"]["message"] == blocked.json()["error"]["message"]


def test_filters_pagination_scoping_and_bad_parameters(manage, other_org, org):
    for i in range(3):
        assert manage.post("/guardrails", json={"name": f"g{i}"}).status_code == 201
    page = manage.get("/audit-log", params={"resource_type": "guardrail", "limit": 2, "offset": 1}).json()
    assert page["total_count"] == 3 and len(page["data"]) == 2
    newest = audit_log(manage, resource_type="guardrail")[0]["created_at"]
    assert audit_log(manage, resource_type="guardrail", since=newest)[0]["created_at"] == newest
    assert audit_log(manage, resource_type="guardrail", until="2000-01-01T00:00:00Z") == []
    with httpx.Client(base_url=manage.base_url, headers={"Authorization": f"Bearer {other_org.management_key}"}) as c:
        assert audit_log(c) == []  # another organization sees none of them
        assert c.get("/audit-log").status_code == 200
    with httpx.Client(base_url=manage.base_url, headers={"Authorization": f"Bearer {org.inference_key}"}) as c:
        assert c.get("/audit-log").status_code == 403
    for params, field in (
        ({"action": "explode"}, "action"),
        ({"since": "yesterday"}, "since"),
        ({"limit": 0}, "limit"),
        ({"colour": "red"}, "colour"),
        ({"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "until"),
    ):
        response = manage.get("/audit-log", params=params)
        assert response.status_code == 400, params
        assert response.json()["error"]["metadata"]["field"] == field
