"""Offset/limit pagination: `?offset=0&limit=50` → `{"data": [...], "total_count": N}`."""

from __future__ import annotations

from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from gateway_project.api.errors import validation_error

DEFAULT_LIMIT = 50
MAX_LIMIT = 100
MAX_OFFSET = 2**31 - 1  # larger offsets overflow the databases' 64-bit LIMIT/OFFSET arithmetic


def _int_param(request, name: str, default: int, minimum: int, maximum: int | None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise validation_error(name, "must be an integer") from None
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise validation_error(name, f"must be {bound}")
    return value


class OffsetLimitPagination(BasePagination):
    """Validated offset (>= 0) and limit (1..100); out-of-range values give 400."""

    def paginate_queryset(self, queryset, request, view=None):
        self.offset = _int_param(request, "offset", 0, 0, MAX_OFFSET)
        self.limit = _int_param(request, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        self.total_count = queryset.count() if hasattr(queryset, "count") else len(queryset)
        return list(queryset[self.offset : self.offset + self.limit])

    def get_paginated_response(self, data):
        return Response({"data": data, "total_count": self.total_count})

    def get_paginated_response_schema(self, schema):
        return {
            "type": "object",
            "required": ["data", "total_count"],
            "properties": {"data": schema, "total_count": {"type": "integer"}},
        }

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": "offset",
                "in": "query",
                "required": False,
                "schema": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET, "default": 0},
            },
            {
                "name": "limit",
                "in": "query",
                "required": False,
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            },
        ]
