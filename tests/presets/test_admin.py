"""The Django admin: presets listed with their status editable; a status change is stamped."""

import pytest
from django.test import Client

from presets.models import Preset

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(org):
    org.admin.is_staff = True
    org.admin.is_superuser = True
    org.admin.save()
    client = Client()
    client.force_login(org.admin)
    return client


def test_changelists_and_change_form(staff, api):
    api.post("/api/v1/presets/adm/responses", {"model": "a/b", "instructions": "sys"}, format="json")
    preset = Preset.objects.get(slug="adm")
    assert staff.get("/admin/presets/preset/").status_code == 200
    assert staff.get("/admin/presets/presetversion/").status_code == 200
    page = staff.get(f"/admin/presets/preset/{preset.id}/change/")
    assert page.status_code == 200
    assert b"sys" in page.content  # the version inline shows the system prompt


def test_status_is_editable_in_the_form_and_stamped(staff, api):
    api.post("/api/v1/presets/adm/responses", {"model": "a/b"}, format="json")
    preset = Preset.objects.get(slug="adm")
    response = staff.post(
        f"/admin/presets/preset/{preset.id}/change/",
        {
            "name": "Renamed",
            "description": "",
            "status": "disabled",
            "versions-TOTAL_FORMS": "1",
            "versions-INITIAL_FORMS": "1",
            "versions-MIN_NUM_FORMS": "0",
            "versions-MAX_NUM_FORMS": "1000",
            "versions-0-id": str(preset.designated_version_id),
            "versions-0-preset": str(preset.id),
        },
    )
    assert response.status_code == 302, response.content[:2000]
    preset.refresh_from_db()
    assert preset.status == "disabled" and preset.name == "Renamed"
    assert preset.status_updated_at is not None
    data = api.get("/api/v1/presets/adm").json()["data"]
    assert data["status"] == "disabled" and data["status_updated_at"].endswith("Z")


def test_status_is_editable_in_the_list(staff, api):
    api.post("/api/v1/presets/adm/responses", {"model": "a/b"}, format="json")
    preset = Preset.objects.get(slug="adm")
    response = staff.post(
        "/admin/presets/preset/",
        {
            "form-TOTAL_FORMS": "1",
            "form-INITIAL_FORMS": "1",
            "form-MIN_NUM_FORMS": "0",
            "form-MAX_NUM_FORMS": "1000",
            "form-0-id": str(preset.id),
            "form-0-status": "archived",
            "_save": "Save",
        },
    )
    assert response.status_code == 302
    preset.refresh_from_db()
    assert preset.status == "archived" and preset.status_updated_at is not None
