"""Prepare the benchmark database: migrate, one organization with an inference key, and catalog rows.

`bench/fake` (provider `bench-upstream`, api_format BENCH_API_FORMAT, default openai-responses) points at the
fake upstream on http://127.0.0.1:${UPSTREAM_PORT:-9100}/v1; `echo/echo-1` is the in-process echo provider.
Prints the raw inference key on stdout. Run with the same DATABASE_URL the benchmarked gateway uses.
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

from accounts import services  # noqa: E402
from inference.models import Endpoint, Model, Provider  # noqa: E402


def catalog_row(model_slug: str, provider_slug: str, api_format: str, base_url: str, upstream_model: str) -> None:
    provider, _ = Provider.objects.update_or_create(
        slug=provider_slug,
        defaults={
            "name": provider_slug,
            "api_format": api_format,
            "base_url": base_url,
            "api_key_env": "BENCH_KEY",
            "regions": ["global"],
            "zdr": True,
        },
    )
    model, _ = Model.objects.update_or_create(
        slug=model_slug, defaults={"canonical_slug": model_slug, "vendor": model_slug.split("/")[0], "public": False}
    )
    Endpoint.objects.update_or_create(
        model=model,
        provider=provider,
        defaults={
            "upstream_model": upstream_model,
            "prompt_price": Decimal("0.000001"),
            "completion_price": Decimal("0.000002"),
        },
    )


def main() -> None:
    call_command("migrate", verbosity=0, interactive=False)
    port = os.environ.get("UPSTREAM_PORT", "9100")
    api_format = os.environ.get("BENCH_API_FORMAT", "openai-responses")
    catalog_row("bench/fake", "bench-upstream", api_format, f"http://127.0.0.1:{port}/v1", "fake-model")
    catalog_row("echo/echo-1", "echo", "echo", "", "echo-1")
    organization = services.organization_create(name=f"bench-{os.getpid()}")
    user = services.user_create(organization=organization, username=f"bench-{os.getpid()}")
    key = services.api_key_create(organization=organization, name="bench", creator=user)
    print(key.raw_key)


if __name__ == "__main__":
    main()
