"""Turn every policy of the data plane on for the benchmark key (run after bench/prepare.py, same DATABASE_URL).

    .venv/bin/python bench/policies.py <raw key>

Assigns the guardrail of bench/guardrails_prepare.py (all built-in detectors and five regexes, redacting),
a daily workspace budget of 1,000 USD, a key credit limit of 1,000 USD, and rate limits on the key and its
workspace (requests and tokens per minute; BENCH_RATE_LIMITS=0 unsets them), so that the guardrail,
budget, key-limit and rate-limit checks all run on every request (none of them refuses: the limits are far
away). BENCH_POLICY_SET picks a subset by letter: g (the guardrail), b (the workspace budget and the key
limit), r (the rate limits); the default is "gbr" (bench/latency_ab.sh uses it to measure each policy's share).
"""

from __future__ import annotations

import os
import sys
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")

from guardrails_prepare import assign

from accounts.keys import hash_key
from accounts.models import ApiKey
from budgets.services import budget_put


def main(raw_key: str) -> None:
    chosen = os.environ.get("BENCH_POLICY_SET", "gbr")
    if "g" in chosen:
        assign(raw_key)
    key = ApiKey.objects.get(hash=hash_key(raw_key))
    fields = ["requests_per_minute", "tokens_per_minute"]
    if "b" in chosen:
        key.limit = Decimal("1000")
        fields.append("limit")
    on = "r" in chosen and os.environ.get("BENCH_RATE_LIMITS", "1") == "1"
    key.requests_per_minute = key.workspace.requests_per_minute = 1_000_000_000 if on else None
    key.tokens_per_minute = key.workspace.tokens_per_minute = 2_000_000_000 if on else None
    key.workspace.save(update_fields=["requests_per_minute", "tokens_per_minute"])
    key.save(update_fields=fields)
    if "b" in chosen:
        budget_put(workspace=key.workspace, interval="daily", limit_usd=Decimal("1000"))
    print(f"policies on: {chosen}")


if __name__ == "__main__":
    main(sys.argv[1])
