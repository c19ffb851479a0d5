"""SCIM filters (RFC 7644 §3.4.2.2) to Django queries.

scim2-models parses and validates the filter against the resource model (`ScimFilter[Model]`); this module
walks its syntax tree and turns it into a `Q` over the columns the scim app keeps (userName, externalId,
displayName, active, members.value, id, meta.created, meta.lastModified). A filter naming
any other attribute raises `Untranslatable`, and the caller evaluates it with scim2-models' own matcher
over the organization's resources instead.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Q, Value
from django.db.models.functions import Left, Right, StrIndex
from django.db.models.lookups import Exact, GreaterThan
from scim2_models import InvalidFilterException
from scim2_models.path import (
    CompareOperator,
    Comparison,
    FilterNode,
    FilterVisitor,
    LogicalExpr,
    LogicalOperator,
    Not,
    Present,
    ValuePath,
)


class Untranslatable(Exception):
    """The filter names an attribute that has no column."""


@dataclass(frozen=True)
class Column:
    field: str
    kind: str = "string"  # string | exact (caseExact string) | bool | uuid | datetime
    nullable: bool = True


USER_COLUMNS = {
    "id": Column("user_id", "uuid", nullable=False),
    "username": Column("user_name", nullable=False),
    "externalid": Column("external_id", "exact"),
    "displayname": Column("display_name"),
    "active": Column("active", "bool", nullable=False),
    "meta.created": Column("created_at", "datetime", nullable=False),
    "meta.lastmodified": Column("updated_at", "datetime", nullable=False),
}

GROUP_COLUMNS = {
    "id": Column("id", "uuid", nullable=False),
    "displayname": Column("display_name"),
    "externalid": Column("external_id", "exact"),
    "members": Column("memberships__user_id", "uuid"),
    "members.value": Column("memberships__user_id", "uuid"),
    "meta.created": Column("created_at", "datetime", nullable=False),
    "meta.lastmodified": Column("updated_at", "datetime", nullable=False),
}

STRING_LOOKUPS = {
    CompareOperator.eq: "iexact",
    CompareOperator.co: "icontains",
    CompareOperator.sw: "istartswith",
    CompareOperator.ew: "iendswith",
}
ORDER_LOOKUPS = {
    CompareOperator.gt: "gt",
    CompareOperator.ge: "gte",
    CompareOperator.lt: "lt",
    CompareOperator.le: "lte",
}
CORE_URNS = ("urn:ietf:params:scim:schemas:core:2.0:user", "urn:ietf:params:scim:schemas:core:2.0:group")


def _parse_datetime(value) -> datetime:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise InvalidFilterException(detail=f"'{value}' is not a date-time") from None


def _case_exact(field: str, op: CompareOperator, value: str) -> Q:
    """Case-sensitive eq/co/sw/ew on every database (SQLite's LIKE ignores case, so no __contains)."""
    if op == CompareOperator.eq:
        return Q(**{field: value})
    if op == CompareOperator.co:
        return Q(GreaterThan(StrIndex(F(field), Value(value)), 0))
    cut = Left if op == CompareOperator.sw else Right
    return Q(Exact(cut(F(field), len(value)), Value(value)))


class QueryBuilder(FilterVisitor[Q]):
    """A filter tree → Q over the columns of `columns` (lower-case attribute path → Column)."""

    def __init__(self, columns: dict[str, Column]) -> None:
        self.columns = columns

    def _column(self, attr: str, sub_attr: str | None, uri: str | None) -> Column:
        if uri and uri.lower() not in CORE_URNS:
            raise Untranslatable(attr)
        name = f"{attr}.{sub_attr}" if sub_attr else attr
        column = self.columns.get(name.lower())
        if column is None:
            raise Untranslatable(name)
        return column

    def _compare(self, column: Column, op: CompareOperator, value) -> Q:
        if op == CompareOperator.ne:
            return ~self._compare(column, CompareOperator.eq, value)
        if value is None:
            return Q(**{f"{column.field}__isnull": True}) if op == CompareOperator.eq else Q(pk__in=[])
        if column.kind == "uuid":
            try:
                value = uuid.UUID(str(value))
            except ValueError:
                return Q(pk__in=[])  # no resource has an id that is not a UUID
            if op != CompareOperator.eq:
                raise Untranslatable(column.field)
            return Q(**{column.field: value})
        if column.kind == "bool":
            if op != CompareOperator.eq or not isinstance(value, bool):
                raise InvalidFilterException(detail="a boolean attribute only supports eq/ne with true or false")
            return Q(**{column.field: value})
        if column.kind == "datetime":
            lookup = ORDER_LOOKUPS.get(op, "exact" if op == CompareOperator.eq else None)
            if lookup is None:
                raise Untranslatable(column.field)
            return Q(**{f"{column.field}__{lookup}": _parse_datetime(value)})
        if op not in STRING_LOOKUPS:
            raise Untranslatable(column.field)  # string ordering: evaluated by scim2-models
        if column.kind == "exact":
            return _case_exact(column.field, op, str(value))
        return Q(**{f"{column.field}__{STRING_LOOKUPS[op]}": str(value)})

    def visit_comparison(self, node: Comparison) -> Q:
        path = node.attr_path
        return self._compare(self._column(path.attr, path.sub_attr, path.uri), node.op, node.value)

    def visit_present(self, node: Present) -> Q:
        path = node.attr_path
        column = self._column(path.attr, path.sub_attr, path.uri)
        if not column.nullable:
            return Q()
        query = Q(**{f"{column.field}__isnull": False})
        if column.kind in ("string", "exact"):
            query &= ~Q(**{column.field: ""})
        return query

    def visit_not(self, node: Not) -> Q:
        return ~self.visit(node.expr)

    def visit_logical_expr(self, node: LogicalExpr) -> Q:
        terms = [self.visit(term) for term in node.terms]
        query = terms[0]
        for term in terms[1:]:
            query = query & term if node.op == LogicalOperator.and_ else query | term
        return query

    def visit_value_path(self, node: ValuePath) -> Q:
        # members[value eq "..."] / emails[value co "..."]: only filters on `value` map to a column.
        inner = node.val_filter
        if isinstance(inner, Comparison) and inner.attr_path.attr.lower() == "value" and not inner.attr_path.sub_attr:
            column = self._column(node.attr_path.attr, "value", node.attr_path.uri)
            return self._compare(column, inner.op, inner.value)
        raise Untranslatable(str(node))


def filter_query(ast: FilterNode, columns: dict[str, Column]) -> Q:
    """The Q of a parsed filter, or `Untranslatable`."""
    return QueryBuilder(columns).visit(ast)
