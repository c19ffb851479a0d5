"""python manage.py aggregate_rankings [--date D | --since D --until D] [--force]

Without dates: the most recent completed UTC day. A range skips days already aggregated after they ended
(resumable) unless --force; a single --date is always recomputed. Idempotent: a day run twice gives the
same rows.
"""

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from gateway_project.day_range import add_day_range_arguments, day_range, parse_day
from rankings.aggregation import (
    aggregate_exact_day,
    aggregate_sampled_week,
    is_complete,
    week_start_of,
)
from rankings.models import AggregatedDay


class Command(BaseCommand):
    help = "Aggregate Generation rows of public models into the rankings dataset, one UTC day at a time."

    def add_arguments(self, parser):
        parser.add_argument("--date", help="One UTC day (YYYY-MM-DD)")
        add_day_range_arguments(parser)
        parser.add_argument("--force", action="store_true", help="Recompute days already aggregated")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar")

    def handle(self, *args, **options):
        if options["date"] and (options["since"] or options["until"]):
            raise CommandError("--date cannot be combined with --since/--until")
        if options["date"]:
            days, force = [parse_day(options["date"])], True
        else:
            days = day_range(options)
            force = options["force"] or len(days) == 1
        markers = {m.date: m for m in AggregatedDay.objects.filter(date__gte=days[0], date__lte=days[-1])}
        todo = [d for d in days if force or not is_complete(d, markers.get(d))]
        total = 0
        show = len(todo) > 1 and not options["no_progress"]
        for day in tqdm(todo, desc="days", unit="day", disable=not show):
            total += aggregate_exact_day(day)
        for week in sorted({week_start_of(d) for d in todo}):
            aggregate_sampled_week(week)
        skipped = len(days) - len(todo)
        self.stdout.write(
            f"Aggregated {len(todo)} day(s), {total} generations"
            + (f"; skipped {skipped} day(s) already aggregated" if skipped else "")
        )
