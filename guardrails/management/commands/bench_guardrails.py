"""Micro-benchmark of the guardrail middlewares on a typical request (no database, no network).

    python manage.py bench_guardrails [--iterations 5000]

Runs RegionMiddleware + GuardrailMiddleware around a no-op handler with the effective policy already cached
(the steady state of the data plane), for: no guardrail, a guardrail with all eight built-ins and five
custom regexes (nothing to find), and the same on a request whose text has PII to redact. Prints the
p50/p99 wall time and the mean CPU time (process time, steadier on a shared machine) per request, in
microseconds.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from copy import deepcopy
from datetime import UTC, datetime

from django.core.management.base import BaseCommand

from guardrails.detectors import BUILTIN_SLUGS
from guardrails.middleware import GuardrailMiddleware, RegionMiddleware
from guardrails.policy import EffectivePolicy, GuardrailRule, build_filters, effective_policy
from inference.pipeline.context import Context

REGEXES = [
    r"(?i)project\s+falcon",
    r"ACCT-\d{6}",
    r"\bsk-[A-Za-z0-9]{20,}\b",
    r"(?i)confidential",
    r"\b[A-Z]{3}-\d{4}\b",
]
INSTRUCTIONS = "You are a helpful assistant for an online shop. Answer briefly and politely, in the user's language."
MESSAGES = [
    "Hi! I ordered a pair of running shoes last week and they have not arrived yet. Can you tell me what "
    "usually causes delays and what I should do next?",
    "Usually delays come from the carrier. You can check the tracking link in your confirmation e-mail.",
    "Thanks. The tracking page says the parcel is in the sorting centre since Monday. Should I wait or ask "
    "for a refund? Also, which size guide do you recommend for wide feet?",
]
PII = " My e-mail is jane.roe@example.com and my phone +1 415 555 2671; card 4111 1111 1111 1111."


def typical_body(pii: bool = False) -> dict:
    items = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": [{"type": "input_text", "text": text}]}
        for i, text in enumerate(MESSAGES)
    ]
    if pii:
        items[-1]["content"][0]["text"] += PII
    return {"model": "openai/gpt-4o-mini", "instructions": INSTRUCTIONS, "input": items, "max_output_tokens": 300}


def full_policy() -> EffectivePolicy:
    builtins = [{"slug": slug, "action": "redact"} for slug in BUILTIN_SLUGS]
    customs = [{"pattern": p, "action": "redact", "label": "[CUSTOM]"} for p in REGEXES]
    rule = GuardrailRule(
        id=uuid.uuid4(), name="bench", scope="api-key", allowed_data_regions=frozenset({"global"}),
        allowed_models=frozenset({"openai/gpt-4o-mini"}), allowed_providers=None, ignored_models=frozenset(),
        ignored_providers=frozenset(), filters=build_filters(builtins, customs), enable_free_model_publication=False,
        enable_free_model_training=False, enable_paid_model_training=False,
        zdr={"a": False, "b": False, "c": False, "d": False, "other": False}, include_byok_in_budgets=False,
        limit_usd=None, reset_interval=None,
    )  # fmt: skip
    return effective_policy([rule])


async def _noop(ctx: Context) -> None:
    return None


async def measure(policy: EffectivePolicy, body: dict, iterations: int) -> tuple[list[float], float]:
    """Wall-time samples (us) and the mean CPU time (us) of the two middlewares."""
    chain = RegionMiddleware(GuardrailMiddleware(_noop))
    samples = []
    cpu = 0.0
    for _ in range(iterations):
        ctx = Context(
            request_id="bench", created_at=datetime.now(UTC), started=0.0, method="POST", path="/api/v1/responses",
            host="127.0.0.1:8000", headers={}, raw_body=b"", body=deepcopy(body), guardrail_policy=policy,
        )  # fmt: skip
        cpu_start, start = time.process_time(), time.perf_counter()
        await chain(ctx)
        samples.append((time.perf_counter() - start) * 1e6)
        cpu += time.process_time() - cpu_start
    return samples, cpu / iterations * 1e6


class Command(BaseCommand):
    help = "Micro-benchmark of the guardrail middlewares (all eight built-ins + five regexes) on a typical request."

    def add_arguments(self, parser):
        parser.add_argument("--iterations", type=int, default=5000)

    def handle(self, *args, iterations: int, **options):
        policy = full_policy()
        cases = [
            ("no guardrail", EffectivePolicy(), typical_body()),
            ("8 built-ins + 5 regexes, clean text", policy, typical_body()),
            ("8 built-ins + 5 regexes, PII redacted", policy, typical_body(pii=True)),
        ]
        chars = sum(len(m) for m in MESSAGES) + len(INSTRUCTIONS)
        self.stdout.write(f"typical request: instructions + {len(MESSAGES)} messages, {chars} characters")
        for name, case_policy, body in cases:
            asyncio.run(measure(case_policy, body, 200))  # warm-up
            samples, cpu = asyncio.run(measure(case_policy, body, iterations))
            samples.sort()
            p50, p99 = samples[len(samples) // 2], samples[int(len(samples) * 0.99)]
            self.stdout.write(
                f"{name:40} wall p50 {p50:7.1f} us  p99 {p99:8.1f} us  mean {statistics.fmean(samples):7.1f} us"
                f"   cpu mean {cpu:7.1f} us"
            )
