"""The catalog (providers, models, endpoints) and the Generation record of every inference request."""

from __future__ import annotations

import uuid

from django.db import models


class ApiFormat(models.TextChoices):
    OPENAI_RESPONSES = "openai-responses", "OpenAI Responses"
    OPENAI_CHAT = "openai-chat", "OpenAI Chat Completions"
    ANTHROPIC_MESSAGES = "anthropic-messages", "Anthropic Messages"
    ECHO = "echo", "Echo (in-process)"


class Provider(models.Model):
    """An upstream provider: where and how to call it, and its data policy."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    slug = models.SlugField(max_length=100, unique=True, help_text="Provider id used by routing, guardrails, BYOK")
    name = models.CharField(max_length=200)
    api_format = models.CharField(max_length=30, choices=ApiFormat.choices, verbose_name="API format")
    base_url = models.URLField(max_length=500, blank=True, default="", verbose_name="base URL")
    api_key_env = models.CharField(
        max_length=100, blank=True, default="", help_text="Env var of the platform key", verbose_name="API key env"
    )
    zdr = models.BooleanField(default=False, help_text="Keeps zero data", verbose_name="ZDR")
    trains_on_data = models.BooleanField(default=False)
    publishes_prompts = models.BooleanField(default=False)
    regions = models.JSONField(default=list, blank=True)
    timeouts = models.JSONField(
        default=dict,
        blank=True,
        help_text="Time limits in seconds overriding the GATEWAY_UPSTREAM_* settings: connect, first_byte, read, total",
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        from inference.provider_config import key_env_problem, timeouts_problem

        errors = {}
        if problem := key_env_problem(self.api_key_env):
            errors["api_key_env"] = f"api_key_env {problem}"
        if problem := timeouts_problem(self.timeouts):
            errors["timeouts"] = f"timeouts {problem}"
        if errors:
            raise ValidationError(errors)


class Model(models.Model):
    """A model as clients name it (`vendor/name`), with its canonical slug and modalities."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    slug = models.CharField(max_length=200, unique=True)
    canonical_slug = models.CharField(max_length=200, db_index=True)
    name = models.CharField(max_length=200, blank=True, default="")
    vendor = models.CharField(max_length=100, db_index=True)
    public = models.BooleanField(default=True, help_text="Eligible for the rankings dataset")
    input_modalities = models.JSONField(default=list, blank=True)
    output_modalities = models.JSONField(default=list, blank=True)
    context_length = models.PositiveIntegerField(default=0)
    quality_scores = models.JSONField(
        default=dict,
        blank=True,
        help_text="Operator-set quality, 0 to 1, per prompt category for the routers (docs/plugins.md): "
        '{"default": 0.7, "programming": 0.9}; keys: "default" or a rankings category',
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        from inference.routers.quality import quality_scores_problem

        if problem := quality_scores_problem(self.quality_scores):
            raise ValidationError({"quality_scores": problem})


class Endpoint(models.Model):
    """One provider serving one model: the upstream model name, prices (USD per token) and limits."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    model = models.ForeignKey(Model, on_delete=models.CASCADE, related_name="endpoints")
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="endpoints")
    upstream_model = models.CharField(max_length=200)
    prompt_price = models.DecimalField(max_digits=20, decimal_places=12, default=0)
    completion_price = models.DecimalField(max_digits=20, decimal_places=12, default=0)
    cached_prompt_price = models.DecimalField(
        max_digits=20, decimal_places=12, null=True, blank=True, help_text="Cached input read; empty: prompt price"
    )
    cache_write_5m_price = models.DecimalField(
        max_digits=20, decimal_places=12, null=True, blank=True, help_text="Cache write (5 minutes); empty: prompt"
    )
    cache_write_1h_price = models.DecimalField(
        max_digits=20, decimal_places=12, null=True, blank=True, help_text="Cache write (1 hour); empty: 5-minute"
    )
    reasoning_price = models.DecimalField(
        max_digits=20, decimal_places=12, null=True, blank=True, help_text="Reasoning tokens; empty: completion"
    )
    request_price = models.DecimalField(
        max_digits=20, decimal_places=12, null=True, blank=True, help_text="Fee per request; empty: none"
    )
    tier_multipliers = models.JSONField(
        default=dict, blank=True, help_text='Price multiplier per service tier / speed, e.g. {"priority": "2"}'
    )
    max_image_tokens = models.PositiveIntegerField(null=True, blank=True, help_text="Worst case per image")
    max_audio_tokens = models.PositiveIntegerField(null=True, blank=True, help_text="Worst case per audio clip")
    max_file_tokens = models.PositiveIntegerField(null=True, blank=True, help_text="Worst case per file")
    is_free = models.BooleanField(default=False)
    context_length = models.PositiveIntegerField(null=True, blank=True)
    max_output_tokens = models.PositiveIntegerField(null=True, blank=True, help_text="Output cap of the endpoint")
    supported_parameters = models.JSONField(default=list, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model__slug", "provider__slug"]
        constraints = [
            models.UniqueConstraint(fields=["model", "provider"], name="endpoint_model_provider_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.model.slug} @ {self.provider.slug}"


class IngressFormat(models.TextChoices):
    """The wire format the client spoke (which data-plane endpoint the request came in through)."""

    RESPONSES = "responses", "OpenAI Responses (/responses)"
    CHAT_COMPLETIONS = "chat-completions", "OpenAI Chat Completions (/chat/completions)"
    MESSAGES = "messages", "Anthropic Messages (/messages)"
    EMBEDDINGS = "embeddings", "OpenAI Embeddings (/embeddings)"


class GenerationStatus(models.TextChoices):
    COMPLETED = "completed", "Completed"
    INCOMPLETE = "incomplete", "Incomplete"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    INTERRUPTED = "interrupted", "Interrupted"  # its process died: rebuilt from its budget hold (budgets/recovery.py)


class Generation(models.Model):
    """The accounting record of one inference request, written even when it failed or was cancelled."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="generations")
    workspace = models.ForeignKey("accounts.Workspace", null=True, on_delete=models.SET_NULL, related_name="+")
    api_key = models.ForeignKey(
        "accounts.ApiKey", null=True, on_delete=models.SET_NULL, related_name="+", verbose_name="API key"
    )
    key_hash = models.CharField(max_length=64, db_index=True)
    user = models.ForeignKey("accounts.User", null=True, on_delete=models.SET_NULL, related_name="+")
    session_id = models.CharField(max_length=256, blank=True, default="", verbose_name="session ID")
    requested_model = models.CharField(max_length=200, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="", help_text="Model slug that served")
    model_permaslug = models.CharField(max_length=220, blank=True, default="")
    provider = models.CharField(max_length=100, blank=True, default="")
    endpoint = models.ForeignKey(
        Endpoint, null=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )  # indexed with created_at below (the traffic figures of GET /models/.../endpoints)
    upstream_id = models.CharField(max_length=200, blank=True, default="", verbose_name="upstream ID")
    status = models.CharField(max_length=20, choices=GenerationStatus.choices)
    finish_reason = models.CharField(max_length=50, blank=True, default="")
    error_code = models.PositiveIntegerField(null=True, blank=True)
    error_message = models.TextField(blank=True, default="")
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=18, decimal_places=10, default=0)
    usage_estimated = models.BooleanField(
        default=False, help_text="The upstream reported no usage (or the request was cut): cost from the estimate"
    )
    reported_cost = models.DecimalField(
        max_digits=24,
        decimal_places=10,
        null=True,
        blank=True,
        help_text="The provider's reported usage priced, when it exceeded the request's hold (`cost` is the hold)",
    )
    is_byok = models.BooleanField(default=False, verbose_name="is BYOK")
    cache_hit = models.BooleanField(
        default=False, db_default=False, help_text="Answered from the response cache: no provider call, cost 0"
    )
    streamed = models.BooleanField(default=False)
    ingress_format = models.CharField(
        max_length=20,
        choices=IngressFormat.choices,
        default=IngressFormat.RESPONSES,
        help_text="Wire format of the client's request",
    )
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True, help_text="Time to first token")
    tool_calls = models.PositiveIntegerField(default=0)
    input_modalities = models.JSONField(default=list, blank=True)
    output_modalities = models.JSONField(default=list, blank=True)
    context_bucket = models.CharField(max_length=8, blank=True, default="")
    category = models.CharField(max_length=30, null=True, blank=True, help_text="Sampled classification")
    language_type = models.CharField(max_length=20, null=True, blank=True, help_text="Sampled classification")
    pipeline = models.JSONField(default=list, blank=True, help_text="Guardrail and other pipeline stages")
    trace = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    data_region = models.CharField(
        max_length=10, blank=True, default="", db_default="", help_text="The data region the request arrived through"
    )
    http_referer = models.CharField(
        max_length=500,
        blank=True,
        default="",
        db_default="",
        verbose_name="HTTP referer",
        help_text="The request's HTTP-Referer (or Referer) header",
    )
    user_agent = models.CharField(
        max_length=500, blank=True, default="", db_default="", help_text="The request's User-Agent"
    )
    client_metadata = models.JSONField(
        default=dict,
        db_default={},  # rows inserted by SQL that does not name the column (generate_demo_traffic) get {}
        blank=True,
        help_text="The request's client_metadata (Codex CLI's turn and window ids)",
    )
    created_at = models.DateTimeField(db_index=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "created_at"], name="generation_org_time"),
            models.Index(fields=["workspace", "created_at"], name="generation_workspace_time"),
            models.Index(fields=["endpoint", "created_at"], name="generation_endpoint_time"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.model} {self.status}"
