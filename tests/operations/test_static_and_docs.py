"""Admin and API docs work offline: every script, stylesheet and icon they reference is served by the gateway.

Over a real server (uvicorn serving gateway_project.asgi:application), after `collectstatic` as `make run` does.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from django.core.management import call_command
from django.test import override_settings

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = ["/api/v1/docs", "/api/v1/redoc", "/admin/login/"]


class AssetParser(HTMLParser):
    """Collects every URL a browser would load from a page: scripts, stylesheets, icons, images, preconnects."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "img", "iframe") and attrs.get("src"):
            self.urls.append(attrs["src"])
        if tag == "link" and attrs.get("href"):
            self.urls.append(attrs["href"])


def assets_of(html: str) -> list[str]:
    parser = AssetParser()
    parser.feed(html)
    # URLs written inside inline scripts and styles (e.g. `url(https://...)`, `"https://cdn..."`) count too;
    # XML namespace names (`xmlns="http://www.w3.org/2000/svg"`) are identifiers, never fetched
    text = re.sub(r"""xmlns(:\w+)?=["'][^"']*["']""", "", html)
    parser.urls += re.findall(r"""(?:https?:)?//[a-zA-Z0-9.-]+\.[a-z]{2,}[^"' )]*""", text)
    return parser.urls


@pytest.fixture(scope="module")
def collected(tmp_path_factory, django_db_blocker):
    """STATIC_ROOT filled by collectstatic (hashed names, gzip variants), as in production."""
    from gateway_project.asgi import static_files

    root = tmp_path_factory.mktemp("static")
    with override_settings(STATIC_ROOT=str(root), DEBUG=False):
        with django_db_blocker.unblock():
            call_command("collectstatic", "--noinput", "-v0")
        static_files.reload()
        yield root
    static_files.reload()


def test_docs_and_admin_reference_only_local_assets_that_answer(gateway_server, collected):
    with httpx.Client(base_url=gateway_server.url) as client:
        for page in PAGES:
            response = client.get(page)
            assert response.status_code == 200, page
            urls = assets_of(response.text)
            assert urls, f"{page} references no assets"
            scripts_and_styles = [u for u in urls if u.endswith((".js", ".css"))]
            assert scripts_and_styles, page
            for url in urls:
                absolute = urljoin(gateway_server.url + page, url)
                assert urlsplit(absolute).netloc == urlsplit(gateway_server.url).netloc, f"{page} loads {url}"
                asset = client.get(absolute)
                assert asset.status_code == 200, f"{page}: {url} -> {asset.status_code}"
            # the collected, content-hashed names are linked (cached for ever by browsers)
            assert any(re.search(r"\.[0-9a-f]{12}\.(js|css)$", u) for u in scripts_and_styles), urls


def test_hashed_assets_are_compressed_immutable_and_revalidated(gateway_server, collected):
    with httpx.Client(base_url=gateway_server.url) as client:
        page = client.get("/api/v1/docs").text
        bundle = next(u for u in assets_of(page) if "swagger-ui-bundle" in u)
        plain = client.get(bundle, headers={"Accept-Encoding": "identity"})
        assert plain.status_code == 200
        assert plain.headers.get("content-encoding") is None
        assert plain.headers["content-type"].startswith("text/javascript")
        assert "immutable" in plain.headers["cache-control"] and "max-age=315360000" in plain.headers["cache-control"]
        gzipped = client.get(bundle, headers={"Accept-Encoding": "gzip"})
        assert gzipped.headers["content-encoding"] == "gzip"
        assert int(gzipped.headers["content-length"]) < int(plain.headers["content-length"]) / 2
        assert gzipped.content == plain.content  # httpx decodes: same bytes
        again = client.get(bundle, headers={"If-None-Match": plain.headers["etag"]})
        assert again.status_code == 304 and again.content == b""


def test_unhashed_admin_css_has_a_bounded_cache_and_unknown_files_are_404(gateway_server, collected):
    with httpx.Client(base_url=gateway_server.url) as client:
        css = client.get("/static/admin/css/base.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        assert "immutable" not in css.headers["cache-control"]
        assert client.get("/static/admin/css/nope.css").status_code == 404
        assert client.post("/static/admin/css/base.css").status_code == 405


def test_admin_is_styled_without_collectstatic(gateway_server, tmp_path):
    """A server started before `collectstatic` (empty STATIC_ROOT) serves the apps' own static files."""
    from gateway_project.asgi import static_files

    with override_settings(STATIC_ROOT=str(tmp_path)):
        static_files.reload()
        try:
            with httpx.Client(base_url=gateway_server.url) as client:
                login = client.get("/admin/login/")
                assert "/static/admin/css/base.css" in login.text
                assert client.get("/static/admin/css/base.css").status_code == 200
                assert client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css").status_code == 200
        finally:
            static_files.reload()
