"""Charge the spend holds of requests whose process died before settling them, at the hold amount."""

from django.core.management.base import BaseCommand
from django.utils import timezone

from budgets.counters import applied_settlements_prune, reservations_reap


class Command(BaseCommand):
    help = (
        "Charge expired spend reservations (held by requests whose process died mid-request) as spent at their "
        "hold amount, and mark them reaped; forget the applied settlements older than an hour."
    )

    def handle(self, *args, **options):
        total = 0
        while reaped := reservations_reap(now=timezone.now()):
            total += reaped
        self.stdout.write(f"charged {total} expired reservation(s) at their hold amount")
        pruned = applied_settlements_prune(now=timezone.now())
        self.stdout.write(f"forgot {pruned} applied settlement(s) older than an hour")
