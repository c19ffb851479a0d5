"""Compare the spend counters with the Generation rows, report drift, and repair it with --fix."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from budgets.reconcile import Drift, reconcile
from metering.cost import units_to_usd

SCOPES = ("workspace", "api-key", "guardrail")


def _usd(units: int) -> str:
    return f"${units_to_usd(units):.10f}".rstrip("0").rstrip(".")


def describe(drift: Drift) -> str:
    counter = drift.counter
    parts = []
    for name, have, want in (
        ("spent", drift.spent, drift.expected_spent),
        ("byok spent", drift.byok_spent, drift.expected_byok_spent),
        ("held", drift.reserved, drift.expected_reserved),
    ):
        if have != want:
            parts.append(f"{name} {_usd(have)}, record says {_usd(want)} (drift {_usd(have - want)})")
    where = f"{counter.scope} {counter.scope_id} {counter.interval} from {counter.period_start:%Y-%m-%d}"
    return f"{where}: " + "; ".join(parts) + (" - fixed" if drift.fixed else "")


class Command(BaseCommand):
    help = (
        "Compare every spend counter of the current periods with the sum of its Generation costs (plus the holds "
        "charged by budgets_reap) and its live holds; report drift (exit status 1) or repair it with --fix."
    )

    def add_arguments(self, parser):
        parser.add_argument("--fix", action="store_true", help="Move drifted counters to what the record says")
        parser.add_argument("--all-periods", action="store_true", help="Check past periods' counters too")
        parser.add_argument("--scope", choices=SCOPES, help="Only counters of this kind of limit")

    def handle(self, *args, fix=False, all_periods=False, scope=None, **options):
        checked, drifts = reconcile(now=timezone.now(), fix=fix, all_periods=all_periods, scope=scope)
        for drift in drifts:
            self.stdout.write(describe(drift))
        summary = f"checked {checked} counter(s): {len(drifts)} drifted" + (", fixed" if fix and drifts else "")
        self.stdout.write(summary)
        if drifts and not fix:
            raise CommandError(f"{len(drifts)} spend counter(s) drifted from the record; run with --fix to repair")
