"""Usage rollups (hourly and daily): what the usage API and the admin dashboard read instead of Generation rows."""

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


class RollupRow(models.Model):
    """Usage of one organization in one time bucket for one value of one dimension (e.g. model = openai/gpt-4o).

    `value` is "" where the generation had none (no workspace, nothing served). `errors` counts generations with
    status `failed`; `latency_NN` is the latency histogram (analytics/histogram.py) of the generations that have
    a latency. Two tiers share these fields: hourly (UsageRollup) and daily (UsageDailyRollup).
    """

    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
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
        abstract = True

    def __str__(self) -> str:
        return f"{self.bucket:%Y-%m-%d %H}h {self.dimension}={self.value}"


class UsageRollup(RollupRow):
    """The hourly tier: what granularity=hour reads, and the hours of a window that are not whole UTC days.

    Maintained when Generation rows are written (analytics/rollup.py, same transaction) and rebuilt from them by
    `manage.py rollup_usage`.
    """

    bucket = models.DateTimeField(help_text="Start of the UTC hour")

    class Meta:
        ordering = ["-bucket", "dimension", "value"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "dimension", "bucket", "value"], name="usage_rollup_unique_bucket"
            ),
        ]


class UsageDailyRollup(RollupRow):
    """The daily tier: the sum of the 24 hourly rows of one UTC day (24 times fewer rows to read per day, week or
    month). Maintained with the hourly tier, in the same statement batch of the same transaction, and rebuilt from
    the hourly rows by `manage.py rollup_usage`."""

    bucket = models.DateTimeField(help_text="Start of the UTC day")

    class Meta:
        ordering = ["-bucket", "dimension", "value"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "dimension", "bucket", "value"], name="usage_daily_rollup_unique_bucket"
            ),
        ]


for _model in (UsageRollup, UsageDailyRollup):
    for _index, _name in enumerate(BIN_FIELDS):
        _lower, _upper = bin_range(_index)
        _model.add_to_class(
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
