"""Helpers to drive the guardrail middlewares directly with a Context and a fake inner handler."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync

from accounts.models import ApiKey
from accounts.principal import Principal
from gateway_project.policy_cache import read_policy_version
from guardrails import middleware
from inference.pipeline.context import Candidate, Context
from inference.pipeline.runner import build_chain

CHAIN = ["guardrails.middleware.RegionMiddleware", "guardrails.middleware.GuardrailMiddleware"]


@pytest.fixture(autouse=True)
def _fresh_policy_cache():
    middleware._policies.clear()
    yield
    middleware._policies.clear()


PROXY_ADDRESS = "10.0.0.1"
# A deployment whose proxy (at PROXY_ADDRESS) sets the data region of each request in a header.
REGION_PROXY = {"GATEWAY_REGION_HEADER": "X-Gateway-Region", "GATEWAY_TRUSTED_PROXIES": ["10.0.0.0/30"]}


def make_ctx(
    key_hash: str,
    body: dict | None = None,
    host: str = "127.0.0.1:8000",
    headers=None,
    region: str | None = None,
    client_ip: str = "192.0.2.7",
) -> Context:
    """A context; `region` makes it come through the trusted proxy of REGION_PROXY with that region's header."""
    if region is not None:
        headers, client_ip = {**(headers or {}), "x-gateway-region": region}, PROXY_ADDRESS
    return Context(
        request_id=uuid.uuid4().hex,
        created_at=datetime.now(UTC),
        started=time.perf_counter(),
        method="POST",
        path="/api/v1/responses",
        host=host,
        headers={"host": host, **(headers or {})},
        raw_body=b"",
        body=body if body is not None else {"model": "openai/gpt-4o-mini", "input": "Hello there"},
        principal=Principal.from_key(ApiKey.objects.get(hash=key_hash)),
        policy_version=read_policy_version(),
        client_ip=client_ip,
    )


class Inner:
    """The rest of the chain: records the context it was called with."""

    def __init__(self) -> None:
        self.calls: list[Context] = []

    async def __call__(self, ctx: Context) -> None:
        self.calls.append(ctx)


def run(ctx: Context) -> Inner:
    inner = Inner()
    async_to_sync(build_chain(inner, CHAIN))(ctx)
    return inner


BASE = Candidate(
    endpoint_id=uuid.uuid4(), model_slug="openai/gpt-4o-mini", canonical_slug="openai/gpt-4o-mini-2024-07-18",
    vendor="openai", public=True, provider_slug="openai", provider_name="OpenAI", api_format="openai-responses",
    base_url="http://x", platform_key_env="", upstream_model="gpt-4o-mini", prompt_price=Decimal("0.000001"),
    completion_price=Decimal("0.000002"), cached_prompt_price=None, is_free=False, context_length=None,
    max_output_tokens=None, supported_parameters=(), zdr=False, trains_on_data=False, publishes_prompts=False,
    regions=("global",), input_modalities=("text",), output_modalities=("text",),
)  # fmt: skip


def candidate(**changes) -> Candidate:
    return replace(BASE, endpoint_id=uuid.uuid4(), **changes)


def allowed(ctx: Context, cand: Candidate) -> bool:
    return all(f.allows(cand) for f in ctx.endpoint_filters)
