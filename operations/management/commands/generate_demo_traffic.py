"""python manage.py generate_demo_traffic --days N --per-day M [--models K] [--until D]

Writes synthetic Generation rows (and K public demo models) to measure aggregation and analytics at scale, then
rebuilds the hourly usage rollups of those days (analytics/rebuild.py). On PostgreSQL the rows are produced by
the database itself (generate_series), elsewhere by bulk inserts. The rows are spread over the organization's
API keys (their workspaces and creators), have latencies (mostly 200-1000 ms, 5 % up to 20 s), a cost, and 2 %
of them failed. Never run it against a production database: the rows look like real traffic of the first
organization.
"""

import random
import time
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from accounts.models import ApiKey, Organization
from analytics.rebuild import rebuild_day
from gateway_project.day_range import last_completed_day
from inference.models import Generation, Model
from textscan.classifier import CATEGORIES

DEMO_PREFIX = "demo/model-"

_PG_INSERT = """
INSERT INTO inference_generation (id, organization_id, key_hash, session_id, requested_model, model,
    model_permaslug, provider, upstream_id, status, finish_reason, error_message, input_tokens, output_tokens,
    cached_tokens, reasoning_tokens, cost, is_byok, streamed, tool_calls, input_modalities, output_modalities,
    context_bucket, category, language_type, pipeline, trace, metadata, created_at, ingress_format, usage_estimated,
    workspace_id, user_id, latency_ms)
SELECT md5(random()::text || g::text)::uuid, %(org)s, (%(hashes)s::text[])[m.k], '', m.slug, m.slug, m.slug,
    CASE WHEN random() < 0.8 THEN 'demo' ELSE 'demo-backup' END, '',
    CASE WHEN random() < 0.02 THEN 'failed' ELSE 'completed' END,
    'stop', '', (random() * 20000)::int, (random() * 2000)::int, (random() * 1000)::int, (random() * 200)::int,
    round((random() * 0.02)::numeric, 8), false, false,
    CASE WHEN random() < 0.1 THEN 1 ELSE 0 END,
    CASE WHEN random() < 0.05 THEN '["text","image"]'::jsonb ELSE '["text"]'::jsonb END,
    '["text"]'::jsonb, '',
    CASE WHEN random() < %(rate)s THEN (%(categories)s::text[])[1 + floor(random() * %(ncat)s)::int] END,
    NULL, '[]'::jsonb, '{}'::jsonb, '{}'::jsonb,
    %(day)s::timestamptz + (random() * interval '86399 seconds'), 'responses', false,
    (%(workspaces)s::uuid[])[m.k], (%(users)s::uuid[])[m.k],
    (150 + random() * 850 + CASE WHEN random() < 0.05 THEN random() * 20000 ELSE 0 END)::int
FROM (SELECT g, 'demo/model-' || lpad(floor(power(random(), 3) * %(k)s)::int::text, 4, '0') AS slug,
             1 + floor(power(random(), 2) * %(nkeys)s)::int AS k
      FROM generate_series(1, %(n)s) AS g) AS m
"""


class Command(BaseCommand):
    help = "Generate synthetic Generation rows for aggregation benchmarks."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=7)
        parser.add_argument("--per-day", type=int, default=10_000)
        parser.add_argument("--models", type=int, default=200)
        parser.add_argument("--until", help="Last day (YYYY-MM-DD), default: last completed UTC day")
        parser.add_argument("--sample-rate", type=float, default=0.1, help="Fraction given a category")
        parser.add_argument("--no-rollups", action="store_true", help="Do not rebuild the usage rollups of the days")

    def handle(self, *args, **options):
        organization = Organization.objects.order_by("created_at").first()
        if organization is None:
            raise CommandError("no organization: run `python manage.py bootstrap` first")
        k = options["models"]
        Model.objects.bulk_create(
            [
                Model(slug=f"{DEMO_PREFIX}{i:04d}", canonical_slug=f"{DEMO_PREFIX}{i:04d}", vendor="demo", public=True)
                for i in range(k)
            ],
            ignore_conflicts=True,
        )
        until = date.fromisoformat(options["until"]) if options["until"] else last_completed_day()
        keys = _demo_keys(organization)
        started = time.perf_counter()
        rollups = 0
        for offset in range(options["days"]):
            day = until - timedelta(days=options["days"] - 1 - offset)
            self._day(organization, keys, day, options["per_day"], k, options["sample_rate"])
            if not options["no_rollups"]:
                rollups += rebuild_day(day)
            self.stdout.write(f"{day}: {options['per_day']} generations")
        self.stdout.write(
            f"Generated {options['days'] * options['per_day']} generations and {rollups} rollup rows "
            f"in {time.perf_counter() - started:.1f} s"
        )

    def _day(self, organization, keys: list[tuple], day: date, n: int, k: int, rate: float) -> None:
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
        if connection.vendor == "postgresql":
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    _PG_INSERT,
                    {
                        "org": organization.id,
                        "rate": rate,
                        "categories": list(CATEGORIES),
                        "ncat": len(CATEGORIES),
                        "day": start,
                        "n": n,
                        "k": k,
                        "nkeys": len(keys),
                        "hashes": [key[0] for key in keys],
                        "workspaces": [key[1] for key in keys],
                        "users": [key[2] for key in keys],
                    },
                )
            return
        rng = random.Random(day.toordinal())
        batch = []
        for _ in range(n):
            slug = f"{DEMO_PREFIX}{int(rng.random() ** 3 * k):04d}"
            key_hash, workspace_id, user_id = keys[int(rng.random() ** 2 * len(keys))]
            batch.append(
                Generation(
                    id=uuid.uuid4(),
                    organization=organization,
                    workspace_id=workspace_id,
                    key_hash=key_hash,
                    user_id=user_id,
                    model=slug,
                    model_permaslug=slug,
                    provider="demo" if rng.random() < 0.8 else "demo-backup",
                    status="failed" if rng.random() < 0.02 else "completed",
                    input_tokens=rng.randrange(20_000),
                    output_tokens=rng.randrange(2_000),
                    cached_tokens=rng.randrange(1_000),
                    reasoning_tokens=rng.randrange(200),
                    cost=Decimal(rng.randrange(2_000_000)) / 10**8,
                    latency_ms=int(150 + rng.random() * 850 + (rng.random() * 20_000 if rng.random() < 0.05 else 0)),
                    tool_calls=1 if rng.random() < 0.1 else 0,
                    input_modalities=["text"],
                    output_modalities=["text"],
                    category=rng.choice(CATEGORIES) if rng.random() < rate else None,
                    created_at=start + timedelta(seconds=rng.randrange(86_400)),
                )
            )
            if len(batch) == 5000:
                Generation.objects.bulk_create(batch)
                batch = []
        Generation.objects.bulk_create(batch)


def _demo_keys(organization) -> list[tuple]:
    """(hash, workspace id, creator id) of the organization's keys, or one keyless entry when it has none."""
    keys = [
        (key_hash, str(workspace_id) if workspace_id else None, str(user_id) if user_id else None)
        for key_hash, workspace_id, user_id in ApiKey.objects.filter(organization=organization)
        .order_by("created_at")
        .values_list("hash", "workspace_id", "creator_id")
    ]
    return keys or [("", None, None)]
