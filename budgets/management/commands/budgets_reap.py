"""Release the spend holds of requests whose process died before settling them."""

from django.core.management.base import BaseCommand
from django.utils import timezone

from budgets.counters import reservations_reap


class Command(BaseCommand):
    help = "Release expired spend reservations (held by requests whose process died mid-request)."

    def handle(self, *args, **options):
        total = 0
        while released := reservations_reap(now=timezone.now()):
            total += released
        self.stdout.write(f"released {total} expired reservation(s)")
