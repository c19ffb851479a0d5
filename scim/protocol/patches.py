"""Recognising PATCH requests that only change a group's members (the bulk of identity provider traffic)."""

from __future__ import annotations

from typing import Any

from scim2_models import PatchOp
from scim2_models.path import AttrPath, CompareOperator, Comparison, ValuePath

GROUP_URN = "urn:ietf:params:scim:schemas:core:2.0:group"


def _is_members(attr_path: AttrPath) -> bool:
    return attr_path.attr.lower() == "members" and not attr_path.sub_attr and attr_path.uri in (None, GROUP_URN)


def _member_values(value: Any) -> list[dict] | None:
    if not isinstance(value, list) or not all(isinstance(v, dict) and isinstance(v.get("value"), str) for v in value):
        return None
    return value


def member_operations(patch: PatchOp) -> list[tuple[str, list[dict] | None]] | None:
    """The patch as ("add" | "replace" | "remove", member entries) steps, or None when it does anything
    else (then scim2-models applies it to the whole resource). ("remove", None) removes every member."""
    steps: list[tuple[str, list[dict] | None]] = []
    for operation in patch.operations or []:
        verb = str(operation.op.value).lower()
        ast = operation.path.ast if operation.path is not None else None
        if isinstance(ast, AttrPath) and _is_members(ast):
            values = _member_values(operation.value)
            if verb == "remove" and operation.value is None:
                steps.append(("remove", None))
            elif values is None:
                return None
            else:
                steps.append((verb, values))
        elif (
            verb == "remove"
            and isinstance(ast, ValuePath)
            and _is_members(ast.attr_path)
            and not ast.sub_attr
            and isinstance(ast.val_filter, Comparison)
            and ast.val_filter.attr_path == AttrPath("value")
            and ast.val_filter.op == CompareOperator.eq
            and isinstance(ast.val_filter.value, str)
        ):
            steps.append(("remove", [{"value": ast.val_filter.value}]))
        else:
            return None
    return steps or None
