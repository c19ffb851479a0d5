"""GET / on the served application: what this server is and where to go, instead of a bare 404."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_base_address_names_the_gateway_and_links_its_pages(gateway_server):
    with httpx.Client(base_url=gateway_server.url) as client:
        landing = client.get("/")
        assert landing.status_code == 200 and landing.headers["content-type"] == "application/json"
        body = landing.json()
        assert body["name"] == "model-gateway" and body["version"] == "1.0.0" and body["api_base"] == "/api/v1"
        for name in ("admin", "api_docs", "api_reference", "openapi", "health_ready", "health_live"):
            linked = client.get(body["links"][name])
            assert linked.status_code in (200, 302), (name, linked.status_code)  # /admin/ redirects to its login
        assert client.get("/no-such-page").status_code == 404
