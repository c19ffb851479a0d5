"""Helpers of the budgets tests: a Context as the data plane builds it, and candidates with known prices."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync

from accounts.models import ApiKey
from accounts.principal import Principal
from budgets.middleware import clear_caches
from inference.pipeline.context import Candidate, Context


def candidate(prompt="0", completion="0.01", *, max_output_tokens=None, context_length=None, is_free=False):
    return Candidate(
        endpoint_id=uuid.uuid4(),
        model_slug="vendor/model",
        canonical_slug="vendor/model",
        vendor="vendor",
        public=True,
        provider_slug="prov",
        provider_name="Prov",
        api_format="echo",
        base_url="",
        platform_key_env="",
        upstream_model="model",
        prompt_price=Decimal(prompt),
        completion_price=Decimal(completion),
        cached_prompt_price=None,
        is_free=is_free,
        context_length=context_length,
        max_output_tokens=max_output_tokens,
        supported_parameters=(),
        zdr=False,
        trains_on_data=False,
        publishes_prompts=False,
        regions=("global",),
        input_modalities=("text",),
        output_modalities=("text",),
    )


def principal_of(key_hash: str) -> Principal:
    return Principal.from_key(ApiKey.objects.get(hash=key_hash))


def make_ctx(principal, body=None, candidates=None, policy_version=0, spend_limits=None) -> Context:
    ctx = Context(
        request_id=f"req-{uuid.uuid4().hex[:12]}",
        created_at=datetime.now(UTC),
        started=time.perf_counter(),
        method="POST",
        path="/api/v1/responses",
        host="testserver",
        headers={},
        raw_body=b"",
        body=body if body is not None else {"model": "vendor/model", "input": "", "max_output_tokens": 10},
        principal=principal,
        policy_version=policy_version,
        candidates=candidates if candidates is not None else [candidate()],
    )
    ctx.spend_limits = list(spend_limits or [])
    return ctx


class Upstream:
    """The innermost handler: records calls and reports the configured outcome."""

    def __init__(self, cost="0.05", *, is_byok=False, fail=None, status="completed"):
        self.cost = Decimal(cost)
        self.is_byok = is_byok
        self.fail = fail
        self.status = status
        self.calls = 0

    async def __call__(self, ctx: Context) -> None:
        self.calls += 1
        ctx.outcome.credential_is_byok = self.is_byok
        if self.fail is not None:
            ctx.outcome.status = "failed"
            ctx.outcome.cost = Decimal(0)
            raise self.fail
        ctx.outcome.status = self.status
        ctx.outcome.cost = self.cost


def run(middleware, ctx):
    """Run the middleware the way the consumer does, in this (test) thread's database connection."""
    return async_to_sync(middleware)(ctx)


@pytest.fixture(autouse=True)
def _fresh_caches():
    # Test databases roll back or are flushed: cached counter ids and budgets of one test are not the next's.
    clear_caches()
    yield
    clear_caches()
