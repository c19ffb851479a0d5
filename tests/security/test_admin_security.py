"""Issue 18 row 22: the Django admin in production (DJANGO_DEBUG false, as in the tests): Secure session and
CSRF cookies and HSTS on HTTPS answers, sign-in throttling, and a new key's raw value never in a cookie."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.test import Client

from accounts.keys import hash_key
from accounts.models import ApiKey

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_throttle():
    cache.clear()
    yield
    cache.clear()


def test_production_cookies_are_secure_and_https_answers_carry_hsts():
    client = Client()
    page = client.get("/admin/login/", secure=True)
    assert page.status_code == 200
    assert page.cookies["csrftoken"]["secure"] is True
    assert page.headers["Strict-Transport-Security"].startswith("max-age=31536000")


def _sign_in(client: Client, username: str, password: str):
    form = client.get("/admin/login/", secure=True)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.content.decode()).group(1)
    return client.post(
        "/admin/login/?next=/admin/",
        {"csrfmiddlewaretoken": token, "username": username, "password": password, "next": "/admin/"},
        secure=True,
        HTTP_REFERER="https://testserver/admin/login/",
    )


def test_sign_in_is_throttled_after_repeated_failures(org, settings):
    settings.GATEWAY_ADMIN_LOGIN_FAILURES = 5
    org.admin.is_staff = True
    org.admin.set_password("the-right-password-1")
    org.admin.save()
    client = Client(enforce_csrf_checks=True)
    for _ in range(5):
        refused = _sign_in(client, org.admin.username, "wrong")
        assert refused.status_code == 200 and "_auth_user_id" not in client.session
    throttled = _sign_in(client, org.admin.username, "the-right-password-1")
    assert throttled.status_code == 200 and "Too many failed sign-in attempts" in throttled.content.decode()
    assert "_auth_user_id" not in client.session
    cache.clear()  # the window has passed
    signed_in = _sign_in(client, org.admin.username, "the-right-password-1")
    assert signed_in.status_code == 302 and client.session["_auth_user_id"] == str(org.admin.pk)


def test_a_new_keys_raw_value_is_not_carried_in_a_cookie(org):
    org.admin.is_staff = True
    org.admin.is_superuser = True
    org.admin.save()
    client = Client()
    client.force_login(org.admin)
    created = client.post(
        "/admin/accounts/apikey/add/",
        {"name": "from-admin", "workspace": str(org.workspace.id), "limit_reset": ""},
        secure=True,
    )
    assert created.status_code == 302
    assert "messages" not in created.cookies  # before: the raw key travelled in the `messages` cookie
    raw_in_cookies = [c.value for c in created.cookies.values()]
    page = client.get(created["Location"], secure=True)
    shown = [str(m) for m in page.context["messages"]]
    raw = next(m.split(": ", 1)[1] for m in shown if "shown once" in m)
    assert ApiKey.objects.get(name="from-admin").hash == hash_key(raw)
    assert not any(raw in value for value in raw_in_cookies)
    assert not any(raw in c.value for c in page.cookies.values())
