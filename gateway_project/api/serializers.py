"""Serializer building blocks shared by every app of the management plane."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import models
from rest_framework import serializers


def format_timestamp(value: datetime | None) -> str | None:
    """ISO 8601 UTC with milliseconds: 2026-05-12T02:00:00.000Z."""
    if value is None:
        return None
    value = value.astimezone(UTC)
    # The year is padded by hand: strftime("%Y") writes year 814 as "814" on glibc, which is not ISO 8601.
    return f"{value.year:04d}" + value.strftime("-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


class TimestampField(serializers.DateTimeField):
    """A DateTimeField written as ISO 8601 UTC with milliseconds."""

    def to_representation(self, value):
        return format_timestamp(value)


class GatewayModelSerializer(serializers.ModelSerializer):
    """ModelSerializer whose datetimes are written as ISO 8601 UTC with milliseconds."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.DateTimeField: TimestampField,
    }


def data_envelope(inner: type[serializers.Serializer], name: str | None = None) -> type[serializers.Serializer]:
    """A serializer class `{"data": <inner>}` for OpenAPI documentation of wrapped responses."""
    cls_name = name or f"{inner.__name__.removesuffix('Serializer')}Data"
    return type(cls_name, (serializers.Serializer,), {"data": inner(read_only=True)})


class DeletedSerializer(serializers.Serializer):
    """`{"deleted": true}`: the body of every DELETE."""

    deleted = serializers.BooleanField(read_only=True)


class AssignedCountSerializer(serializers.Serializer):
    assigned_count = serializers.IntegerField(read_only=True)


class UnassignedCountSerializer(serializers.Serializer):
    unassigned_count = serializers.IntegerField(read_only=True)
