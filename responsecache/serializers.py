"""Bodies of the response cache's management endpoints."""

from __future__ import annotations

from rest_framework import serializers

from gateway_project.api.serializers import StrictSerializer


class CachePurgeSerializer(StrictSerializer):
    """POST /cache/purge: everything of the organization, or only the answers of one model."""

    model = serializers.CharField(
        required=False, min_length=1, max_length=200, help_text="Only entries answered by this model slug"
    )


class CachePurgedSerializer(serializers.Serializer):
    class Purged(serializers.Serializer):
        purged = serializers.IntegerField(help_text="Entries deleted")

    data = Purged()
