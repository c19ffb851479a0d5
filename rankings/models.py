"""Aggregated token totals of the gateway's own traffic, the source of GET /datasets/rankings-daily."""

from __future__ import annotations

from django.db import models

TOP_N = 50  # models per date in the dataset; the rest are summed into one `other` row


class DailyModelTokens(models.Model):
    """Exact dataset: tokens (prompt + completion) of one public model on one UTC day, split by the
    dimensions the endpoint filters on (context bucket, modalities, tool calling)."""

    date = models.DateField()
    model_permaslug = models.CharField(max_length=220)
    context_bucket = models.CharField(max_length=4)
    output_text = models.BooleanField(default=True)
    output_image = models.BooleanField(default=False)
    input_image = models.BooleanField(default=False)
    input_audio = models.BooleanField(default=False)
    tool_calling = models.BooleanField(default=False)
    total_tokens = models.BigIntegerField()
    requests = models.BigIntegerField()

    class Meta:
        verbose_name = "daily model tokens"
        verbose_name_plural = "daily model tokens"
        indexes = [models.Index(fields=["date", "model_permaslug"], name="rankings_daily_date_model")]

    def __str__(self) -> str:
        return f"{self.date} {self.model_permaslug} {self.total_tokens}"


class DailyModelTotal(models.Model):
    """Exact dataset without filters: tokens of one public model on one UTC day (the common query)."""

    date = models.DateField()
    model_permaslug = models.CharField(max_length=220)
    total_tokens = models.BigIntegerField()
    position = models.PositiveIntegerField(default=0, help_text="Rank within the day (1 = most tokens)")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["date", "model_permaslug"], name="rankings_total_date_model_unique"),
        ]
        indexes = [
            models.Index(fields=["date"], condition=models.Q(position__lte=TOP_N), name="rankings_total_date_top50"),
        ]

    def __str__(self) -> str:
        return f"{self.date} {self.model_permaslug} {self.total_tokens}"


class DailyLongTail(models.Model):
    """Tokens of every public model outside one day's top 50: the `other` row of the unfiltered query."""

    date = models.DateField(primary_key=True)
    total_tokens = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.date} other {self.total_tokens}"


class DailyFilteredTop(models.Model):
    """Exact dataset with a filter (modality, context bucket or both): the top 50 public models of one UTC day
    with their rank, and one `other` row (position 51) with the sum of the rest. Written at aggregation time
    from DailyModelTokens (rankings/filtered.py), so the filtered daily query reads at most 51 rows per day."""

    date = models.DateField()
    filter_key = models.CharField(max_length=40, help_text='"m=<modality>", "c=<context bucket>" or both, joined by &')
    model_permaslug = models.CharField(max_length=220)
    total_tokens = models.BigIntegerField()
    position = models.PositiveIntegerField(help_text="Rank within the day and filter (1 = most tokens, 51 = other)")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["filter_key", "date", "position"], name="rankings_filtered_key_date_pos"),
        ]

    def __str__(self) -> str:
        return f"{self.date} [{self.filter_key}] {self.position}. {self.model_permaslug} {self.total_tokens}"


class SampledDimension(models.TextChoices):
    CATEGORY = "category", "Category"
    LANGUAGE_TYPE = "language_type", "Language type"


class WeeklySampledTokens(models.Model):
    """Sampled dataset: classified requests of one public model in one ISO week (Monday start), by
    category or language type, with tokens upsampled by the sampling rate."""

    week_start = models.DateField()
    model_permaslug = models.CharField(max_length=220)
    dimension = models.CharField(max_length=20, choices=SampledDimension.choices)
    value = models.CharField(max_length=30)
    sampled_tokens = models.BigIntegerField()
    total_tokens = models.BigIntegerField(help_text="sampled_tokens upsampled by the sampling rate")

    class Meta:
        verbose_name = "weekly sampled tokens"
        verbose_name_plural = "weekly sampled tokens"
        indexes = [models.Index(fields=["dimension", "value", "week_start"], name="rankings_weekly_dim_week")]

    def __str__(self) -> str:
        return f"{self.week_start} {self.model_permaslug} {self.dimension}={self.value}"


class AggregatedDay(models.Model):
    """A UTC day whose Generation rows have been aggregated (for resumable runs and `meta.as_of`)."""

    date = models.DateField(primary_key=True)
    aggregated_at = models.DateTimeField()
    generations = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.date} @ {self.aggregated_at}"


class RateLimitCounter(models.Model):
    """A fixed-window request counter, used for rate limits when no Redis is configured."""

    key = models.CharField(max_length=200)
    window_start = models.BigIntegerField(help_text="Unix seconds of the window start")
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "window_start"], name="rate_limit_counter_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.key}@{self.window_start}={self.count}"


class PendingClassification(models.Model):
    """The prompt of a sampled generation, waiting for the classifier (rankings/classification.py).

    Written by the accounting transaction (one bulk insert per batch, no classification there); the
    aggregation (`aggregate_rankings`) classifies it, sets the generation's category and language type, and
    deletes it. `text` is a Fernet token (GATEWAY_BYOK_ENCRYPTION_KEYS) of at most 8,000 characters of prompt.
    """

    generation_id = models.UUIDField(primary_key=True, verbose_name="generation ID")
    text = models.TextField(help_text="Encrypted prompt text (Fernet)")
    created_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.generation_id} pending since {self.created_at}"
