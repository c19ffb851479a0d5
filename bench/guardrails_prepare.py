"""Database set-up of bench/guardrails_overhead.sh (run with the benchmarked gateway's DATABASE_URL).

python bench/guardrails_prepare.py setup UPSTREAM_BASE_URL   # migrate, org, catalog row; prints the key
python bench/guardrails_prepare.py assign                    # guardrail: 8 built-ins + 5 regexes → the key
"""

from __future__ import annotations

import os
import sys
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402

from accounts import services as account_services  # noqa: E402
from accounts.keys import hash_key  # noqa: E402
from accounts.models import ApiKey  # noqa: E402
from guardrails import services  # noqa: E402
from guardrails.management.commands.bench_guardrails import REGEXES  # noqa: E402
from inference.models import Endpoint, Model, Provider  # noqa: E402
from textscan.detectors import BUILTIN_SLUGS  # noqa: E402


def setup(base_url: str) -> None:
    call_command("migrate", verbosity=0)
    provider, _ = Provider.objects.update_or_create(
        slug="bench-upstream",
        defaults={"name": "bench", "api_format": "openai-responses", "base_url": base_url, "api_key_env": "BENCH_KEY",
                  "regions": ["global"], "zdr": True},
    )  # fmt: skip
    model, _ = Model.objects.update_or_create(
        slug="bench/fake", defaults={"canonical_slug": "bench/fake", "vendor": "bench", "context_length": 100000}
    )
    Endpoint.objects.update_or_create(
        model=model, provider=provider,
        defaults={"upstream_model": "fake-model", "prompt_price": Decimal("0.000001"),
                  "completion_price": Decimal("0.000002")},
    )  # fmt: skip
    organization = account_services.organization_create(name="bench")
    print(account_services.api_key_create(organization=organization, name="bench").raw_key)


def assign(raw_key: str | None) -> None:
    if raw_key:
        key = ApiKey.objects.get(hash=hash_key(raw_key))
    else:
        key = ApiKey.objects.get(organization__name="bench", name="bench")
    organization = key.organization
    guardrail = services.guardrail_create(
        organization=organization,
        data={
            "name": "all built-ins and five regexes",
            "content_filter_builtins": [{"slug": slug, "action": "redact"} for slug in BUILTIN_SLUGS],
            "content_filters": [{"pattern": p, "action": "redact", "label": "[CUSTOM]"} for p in REGEXES],
        },
    )
    services.guardrail_assign_keys(guardrail=guardrail, key_hashes=[key.hash])
    print(f"assigned {guardrail.id}")


if __name__ == "__main__":
    setup(sys.argv[2]) if sys.argv[1] == "setup" else assign(sys.argv[2] if len(sys.argv) > 2 else None)
