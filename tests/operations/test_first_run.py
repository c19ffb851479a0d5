"""First run: the admin user gets a password it can log in with; the catalog never overwrites the admin's edits."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from io import StringIO
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command

from accounts.models import User
from inference.models import Endpoint, Model

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """PBKDF2's production work factor costs about a second per hash on a busy 2-core machine."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture(autouse=True)
def _plain_http_cookies(settings):
    """The simulated browser speaks plain HTTP to the loopback server, whose production cookies are Secure
    (tests/security/test_admin_security.py): httpx would not send them back over HTTP."""
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False


def _admin_login(server_url: str, username: str, password: str) -> httpx.Response:
    """Log in through the admin's login form over HTTP, as a browser does; returns the page after it."""
    with httpx.Client(base_url=server_url, follow_redirects=True) as browser:
        form = browser.get("/admin/login/?next=/admin/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        return browser.post(
            "/admin/login/?next=/admin/",
            data={"csrfmiddlewaretoken": token, "username": username, "password": password, "next": "/admin/"},
            headers={"Referer": f"{server_url}/admin/login/"},
        )


def test_first_bootstrap_generates_an_admin_password_shown_once(gateway_server, monkeypatch):
    monkeypatch.delenv("GATEWAY_ADMIN_PASSWORD", raising=False)
    first = json.loads(_run("bootstrap", "--json"))
    assert first["admin_username"] == "admin" and len(first["admin_password"]) >= 20
    page = _admin_login(gateway_server.url, "admin", first["admin_password"])
    assert page.status_code == 200 and str(page.url).endswith("/admin/")
    assert "Site administration" in page.text and "Log out" in page.text
    wrong = _admin_login(gateway_server.url, "admin", "not-the-password")
    assert "Please enter the correct username and password" in wrong.text
    # later runs neither print nor change it
    text = _run("bootstrap")
    assert first["admin_password"] not in text and "admin password" not in text
    assert "Admin user: admin (its password was set on an earlier run and shown then; " in text
    assert "reset it with `python manage.py changepassword admin`" in text
    assert User.objects.get(username="admin").check_password(first["admin_password"])


def test_text_output_prints_the_generated_password_next_to_the_keys(monkeypatch):
    monkeypatch.delenv("GATEWAY_ADMIN_PASSWORD", raising=False)
    text = _run("bootstrap")
    password = re.search(r"admin password: (\S+)  \(shown once", text).group(1)
    assert User.objects.get(username="admin").check_password(password)
    assert text.index("admin password") < text.index("management key:")


def test_environment_password_is_set_on_an_admin_without_one(gateway_server, monkeypatch):
    monkeypatch.setenv("GATEWAY_ADMIN_PASSWORD", "correct horse battery staple")
    out = _run("bootstrap")
    assert "Admin user: admin (password set from GATEWAY_ADMIN_PASSWORD)" in out
    assert "correct horse battery staple" not in out
    assert "Site administration" in _admin_login(gateway_server.url, "admin", "correct horse battery staple").text
    # an admin left without a password (an older install) gets GATEWAY_ADMIN_PASSWORD on the next run
    admin = User.objects.get(username="admin")
    admin.set_unusable_password()
    admin.save()
    monkeypatch.setenv("GATEWAY_ADMIN_PASSWORD", "set later in the environment")
    assert json.loads(_run("bootstrap", "--json"))["admin_password"] is None  # nothing generated to show
    assert "Site administration" in _admin_login(gateway_server.url, "admin", "set later in the environment").text
    # an admin that has a password keeps it, whatever the environment says now
    monkeypatch.setenv("GATEWAY_ADMIN_PASSWORD", "something else")
    _run("bootstrap")
    assert User.objects.get(username="admin").check_password("set later in the environment")


def test_bootstrap_adds_new_catalog_entries_but_keeps_admin_edits(settings, tmp_path):
    _run("bootstrap")
    endpoint = Endpoint.objects.get(model__slug="openai/gpt-4o-mini", provider__slug="openai")
    file_price = endpoint.prompt_price
    endpoint.prompt_price = Decimal("0.00000042")  # staff changed the price in the admin
    endpoint.enabled = False
    endpoint.save()
    catalog = tmp_path / "catalog.yaml"  # a later release of the catalog adds a model and its endpoint
    text = (
        Path(settings.GATEWAY_CATALOG)
        .read_text()
        .replace(
            "endpoints:\n",
            "endpoints:\n  - {model: echo/echo-2, provider: echo, upstream_model: echo-2, prompt_price: '0',"
            " completion_price: '0'}\n",
            1,
        )
        .replace("models:\n", "models:\n  - {slug: echo/echo-2, vendor: echo}\n", 1)
    )
    catalog.write_text(text)
    settings.GATEWAY_CATALOG = str(catalog)
    out = _run("bootstrap")
    assert re.search(r"\(2 added, 0 updated, \d+ existing left unchanged\)", out), out
    endpoint.refresh_from_db()
    assert endpoint.prompt_price == Decimal("0.00000042") and endpoint.enabled is False
    assert Model.objects.filter(slug="echo/echo-2").exists()
    assert Endpoint.objects.filter(model__slug="echo/echo-2", provider__slug="echo").exists()
    # load_catalog --update overwrites on purpose; without --update it only adds
    assert "0 added, 0 updated" in _run("load_catalog", str(catalog))
    endpoint.refresh_from_db()
    assert endpoint.prompt_price == Decimal("0.00000042")
    assert re.search(r"0 added, \d+ updated, 0 existing left unchanged", _run("load_catalog", str(catalog), "--update"))
    endpoint.refresh_from_db()
    assert endpoint.prompt_price == file_price
