"""Serializers of the audit log API."""

from __future__ import annotations

from rest_framework import serializers

from audit.models import Action, AuditEvent, Source


class AuditEventSerializer(serializers.ModelSerializer):
    """One audit record."""

    changes = serializers.JSONField(
        help_text='Changed fields: {"field": {"old": ..., "new": ...}}, secrets as "***"; for a refusal: status, '
        "message, route, model, workspace_id, metadata"
    )

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "source",
            "actor_type",
            "actor",
            "actor_name",
            "resource_type",
            "resource_id",
            "resource_label",
            "action",
            "changes",
            "request_id",
            "count",
        ]


class AuditFilterSerializer(serializers.Serializer):
    """Query parameters of GET /audit-log (all optional; combined with AND)."""

    resource_type = serializers.CharField(required=False, help_text="e.g. guardrail, api_key, workspace_budget")
    resource_id = serializers.CharField(required=False)
    action = serializers.ChoiceField(choices=Action.choices, required=False)
    source = serializers.ChoiceField(choices=Source.choices, required=False)
    actor = serializers.CharField(required=False, help_text="Key hash or username")
    since = serializers.DateTimeField(required=False, help_text="Records at or after this time (ISO 8601)")
    until = serializers.DateTimeField(required=False, help_text="Records before this time (ISO 8601)")
    offset = serializers.IntegerField(required=False, min_value=0)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100)

    def validate(self, attrs):
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({unknown[0]: "unknown query parameter"})
        if attrs.get("since") and attrs.get("until") and attrs["since"] >= attrs["until"]:
            raise serializers.ValidationError({"until": "must be after since"})
        return attrs
