"""The database store of the response cache (used without REDIS_URL, and whenever Redis fails)."""

from __future__ import annotations

from django.db import models


class ResponseCacheEntry(models.Model):
    """One cached answer of an organization: the canonical result of a request, replayed on an exact match."""

    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=64, help_text="SHA-256 of the request without its non-semantic fields")
    model = models.CharField(max_length=200, blank=True, default="", help_text="Model slug that answered")
    data = models.TextField(help_text="The answer as JSON (canonical output, usage, endpoint)")
    size = models.PositiveIntegerField(default=0, help_text="Bytes of `data`")
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name = "response cache entry"
        verbose_name_plural = "response cache entries"
        constraints = [models.UniqueConstraint(fields=["organization", "key"], name="response_cache_key_per_org")]
        indexes = [models.Index(fields=["organization", "expires_at"], name="response_cache_org_expiry")]

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"
