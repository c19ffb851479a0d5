"""Spending intervals: UTC days, ISO weeks (Monday to Sunday) and calendar months; lifetime never resets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

INTERVALS = ("daily", "weekly", "monthly", "lifetime")
LIFETIME_START = datetime(1970, 1, 1, tzinfo=UTC)


def period_start(interval: str, now: datetime) -> datetime:
    """Start of the interval containing `now` (UTC)."""
    now = now.astimezone(UTC)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if interval == "daily":
        return day
    if interval == "weekly":
        return day - timedelta(days=day.weekday())
    if interval == "monthly":
        return day.replace(day=1)
    if interval == "lifetime":
        return LIFETIME_START
    raise ValueError(f"unknown interval {interval!r}")


def period_end(interval: str, now: datetime) -> datetime | None:
    """Start of the next interval (the reset time), or None for lifetime."""
    start = period_start(interval, now)
    if interval == "daily":
        return start + timedelta(days=1)
    if interval == "weekly":
        return start + timedelta(days=7)
    if interval == "monthly":
        return (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    return None
