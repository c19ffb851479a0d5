"""Hourly usage rollups: what the usage API and the admin dashboard read instead of Generation rows."""

from __future__ import annotations

from django.db import models

from analytics.histogram import BIN_FIELDS, bin_range


class Dimension(models.TextChoices):
    """What a rollup row is grouped by; every Generation adds to one row of each dimension."""

    MODEL = "model", "Model that served"
    PROVIDER = "provider", "Provider that served"
    KEY = "key", "API key (hash)"
    WORKSPACE = "workspace", "Workspace (id)"
    USER = "user", "User (id)"
    STATUS = "status", "Status of the generation"


class UsageRollup(models.Model):
    """Usage of one organization in one UTC hour for one value of one dimension (e.g. model = openai/gpt-4o).

    Maintained when Generation rows are written (analytics/rollup.py, same transaction) and rebuilt from them by
    `manage.py rollup_usage`. `value` is "" where the generation had none (no workspace, nothing served).
    `errors` counts generations with status `failed`; `latency_NN` is the latency histogram (analytics/histogram.py)
    of the generations that have a latency.
    """

    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
    bucket = models.DateTimeField(help_text="Start of the UTC hour")
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    value = models.CharField(max_length=200, blank=True, default="")
    requests = models.PositiveBigIntegerField(default=0)
    errors = models.PositiveBigIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    reasoning_tokens = models.PositiveBigIntegerField(default=0)
    cached_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=24, decimal_places=10, default=0)

    class Meta:
        ordering = ["-bucket", "dimension", "value"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "dimension", "bucket", "value"], name="usage_rollup_unique_bucket"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.bucket:%Y-%m-%d %H}h {self.dimension}={self.value}"


for _index, _name in enumerate(BIN_FIELDS):
    _lower, _upper = bin_range(_index)
    UsageRollup.add_to_class(
        _name,
        models.PositiveBigIntegerField(
            default=0, help_text=f"Generations with latency in [{_lower}, {_upper or '∞'}) ms"
        ),
    )


class UsageDashboard(UsageRollup):
    """The admin's usage dashboard (a proxy, so the dashboard has an entry and a permission in the admin)."""

    class Meta:
        proxy = True
        verbose_name = "usage dashboard"
        verbose_name_plural = "usage dashboard"
