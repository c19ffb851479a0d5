"""Helpers of the budgets tests: a Context as the data plane builds it, and candidates with known prices."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from datetime import time as day_time
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync

from accounts.models import ApiKey
from accounts.principal import Principal
from budgets.middleware import clear_caches
from gateway_project.pipeline import admitted
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


def gated(handler):
    """`handler` as the chain's innermost step: it awaits the spend hold sent ahead before the upstream call, as
    inference.handler does (gateway_project.pipeline.admitted), so a refused hold never reaches it."""

    async def innermost(ctx: Context) -> None:
        await admitted(ctx)
        await handler(ctx)

    return innermost


def run(middleware, ctx):
    """Run the middleware the way the consumer does, in this (test) thread's database connection."""
    return async_to_sync(middleware)(ctx)


@pytest.fixture(autouse=True)
def _fresh_caches():
    # Test databases roll back or are flushed: cached counter ids and budgets of one test are not the next's.
    clear_caches()
    yield
    clear_caches()


MIDNIGHT_MARGIN = timedelta(minutes=3)  # far more than any test here takes (seconds)


def wait_before_test(now: datetime) -> tuple[float, datetime]:
    """Seconds to wait so that a test starting at `now` (UTC) has MIDNIGHT_MARGIN before the next 00:00 UTC, and
    that midnight (the end of the test's day)."""
    midnight = datetime.combine(now.date() + timedelta(days=1), day_time(0), UTC)
    if midnight - now >= MIDNIGHT_MARGIN:
        return 0.0, midnight
    return (midnight - now).total_seconds() + 0.5, midnight + timedelta(days=1)


@pytest.fixture(autouse=True)
def _clear_of_utc_midnight():
    """Every test runs within one UTC day. Daily, weekly and monthly intervals all turn at 00:00 UTC, so a test
    whose spend is written before midnight and read after it saw its usage reset (seen once at 23:59:59 in
    test_e2e.py::test_get_key_reports_usage_and_limit_remaining_that_enforcement_agrees_with). A test that would
    start closer than MIDNIGHT_MARGIN to the next midnight waits until just past it; one that still runs past the
    end of its day is reported as such rather than as a wrong figure."""
    wait, end_of_day = wait_before_test(datetime.now(UTC))
    if wait:
        time.sleep(wait)
    yield
    assert datetime.now(UTC) < end_of_day, f"the test ran past {end_of_day:%Y-%m-%d %H:%M} UTC"
