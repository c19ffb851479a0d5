"""Tables of the database path of rate limiting (used when Redis is not configured or not reachable)."""

from __future__ import annotations

from django.db import models


class RateLimitScope(models.Model):
    """One row per limited key or workspace: updated first by every check, so checks of a scope run one at a time.

    `requests` and `tokens` are the running totals of the scope's entries (so a check never sums its window).
    """

    scope_key = models.CharField(max_length=120, primary_key=True)  # "api-key:<hash>" | "workspace:<uuid>"
    touched_ms = models.BigIntegerField(default=0)
    requests = models.BigIntegerField(default=0)
    tokens = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return self.scope_key


class RateLimitEntry(models.Model):
    """A request admitted in a scope's sliding window, with the tokens it holds (settled to its usage)."""

    scope_key = models.CharField(max_length=120)
    request_id = models.CharField(max_length=64, verbose_name="request ID")
    at_ms = models.BigIntegerField()  # admission time, milliseconds since the epoch
    tokens = models.BigIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["scope_key", "at_ms"], name="ratelimit_entry_scope_at"),
            models.Index(fields=["request_id"], name="ratelimit_entry_request"),
        ]

    def __str__(self) -> str:
        return f"{self.scope_key} {self.request_id} {self.tokens}"
