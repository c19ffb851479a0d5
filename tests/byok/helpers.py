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


def make_candidate(provider_slug: str = "openai", model_slug: str = "openai/gpt-4o-mini", **overrides):
    """A routing candidate as inference.routing builds it (a frozen snapshot)."""
    import uuid
    from decimal import Decimal

    from inference.pipeline.context import Candidate

    fields = {
        "endpoint_id": uuid.uuid4(),
        "model_slug": model_slug,
        "canonical_slug": f"{model_slug}-2024-07-18",
        "vendor": model_slug.split("/")[0],
        "public": True,
        "provider_slug": provider_slug,
        "provider_name": provider_slug.title(),
        "api_format": "openai-chat",
        "base_url": "http://127.0.0.1:9/v1",
        "platform_key_env": "BYOK_TEST_PLATFORM_KEY",
        "upstream_model": model_slug.split("/")[-1],
        "prompt_price": Decimal("0.000001"),
        "completion_price": Decimal("0.000002"),
        "cached_prompt_price": None,
        "is_free": False,
        "context_length": 128000,
        "max_output_tokens": None,
        "supported_parameters": (),
        "zdr": False,
        "trains_on_data": False,
        "publishes_prompts": False,
        "regions": ("global",),
        "input_modalities": ("text",),
        "output_modalities": ("text",),
    }
    fields.update(overrides)
    return Candidate(**fields)


def make_context(principal, policy_version: int = 1):
    """A data-plane context of an authenticated request."""
    import time

    from django.utils import timezone

    from inference.pipeline.context import Context

    return Context(
        request_id="req-test",
        created_at=timezone.now(),
        started=time.perf_counter(),
        method="POST",
        path="/api/v1/responses",
        host="testserver",
        headers={},
        raw_body=b"{}",
        principal=principal,
        policy_version=policy_version,
    )


def database_dump() -> str:
    """Every row of every table, as text."""
    from django.db import connection

    parts = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            parts.extend(repr(row) for row in cursor.fetchall())
    return "\n".join(parts)
