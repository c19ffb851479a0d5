"""python manage.py rollup_usage [--since D] [--until D]

Rebuilds the usage rollups of whole UTC days from the Generation rows (the hourly tier, then the daily tier as
the sums of the hourly rows): once after upgrading to a version with analytics (rows written before it have no
rollups), or to repair days whose upsert failed (logged by `gateway.analytics`). Default: the last completed UTC
day. Rebuild closed days: a generation recorded while its own day is rebuilt may be missed or counted twice.
`--daily-only` recomputes only the daily tier from the hourly rows (no Generation row is read).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from analytics.rebuild import rebuild_daily, rebuild_day
from rankings.aggregation import last_completed_day


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"not a YYYY-MM-DD date: {value!r}") from None


class Command(BaseCommand):
    help = "Rebuild the usage rollups (analytics, hourly and daily) of whole UTC days from Generation rows."

    def add_arguments(self, parser):
        parser.add_argument("--since", help="First UTC day (YYYY-MM-DD), default: --until")
        parser.add_argument("--until", help="Last UTC day (YYYY-MM-DD), default: the last completed day")
        parser.add_argument(
            "--daily-only", action="store_true", help="Only recompute the daily tier from the hourly rollups"
        )

    def handle(self, *args, **options):
        until = _date(options["until"]) if options["until"] else last_completed_day()
        since = _date(options["since"]) if options["since"] else until
        if since > until:
            raise CommandError("--since must not be after --until")
        days = (until - since).days + 1
        if options["daily_only"]:
            start = datetime.combine(since, time.min, tzinfo=UTC)
            with transaction.atomic():
                total = rebuild_daily(start, start + timedelta(days=days))
            self.stdout.write(f"Rebuilt {total} daily rollup rows for {days} day(s) {since}..{until}")
            return
        total = 0
        day = since
        while day <= until:
            total += rebuild_day(day)
            day += timedelta(days=1)
        self.stdout.write(f"Rebuilt {total} rollup rows for {days} day(s) {since}..{until}")
