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

from accounts.principal import Principal
from guardrails.middleware import GuardrailMiddleware, RegionMiddleware
from guardrails.policy import EffectivePolicy, GuardrailRule, build_filters, effective_policy
from inference.pipeline.context import Context
from textscan.detectors import BUILTIN_SLUGS

# The middleware reads the key's principal (spend limits); a request through the bench has one.
PRINCIPAL = Principal(
    key_id=uuid.uuid4(), key_hash="bench", key_name="bench", organization_id=uuid.uuid4(),
    workspace_id=uuid.uuid4(), user_id=None, is_management=False, disabled=False, expires_at=None, limit=None,
    limit_reset=None, include_byok_in_limit=False,
)  # fmt: skip

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
LONG_MESSAGE = (
    "Hi, I'm writing on behalf of our operations team. We've been using your platform for about eight months now "
    "and overall it has been a good experience, but over the last two weeks we ran into several issues that I'd "
    "like to describe in detail so your engineers can look into them.\n\nFirst, the nightly export job that we "
    "scheduled through the dashboard has failed three times (on the 4th, the 9th and the 12th). Each time the job "
    "log shows a timeout after roughly forty minutes, even though the dataset has not grown significantly. Our "
    "data engineer, Michael Thompson, checked the query plans on our side and did not find anything unusual. He "
    "suspects the problem is related to the new rate limiting that was announced in your release notes for version "
    "4.2, but we could not confirm that.\n\nSecond, several of our users report that the web interface becomes "
    "very slow when they open reports with more than a few hundred rows. Sorting by date takes up to twenty "
    "seconds, and filtering by customer name sometimes never finishes at all. This happens in Chrome and Firefox "
    "alike, on both Windows and macOS machines, so it does not look like a browser-specific problem. We cleared "
    "caches, disabled extensions and tried private windows.\n\nThird, and this is the most urgent one, the API "
    "started returning intermittent 502 errors on the orders endpoint. Roughly one request in fifty fails, and "
    "retrying usually succeeds. Our integration partner in Hamburg noticed it first because their warehouse system "
    "processes orders in large batches overnight. They asked whether there is a maintenance window we are not "
    "aware of, or whether we should implement exponential backoff on our side.\n\nCould you please summarize what "
    "might cause each of these issues, which logs or diagnostics you would need from us, and what workarounds we "
    "could apply in the meantime? We would also appreciate an estimate of when a fix might be available, since our "
    "quarterly reporting deadline is at the end of next month and the export job is critical for it. If a call "
    "would be easier, our team is available most afternoons (Central European Time).\n\nFor reference, our account "
    "is registered under the operations department, and you can reach me directly at sarah.lindqvist@example.org "
    "or on +44 20 7946 0958. Thanks a lot for your help, and please let me know if anything in this description is "
    "unclear or if you need further details from our side.\n\nBest regards,\nSarah Lindqvist"
)
PII = " My e-mail is jane.roe@example.com and my phone +1 415 555 2671; card 4111 1111 1111 1111."


def typical_body(pii: bool = False) -> dict:
    items = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": [{"type": "input_text", "text": text}]}
        for i, text in enumerate(MESSAGES)
    ]
    if pii:
        items[-1]["content"][0]["text"] += PII
    return {"model": "openai/gpt-4o-mini", "instructions": INSTRUCTIONS, "input": items, "max_output_tokens": 300}


def long_body() -> dict:
    """A realistic long prompt: one user message of 2,439 characters (a support request with a name, an e-mail
    address and a phone number)."""
    return {"model": "openai/gpt-4o-mini", "input": [{"role": "user", "content": [{"type": "input_text",
            "text": LONG_MESSAGE}]}], "max_output_tokens": 300}  # fmt: skip


def short_body() -> dict:
    """The benchmark's prompt (bench/run.sh)."""
    return {"model": "openai/gpt-4o-mini", "input": "Say hello"}


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
            principal=PRINCIPAL,
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
            ("8 built-ins + 5 regexes, 'Say hello'", policy, short_body()),
            ("8 built-ins + 5 regexes, 2.4 KB prompt", policy, long_body()),
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
