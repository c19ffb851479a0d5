"""The response cache in the Django admin: the workspace setting is editable, entries are listed read-only."""

import pytest

from accounts.models import Workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    return client


def test_admin_turns_the_workspace_cache_on(org, staff):
    url = f"/admin/accounts/workspace/{org.workspace.pk}/change/"
    assert b"response_cache_enabled" in staff.get(url).content
    form = {
        "organization": org.workspace.organization_id,
        "name": "Default",
        "slug": "default",
        "io_logging_sampling_rate": 1,
        "is_observability_broadcast_enabled": "on",
        "is_observability_io_logging_enabled": "on",
        "response_cache_enabled": "on",
        "memberships-TOTAL_FORMS": 0,
        "memberships-INITIAL_FORMS": 0,
    }
    page = staff.post(url, form)
    assert page.status_code == 302, page.content[:2000]
    assert Workspace.objects.get(pk=org.workspace.pk).response_cache_enabled is True


def test_admin_lists_entries_read_only(org, staff):
    from datetime import UTC, datetime, timedelta

    from responsecache.models import ResponseCacheEntry

    now = datetime.now(UTC)
    entry = ResponseCacheEntry.objects.create(
        organization=org.organization, key="a" * 64, model="m/x", data="{}", size=2, created_at=now,
        expires_at=now + timedelta(minutes=5),
    )  # fmt: skip
    listing = staff.get("/admin/responsecache/responsecacheentry/")
    assert listing.status_code == 200 and b"m/x" in listing.content
    assert staff.get("/admin/responsecache/responsecacheentry/add/").status_code == 403
    change = staff.post(f"/admin/responsecache/responsecacheentry/{entry.pk}/change/", {"model": "other"})
    assert change.status_code == 403 and ResponseCacheEntry.objects.get(pk=entry.pk).model == "m/x"
