"""Checker of the `provider` routing preferences of the Responses body (DECISIONS.md §9)."""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error
from inference.schema_parts import allowed_values, is_number, is_one_of, require_object, string_list

SORT_BY = frozenset({"price", "throughput", "latency"})
# Preferences that need data the gateway does not keep (endpoint throughput, latency, quantization, per-image
# prices): refused with 400 naming them rather than accepted and ignored.
NO_DATA = {
    "quantizations": "the catalog records no quantization of its endpoints",
    "preferred_min_throughput": "the gateway keeps no throughput statistics to route by",
    "preferred_max_latency": "the gateway keeps no latency statistics to route by",
}
NO_SORT = "the gateway keeps no throughput or latency statistics to sort by; only price"
SORT_PARTITIONS = frozenset({"model", "none"})
DATA_COLLECTION = frozenset({"allow", "deny"})


def _sort(name: str, value: Any) -> None:
    if isinstance(value, str):
        if value not in SORT_BY:
            raise validation_error(name, f"must be one of {allowed_values(SORT_BY)}")
        if value != "price":
            raise validation_error(name, f"is not supported: {NO_SORT}")
        return
    value = require_object(name, value)
    if not is_one_of(value.get("by"), SORT_BY):
        raise validation_error(f"{name}.by", f"must be one of {allowed_values(SORT_BY)}")
    if value["by"] != "price":
        raise validation_error(f"{name}.by", f"is not supported: {NO_SORT}")
    if value.get("partition") is not None and not is_one_of(value["partition"], SORT_PARTITIONS):
        raise validation_error(f"{name}.partition", f"must be one of {allowed_values(SORT_PARTITIONS)}")


def _max_price(name: str, value: Any) -> None:
    for key, item in require_object(name, value).items():
        if key not in ("prompt", "completion", "request", "image"):
            raise validation_error(f"{name}.{key}", "unknown price; use prompt or completion")
        if not is_number(item) or item < 0:
            raise validation_error(f"{name}.{key}", "must be a non-negative number (USD per million tokens)")
        if key == "image":
            raise validation_error(f"{name}.{key}", "is not supported: the catalog has no per-image prices")


def _provider_field(name: str, key: str, value: Any) -> None:
    field = f"{name}.{key}"
    if key in NO_DATA and value not in (None, []):
        raise validation_error(field, f"is not supported: {NO_DATA[key]}")
    if key in ("order", "only", "ignore", "quantizations"):
        string_list(field, value)
    elif key in ("allow_fallbacks", "require_parameters", "zdr"):
        if value is not None and not isinstance(value, bool):
            raise validation_error(field, "must be a boolean")
    elif key == "data_collection":
        if value is not None and not is_one_of(value, DATA_COLLECTION):
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
