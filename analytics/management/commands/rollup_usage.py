"""python manage.py rollup_usage [--since D] [--until D] [--daily-only]

Rebuilds the usage rollups of whole UTC days from the Generation rows (the hourly tier, then the daily tier as
the sums of the hourly rows): once after upgrading to a version with analytics (rows written before it have no
rollups), or to repair days whose upsert failed (logged by `gateway.analytics`). Default: the last completed UTC
day. Rebuild closed days: a generation recorded while its own day is rebuilt may be missed or counted twice.
`--daily-only` recomputes only the daily tier from the hourly rows (no Generation row is read).
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from django.core.management.base import BaseCommand
from django.db import transaction

from analytics.rebuild import rebuild_daily, rebuild_day
from gateway_project.day_range import add_day_range_arguments, day_range


class Command(BaseCommand):
    help = "Rebuild the usage rollups (analytics, hourly and daily) of whole UTC days from Generation rows."

    def add_arguments(self, parser):
        add_day_range_arguments(parser)
        parser.add_argument(
            "--daily-only", action="store_true", help="Only recompute the daily tier from the hourly rollups"
        )

    def handle(self, *args, **options):
        days = day_range(options)
        if options["daily_only"]:
            start = datetime.combine(days[0], time.min, tzinfo=UTC)
            with transaction.atomic():
                total = rebuild_daily(start, start + timedelta(days=len(days)))
            self.stdout.write(f"Rebuilt {total} daily rollup rows for {len(days)} day(s) {days[0]}..{days[-1]}")
            return
        total = sum(rebuild_day(day) for day in days)
        self.stdout.write(f"Rebuilt {total} rollup rows for {len(days)} day(s) {days[0]}..{days[-1]}")
