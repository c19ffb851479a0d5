"""Checker of the `provider` routing preferences of the Responses body (DECISIONS.md §9)."""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error
from inference.schema_parts import allowed_values, is_number, require_object, string_list

SORT_BY = frozenset({"price", "throughput", "latency"})
SORT_PARTITIONS = frozenset({"model", "none"})
DATA_COLLECTION = frozenset({"allow", "deny"})


def _sort(name: str, value: Any) -> None:
    if isinstance(value, str):
        if value not in SORT_BY:
            raise validation_error(name, f"must be one of {allowed_values(SORT_BY)}")
        return
    value = require_object(name, value)
    if value.get("by") not in SORT_BY:
        raise validation_error(f"{name}.by", f"must be one of {allowed_values(SORT_BY)}")
    if value.get("partition") is not None and value["partition"] not in SORT_PARTITIONS:
        raise validation_error(f"{name}.partition", f"must be one of {allowed_values(SORT_PARTITIONS)}")


def _max_price(name: str, value: Any) -> None:
    for key, item in require_object(name, value).items():
        if key not in ("prompt", "completion", "request", "image"):
            raise validation_error(f"{name}.{key}", "unknown price; use prompt or completion")
        if not is_number(item) or item < 0:
            raise validation_error(f"{name}.{key}", "must be a non-negative number (USD per million tokens)")


def _provider_field(name: str, key: str, value: Any) -> None:
    field = f"{name}.{key}"
    if key in ("order", "only", "ignore", "quantizations"):
        string_list(field, value)
    elif key in ("allow_fallbacks", "require_parameters", "zdr"):
        if value is not None and not isinstance(value, bool):
            raise validation_error(field, "must be a boolean")
    elif key == "data_collection":
        if value is not None and value not in DATA_COLLECTION:
            raise validation_error(field, "must be one of allow, deny")
    elif key == "sort":
        if value is not None:
            _sort(field, value)
    elif key == "max_price":
        _max_price(field, value)
    elif key in ("preferred_min_throughput", "preferred_max_latency"):
        if value is not None and (not is_number(value) or value < 0):
            raise validation_error(field, "must be a non-negative number")
    else:
        raise validation_error(field, "unknown provider preference")


def check_provider(name: str, value: Any) -> None:
    if value is None:
        return
    for key, item in require_object(name, value).items():
        _provider_field(name, key, item)
