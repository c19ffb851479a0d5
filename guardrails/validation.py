"""Checks of a stored guardrail row, for writers other than the API (the Django admin uses them in clean())."""

from __future__ import annotations

from gateway_project.regex import InvalidPattern, compile_pattern
from guardrails.models import LIST_FIELDS, Guardrail
from textscan.detectors import BUILTIN_SLUGS

REGIONS = ("global", "europe", "us")
ACTIONS = ("block", "redact", "flag")


def _list_errors(guardrail: Guardrail) -> dict[str, str]:
    errors = {}
    for field in (*LIST_FIELDS, "allowed_data_regions", "content_filter_builtins", "content_filters"):
        value = getattr(guardrail, field)
        if value is not None and (not isinstance(value, list) or not value):
            errors[field] = "must be null or a non-empty list"
    regions = guardrail.allowed_data_regions
    if isinstance(regions, list) and any(r not in REGIONS for r in regions):
        errors["allowed_data_regions"] = f"values must be among {', '.join(REGIONS)}"
    return errors


def _filter_errors(guardrail: Guardrail) -> dict[str, str]:
    errors = {}
    builtins, customs = guardrail.content_filter_builtins, guardrail.content_filters
    for entry in builtins if isinstance(builtins, list) else ():
        if not isinstance(entry, dict) or entry.get("slug") not in BUILTIN_SLUGS or entry.get("action") not in ACTIONS:
            errors["content_filter_builtins"] = "each entry needs a known slug and an action (block, redact, flag)"
    for entry in customs if isinstance(customs, list) else ():
        if not isinstance(entry, dict) or entry.get("action") not in ACTIONS:
            errors["content_filters"] = "each entry needs a pattern and an action (block, redact, flag)"
            continue
        try:
            compile_pattern(str(entry.get("pattern") or ""))
        except InvalidPattern as exc:
            errors["content_filters"] = f"pattern {entry.get('pattern')!r}: {exc}"
    return errors


def guardrail_row_errors(guardrail: Guardrail) -> dict[str, str]:
    """Field -> message for every rule the row breaks (empty when it is valid)."""
    errors = _list_errors(guardrail)
    errors.update({k: v for k, v in _filter_errors(guardrail).items() if k not in errors})
    if guardrail.reset_interval and guardrail.limit_usd is None:
        errors["limit_usd"] = "a reset_interval needs a limit_usd"
    return errors
