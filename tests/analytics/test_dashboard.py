"""The usage dashboard in the admin: staff only, six SVG charts drawn from the rollups, and the page seen in a
real browser (Debian's chromium driven by selenium with the system chromedriver; skipped when absent)."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

from tests.analytics.conftest import make_generation
from tests.missing_tools import skip_or_fail

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/admin/analytics/usagedashboard/"
CHARTS = ("spend", "requests", "latency", "budgets", "keys", "workspaces")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = Path(os.environ.get("GATEWAY_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "artifacts"))


@pytest.fixture
def traffic(org):
    """A week of generations on three models and two keys, some failed, and a workspace budget and key limit."""
    from accounts import services
    from budgets.models import WorkspaceBudget

    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    second = services.api_key_create(organization=org.organization, name="batch-jobs", creator=org.admin)
    for day in range(7):
        for i in range(6 + day):
            make_generation(
                org,
                at=today - timedelta(days=day, hours=-(i % 20)),
                model=("vendor/large", "vendor/small", "other/medium")[i % 3],
                latency_ms=200 + 150 * i,
                cost=Decimal("0.0125") * (1 + i % 3),
                status="failed" if i == 5 else "completed",
                key_hash=org.inference_hash if i % 2 else second.api_key.hash,
            )
    WorkspaceBudget.objects.create(workspace=org.workspace, reset_interval="monthly", limit_usd=Decimal("5"))
    return org


def _staff_client(org) -> Client:
    from accounts.models import User

    user = User.objects.create_superuser(username=f"staff-{org.organization.id}", password="x-unused-Secret-1")
    client = Client()
    client.force_login(user)
    return client


def test_dashboard_draws_every_chart_with_data(traffic):
    page = _staff_client(traffic).get(URL, {"days": "7"})
    assert page.status_code == 200
    html = page.content.decode()
    for chart in CHARTS:
        section = re.search(rf'<section class="panel" id="{chart}">(.*?)</section>', html, re.S).group(1)
        points = int(re.search(r'data-points="(\d+)"', section).group(1))
        assert points > 0, chart
    assert "vendor/large" in html and "batch-jobs" in html and traffic.workspace.slug in html
    assert "<script" not in html.split('<div id="content"', 1)[1]  # charts are SVG drawn by the server
    assert re.search(r'id="summary">\s*<div><strong>63</strong>requests', html)  # 6 + 7 + ... + 12


def test_dashboard_is_for_staff_only(traffic):
    from accounts.models import User

    anonymous = Client().get(URL)
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    member = User.objects.create_user(username="member", password="x-unused-Secret-1")
    client = Client()
    client.force_login(member)
    assert client.get(URL).status_code == 302


def test_dashboard_rejects_unknown_choices_with_a_message(traffic):
    page = _staff_client(traffic).get(URL, {"days": "365"})
    assert page.status_code == 200 and b"Days must be one of 7, 30, 90; showing 30 days." in page.content


@pytest.fixture(scope="module")
def collected_static(tmp_path_factory, django_db_blocker):
    """The admin's styles collected and served by the ASGI app, as `make run` does."""
    from gateway_project.asgi import static_files

    root = tmp_path_factory.mktemp("static")
    with override_settings(STATIC_ROOT=str(root), DEBUG=False):
        with django_db_blocker.unblock():
            call_command("collectstatic", "--noinput", "-v0")
        static_files.reload()
        yield root
    static_files.reload()


@pytest.fixture
def browser():
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        skip_or_fail(
            f"Debian's chromium and chromium-driver ({CHROMIUM}, {CHROMEDRIVER})",
            "apt-get install chromium chromium-driver, then run `make test PYTEST_ARGS=tests/analytics`",
            "GATEWAY_REQUIRE_BROWSER",
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 "--window-size=1400,1800"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def test_dashboard_in_a_real_browser(traffic, gateway_server, collected_static, browser):
    from django.conf import settings
    from selenium.webdriver.common.by import By

    session = _staff_client(traffic).cookies[settings.SESSION_COOKIE_NAME].value
    browser.get(f"{gateway_server.url}/admin/login/")
    browser.add_cookie({"name": settings.SESSION_COOKIE_NAME, "value": session, "path": "/"})
    browser.get(f"{gateway_server.url}{URL}?days=7")
    assert "Usage dashboard" in browser.title
    for chart in CHARTS:
        svg = browser.find_element(By.CSS_SELECTOR, f"#{chart} svg.chart")
        assert svg.size["width"] > 300 and svg.size["height"] > 40, chart  # laid out, not collapsed
        marks = svg.find_elements(By.CSS_SELECTOR, "rect.bar, polyline.line")
        assert marks and any(m.size["width"] > 0 and m.size["height"] > 0 for m in marks), chart
    # the admin's own stylesheet loaded (served by the ASGI app): the header has its colour, not the default
    header = browser.find_element(By.ID, "header")
    assert header.value_of_css_property("background-color") not in ("rgba(0, 0, 0, 0)", "transparent")
    browser.find_element(By.ID, "toggle-nav-sidebar").click()  # the page alone in the screenshot
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = browser.execute_script("return document.getElementById('content').getBoundingClientRect().bottom") + 160
    browser.set_window_size(1400, min(max(int(height), 600), 2400))
    from django.db import connection

    target = ARTIFACTS / f"dashboard-{connection.vendor}.png"
    assert browser.save_screenshot(str(target)) and target.stat().st_size > 10_000
