"""The UTC-day range of the management commands that rebuild whole days (`rollup_usage`, `aggregate_rankings`):
`--since D --until D`, both YYYY-MM-DD and inclusive; `--until` defaults to the last completed UTC day and
`--since` to `--until`."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.core.management.base import CommandError
from django.utils import timezone


def last_completed_day(now: datetime | None = None) -> date:
    """Yesterday, in UTC."""
    now = now or timezone.now()
    return now.astimezone(UTC).date() - timedelta(days=1)


def parse_day(value: str) -> date:
    """A YYYY-MM-DD option value, or CommandError."""
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"not a YYYY-MM-DD date: {value!r}") from None


def add_day_range_arguments(parser) -> None:
    parser.add_argument("--since", help="First UTC day (YYYY-MM-DD), default: --until")
    parser.add_argument("--until", help="Last UTC day (YYYY-MM-DD), default: the last completed day")


def day_range(options: dict) -> list[date]:
    """The days of `--since`..`--until` (inclusive, oldest first), or CommandError."""
    until = parse_day(options["until"]) if options["until"] else last_completed_day()
    since = parse_day(options["since"]) if options["since"] else until
    if since > until:
        raise CommandError("--since must not be after --until")
    return [since + timedelta(days=i) for i in range((until - since).days + 1)]
