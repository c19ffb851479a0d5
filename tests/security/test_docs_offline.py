"""The documentation pages and the admin load nothing from outside, and every page has a favicon: the HTML of
each page links only the gateway's own origin, the documentation pages forbid any other origin to the browser
(`Content-Security-Policy`: the ReDoc bundle asks cdn.redoc.ly for its logo), and /favicon.ico serves an icon.
Through the loopback server."""

from __future__ import annotations

import re

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = ("/api/v1/docs", "/api/v1/redoc", "/admin/login/")
DOCS = ("/api/v1/docs", "/api/v1/redoc")
OUTSIDE = re.compile(r"""(?:src|href|action)\s*=\s*["'](?:https?:)?//""", re.IGNORECASE)
ICON = re.compile(r"""<link rel="icon" href="(/static/favicon[^"]*\.ico)">""")


@pytest.fixture
def web(gateway_server):
    with httpx.Client(base_url=gateway_server.url, timeout=30) as client:
        yield client


@pytest.mark.parametrize("path", PAGES)
def test_every_page_links_only_its_own_origin_and_its_favicon(web, path):
    response = web.get(path)
    assert response.status_code == 200, response.text[:300]
    html = response.text
    assert OUTSIDE.findall(html) == []
    assert "googleapis" not in html and "cdn." not in html
    icon = ICON.search(html)
    assert icon, html[:600]
    favicon = web.get(icon.group(1))
    assert favicon.status_code == 200 and favicon.content.startswith(b"\x00\x00\x01\x00")


@pytest.mark.parametrize("path", DOCS)
def test_docs_pages_forbid_every_other_origin(web, path):
    response = web.get(path)
    policy = response.headers["content-security-policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["default-src"] == "'self'"
    for name in ("img-src", "font-src", "script-src", "style-src", "connect-src", "worker-src"):
        sources = directives[name].split()
        assert all(s in ("'self'", "'unsafe-inline'", "data:", "blob:") for s in sources), (name, sources)
    # The bundles the page loads: any outside address in them is stopped by the policy above.
    for script in re.findall(r'<script src="([^"]+)"', response.text):
        assert script.startswith("/static/"), script
        assert web.get(script).status_code == 200


@pytest.mark.parametrize("path", DOCS)
def test_options_on_the_docs_pages_is_answered(web, path):
    response = web.options(path)
    assert response.status_code == 200 and "GET" in response.headers["allow"]


def test_favicon_ico_is_served(web):
    response = web.get("/favicon.ico", follow_redirects=True)
    assert response.status_code == 200
    assert response.headers["content-type"] in ("image/x-icon", "image/vnd.microsoft.icon")
    assert response.content.startswith(b"\x00\x00\x01\x00")
