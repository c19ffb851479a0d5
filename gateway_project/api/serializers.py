"""Serializer building blocks shared by every app of the management plane."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from django.db import models
from rest_framework import serializers

from gateway_project.api.errors import validation_error


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


UNKNOWN_FIELD = "unknown field: this body does not take it"


def refuse_unknown_members(body: Mapping, known: Iterable[str], refused: Mapping[str, str] | None = None) -> None:
    """400 naming the first member of `body` that is not `known` (with the reason from `refused`, if listed).

    The same rule as `StrictSerializer`, for the few bodies validated without DRF (the preset bodies).
    """
    known = set(known)
    for name in body:
        if refused and name in refused:
            raise validation_error(str(name), refused[name])
        if name not in known:
            raise validation_error(str(name), UNKNOWN_FIELD)


class StrictSerializer(serializers.Serializer):
    """A request body that is strict: a member it does not declare is a 400 naming it, never ignored.

    Every body of the management plane is validated by a subclass (nested objects too), so one mechanism
    covers every endpoint; `OrganizationViewSet.validated` refuses to read a body with any other serializer.

    - `aliases` maps another public name of a field to ours (for example the public router API's
      `enforce_zdr_openai` for `enforce_zdr_vendor_a`); sending both with different values is a 400.
    - `refused` maps names we know but do not take to the reason given in the 400.
    A read-only field sent in a body is refused as well ("set by the server").
    """

    aliases: dict[str, str] = {}
    refused: dict[str, str] = {}

    def get_aliases(self) -> dict[str, str]:
        return self.aliases

    def get_refused(self) -> dict[str, str]:
        return self.refused

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            data = self._resolve_aliases(data)
            errors = self._unknown_members(data)
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)

    def _resolve_aliases(self, data: Mapping) -> dict:
        aliases = self.get_aliases()
        if not aliases or not any(name in data for name in aliases):
            return data
        resolved = {name: value for name, value in data.items() if name not in aliases}
        for alias, target in aliases.items():
            if alias not in data:
                continue
            if target in resolved and resolved[target] != data[alias]:
                raise serializers.ValidationError({alias: [f"is another name of {target}: send one of the two"]})
            resolved[target] = data[alias]
        return resolved

    def _unknown_members(self, data: Mapping) -> dict[str, list[str]]:
        fields, refused = self.fields, self.get_refused()
        errors: dict[str, list[str]] = {}
        for name in data:
            field = fields.get(name)
            if name in refused:
                errors[str(name)] = [refused[name]]
            elif field is None:
                errors[str(name)] = [UNKNOWN_FIELD]
            elif field.read_only:
                errors[str(name)] = ["read-only: set by the server"]
        return errors
