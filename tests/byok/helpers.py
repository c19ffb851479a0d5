"""Helpers of the BYOK tests: catalog providers and a credential created through the API."""

from __future__ import annotations

from inference.models import ApiFormat, Provider

RAW_KEY = "sk-test-Zq8vT4mN2pL9xR7wK3bYc6hJ5gF1dAbCd"


def make_provider(slug: str = "openai", api_format: str = ApiFormat.OPENAI_CHAT, base_url: str = "") -> Provider:
    provider, _ = Provider.objects.update_or_create(
        slug=slug, defaults={"name": slug.title(), "api_format": api_format, "base_url": base_url}
    )
    return provider


def create_credential(client, **body):
    payload = {"provider": "openai", "key": RAW_KEY, **body}
    response = client.post("/api/v1/byok", payload, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["data"]
