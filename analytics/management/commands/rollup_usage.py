"""python manage.py rollup_usage [--since D] [--until D]

Rebuilds the hourly usage rollups of whole UTC days from the Generation rows: once after upgrading to a version
with analytics (rows written before it have no rollups), or to repair hours whose upsert failed (logged by
`gateway.analytics`). Default: the last completed UTC day. Rebuild closed days: a generation recorded while its
own day is rebuilt may be missed or counted twice.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from analytics.rebuild import rebuild_day
from gateway_project.day_range import add_day_range_arguments, day_range


class Command(BaseCommand):
    help = "Rebuild the hourly usage rollups (analytics) of whole UTC days from Generation rows."

    def add_arguments(self, parser):
        add_day_range_arguments(parser)

    def handle(self, *args, **options):
        days = day_range(options)
        total = sum(rebuild_day(day) for day in days)
        self.stdout.write(f"Rebuilt {total} rollup rows for {len(days)} day(s) {days[0]}..{days[-1]}")
