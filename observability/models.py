"""Observability destinations and the durable outbox of trace deliveries."""

from __future__ import annotations

import json
import uuid

from django.db import models

from gateway_project.encryption import decrypt_secret, encrypt_secret
from observability.types import TYPE_CHOICES, TYPE_SPECS

MAX_DESTINATIONS_PER_TYPE = 5


def list_all_regions() -> list[str]:
    """Default of `Destination.regions`: every data region."""
    return ["global", "europe", "us"]


class Destination(models.Model):
    """Where the traces of a workspace's generations are forwarded (Langfuse, an OTLP collector, a webhook...).

    `config` holds the non-secret config values; the secret ones (and every custom header value) are kept
    encrypted in `secret_config` (a Fernet token of a JSON object). `full_config()` merges them back.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="destinations")
    name = models.CharField(max_length=255)
    type = models.CharField(max_length=32, choices=[(t, t) for t in TYPE_CHOICES])
    config = models.JSONField(default=dict, blank=True)
    secret_config = models.TextField(blank=True, default="", help_text="Encrypted JSON of the secret config values")
    enabled = models.BooleanField(default=True)
    api_key_hashes = models.JSONField(null=True, blank=True, verbose_name="API key hashes")
    broadcast_generation_cost = models.BooleanField(default=False)
    broadcast_generation_identity = models.BooleanField(default=False)
    broadcast_generation_request_context = models.BooleanField(default=False)
    broadcast_generation_cost_allocation = models.BooleanField(
        default=False, help_text="Send per-token-kind tokens and cost when they add up to the recorded cost"
    )
    regions = models.JSONField(
        default=list_all_regions, help_text="Data regions whose requests this destination receives (ingress region)"
    )
    filter_rules = models.JSONField(null=True, blank=True)
    privacy_mode = models.BooleanField(default=False)
    sampling_rate = models.FloatField(default=1.0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="Soft delete: set by DELETE")

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["workspace", "deleted_at"], name="destination_workspace_live")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(sampling_rate__gte=0.0001) & models.Q(sampling_rate__lte=1),
                name="destination_sampling_rate_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.type})"

    def secret_values(self) -> dict:
        return json.loads(decrypt_secret(self.secret_config)) if self.secret_config else {}

    def full_config(self) -> dict:
        """The config with its secret values decrypted (for delivery only, never for responses)."""
        merged = dict(self.config)
        secrets = self.secret_values()
        headers = {**merged.get("headers", {}), **secrets.pop("headers", {})}
        merged.update(secrets)
        if headers:
            merged["headers"] = headers
        return merged

    def set_full_config(self, config: dict) -> None:
        """Split `config` into the plain part and the encrypted secret part."""
        spec = TYPE_SPECS[self.type]
        plain = {k: v for k, v in config.items() if k not in spec.secrets and k != "headers" and v is not None}
        secrets = {k: v for k, v in config.items() if k in spec.secrets and v is not None}
        if config.get("headers"):
            secrets["headers"] = dict(config["headers"])
        self.config = plain
        self.secret_config = encrypt_secret(json.dumps(secrets)) if secrets else ""


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FILTERED = "filtered", "Filtered out"
    DEAD = "dead", "Dead"


# Statuses after which a row needs its trace body no more (dead rows keep it: the admin may retry them).
FINISHED_STATUSES = (DeliveryStatus.DELIVERED, DeliveryStatus.FILTERED)


class TraceBody(models.Model):
    """The trace of one generation (request and answer included), stored once for all its deliveries.

    `data` is a Fernet token (gateway_project.encryption, the keys of GATEWAY_BYOK_ENCRYPTION_KEYS) of the
    record's JSON, cut to GATEWAY_OBSERVABILITY_MAX_BODY_BYTES (observability/bodies.py). The worker builds
    each destination's payload from it at delivery time and deletes it when no delivery needs it any more.
    """

    generation_id = models.UUIDField(primary_key=True, verbose_name="generation ID")
    data = models.TextField()
    size = models.PositiveIntegerField(help_text="Bytes of the record's JSON before encryption")
    truncated = models.BooleanField(default=False)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name = "trace body"

    def __str__(self) -> str:
        return f"{self.generation_id} ({self.size} bytes)"


class OutboxEntry(models.Model):
    """One trace to deliver to one destination, written in the same transaction as its Generation row.

    The row is light: the trace itself is the generation's one TraceBody, turned into this destination's
    payload (privacy mode, broadcast flags, filter rules, wire format) by the worker at delivery time.
    `include_io` is the workspace's I/O logging decision, taken at write time. `payload` is only set on rows
    queued by versions that copied the trace into every row; the worker delivers those as they are. A worker
    claims a row by setting `claim_token` and pushing `next_attempt_at` past its lease, so a crashed worker's
    rows come back.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name="ID")
    destination = models.ForeignKey(Destination, on_delete=models.CASCADE, related_name="outbox")
    generation_id = models.UUIDField(db_index=True, verbose_name="generation ID")
    include_io = models.BooleanField(default=True)
    payload = models.JSONField(null=True, blank=True, help_text="Rows queued before trace bodies only")
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    claim_token = models.UUIDField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True, help_text="When delivered or filtered out")

    class Meta:
        ordering = ["created_at"]
        verbose_name = "outbox entry"
        verbose_name_plural = "outbox entries"
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="outbox_due")]
        constraints = [
            models.UniqueConstraint(fields=["generation_id", "destination"], name="outbox_one_per_generation"),
        ]

    def __str__(self) -> str:
        return f"{self.destination_id} {self.generation_id} {self.status}"
