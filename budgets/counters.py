"""Atomic spend counters: reserve a request's worst-case cost against every limit, settle to the actual cost.

Every limit (workspace budget interval, key limit, guardrail limit) maps to one `SpendCounter` row per period.
A reservation adds the request's worst-case cost to `reserved_units` of each row with one conditional
UPDATE per row (`... WHERE spent + reserved + amount <= limit`), all in one transaction: either every
counter accepted the hold or none did. PostgreSQL re-evaluates the WHERE clause after waiting for a
concurrent writer's row lock, and SQLite runs one writer at a time, so the check and the increment are one
atomic step on both, across processes and replicas. Rows are always locked in ascending id order (no
deadlocks). Settling removes the hold and adds the actual cost; the data plane settles concurrent requests
together (`spend_settle_many`, one transaction per batch, queued by budgets/settler.py).

A `SpendReservation` row records each hold. When a process dies mid-request its hold stays until
`expires_at` (settings.GATEWAY_BUDGET_RESERVATION_TTL); `reservations_reap` then charges it as spent (the
request may have been billed up to its hold: the conservative figure) and marks the row `reaped_at`. Reaping
runs by itself when a reservation is refused (before the 402 is final) and from `manage.py budgets_reap`. A
request that outlives its hold's TTL and settles later replaces the reaped charge by its cost.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import DecimalField, Q, Sum, Value
from django.db.models.functions import Coalesce

from budgets import counter_sql as sql
from budgets import keeper
from budgets.models import AppliedSettlement, SpendCounter, SpendReservation
from gateway_project.api.errors import DATABASE_UNAVAILABLE_ERRORS
from gateway_project.periods import period_end, period_start
from inference.pipeline.context import SpendLimit
from metering.cost import usd_to_units

logger = logging.getLogger("gateway.budgets")
_counter_ids: dict[tuple, int] = {}
_MAX_CACHED_COUNTERS = 100_000


@dataclass(frozen=True, slots=True)
class Hold:
    """A request's reservation, kept in ctx.reservation until it is settled."""

    reservation_id: uuid.UUID
    counter_ids: tuple[int, ...]
    amount_units: int


class LimitExceeded(Exception):
    """A limit that cannot take the request's worst-case cost."""

    def __init__(
        self, *, limit: SpendLimit, spent_units: int, reserved_units: int, amount_units: int, resets_at: datetime | None
    ) -> None:
        super().__init__(limit.name)
        self.limit = limit
        self.spent_units = spent_units
        self.reserved_units = reserved_units
        self.amount_units = amount_units
        self.resets_at = resets_at


def counter_key(limit: SpendLimit, now: datetime) -> tuple[str, str, str, datetime]:
    return (limit.scope, limit.scope_id, limit.interval, period_start(limit.interval, now))


def _dedupe(limits: list[SpendLimit], now: datetime) -> list[tuple[tuple, SpendLimit]]:
    """One check per counter; when two limits share a counter the lower limit wins."""
    chosen: dict[tuple, SpendLimit] = {}
    for limit in limits:
        key = counter_key(limit, now)
        if key not in chosen or limit.limit_usd < chosen[key].limit_usd:
            chosen[key] = limit
    return list(chosen.items())


def generations_of(scope: str, scope_id: str):
    """The Generation rows whose spend a counter of this scope counts, or None when they cannot be told."""
    from inference.models import Generation

    if scope == "workspace":
        return Generation.objects.filter(workspace_id=scope_id)
    if scope == "api-key":
        return Generation.objects.filter(key_hash=scope_id)
    if scope == "guardrail":  # "<guardrail id>:key:<key hash>" or "<guardrail id>:user:<user id>"
        _, _, subject = scope_id.partition(":")
        kind, _, value = subject.partition(":")
        if kind == "key" and value:
            return Generation.objects.filter(key_hash=value)
        if kind == "user" and value:
            return Generation.objects.filter(user_id=value)
    return None


def _initial_spend(key: tuple) -> tuple[int, int]:
    """Spend already recorded in the period before the counter existed (a limit added mid-period)."""
    scope, scope_id, _interval, start = key
    rows = generations_of(scope, scope_id)
    if rows is None:
        return 0, 0
    zero = Value(Decimal(0), output_field=DecimalField(max_digits=18, decimal_places=10))
    totals = rows.filter(created_at__gte=start).aggregate(
        platform=Coalesce(Sum("cost", filter=Q(is_byok=False)), zero),
        byok=Coalesce(Sum("cost", filter=Q(is_byok=True)), zero),
    )
    return usd_to_units(totals["platform"]), usd_to_units(totals["byok"])


def _lookup(keys: list[tuple]) -> None:
    query = Q()
    for scope, scope_id, interval, start in keys:
        query |= Q(scope=scope, scope_id=scope_id, interval=interval, period_start=start)
    for c in SpendCounter.objects.filter(query).only("id", "scope", "scope_id", "interval", "period_start"):
        _counter_ids[(c.scope, c.scope_id, c.interval, c.period_start)] = c.id


def _ensure_counters(keys: list[tuple]) -> list[int]:
    """Ids of the counter rows of `keys`, creating the missing ones (ids cached in-process)."""
    missing = [k for k in keys if k not in _counter_ids]
    if missing and len(_counter_ids) > _MAX_CACHED_COUNTERS:  # ids of past periods pile up otherwise
        _counter_ids.clear()
        missing = list(keys)
    if missing:
        _lookup(missing)
        absent = [k for k in missing if k not in _counter_ids]
        if absent:
            rows = []
            for key in absent:
                spent, byok_spent = _initial_spend(key)
                rows.append(
                    SpendCounter(
                        scope=key[0],
                        scope_id=key[1],
                        interval=key[2],
                        period_start=key[3],
                        spent_units=spent,
                        byok_spent_units=byok_spent,
                    )
                )
            SpendCounter.objects.bulk_create(rows, ignore_conflicts=True)
            _lookup(absent)
    return [_counter_ids[k] for k in keys]


class _Refused(Exception):
    def __init__(self, counter_id: int, limit: SpendLimit) -> None:
        self.counter_id = counter_id
        self.limit = limit


def _reserve_once(
    checks: list[tuple[int, SpendLimit]], amount: int, now: datetime, request_id: str, record: dict | None
) -> Hold:
    ttl = timedelta(seconds=settings.GATEWAY_BUDGET_RESERVATION_TTL)
    checks = sorted(checks, key=lambda item: item[0])  # lock rows in ascending id order: no deadlocks
    reservation_id = uuid.uuid4()
    counter_ids = tuple(counter_id for counter_id, _ in checks)
    try:
        _, refused = sql.hold_all(
            [
                (counter_id, usd_to_units(limit.limit_usd, round_up=False), limit.include_byok)
                for counter_id, limit in checks
            ],
            amount=amount,
            request_id=request_id,
            now=now,
            expires_at=now + ttl,
            record=record,
            reservation_id=reservation_id,
        )
    except DATABASE_UNAVAILABLE_ERRORS:
        keeper.unknown_outcome(Settlement(hold=Hold(reservation_id, counter_ids, amount), cost_units=0, is_byok=False))
        raise
    if refused is not None:
        raise _Refused(*checks[refused])
    keeper.hold_taken(reservation_id)
    return Hold(reservation_id=reservation_id, counter_ids=counter_ids, amount_units=amount)


def spend_reserve(
    *, limits: list[SpendLimit], amount_units: int, now: datetime, request_id: str = "", record: dict | None = None
) -> Hold:
    """Hold `amount_units` on the counter of every limit, or raise LimitExceeded (nothing held)."""
    # A limit without an interval (a guardrail's null reset_interval) never resets.
    limits = [limit if limit.interval else replace(limit, interval="lifetime") for limit in limits]
    pairs = _dedupe(limits, now)
    reaped = False
    for _attempt in range(3):
        ids = _ensure_counters([key for key, _ in pairs])
        checks = [(counter_id, limit) for counter_id, (_, limit) in zip(ids, pairs, strict=True)]
        try:
            return _reserve_once(checks, amount_units, now, request_id, record)
        except _Refused as refused:
            row = SpendCounter.objects.filter(id=refused.counter_id).first()
            if row is None:  # the cached id is stale (rows removed by an operator): look the rows up again
                _counter_ids.clear()
                continue
            if not reaped and reservations_reap(now=now):
                reaped = True
                continue
            spent = row.spent_units + (row.byok_spent_units if refused.limit.include_byok else 0)
            raise LimitExceeded(
                limit=refused.limit,
                spent_units=spent,
                reserved_units=row.reserved_units,
                amount_units=amount_units,
                resets_at=period_end(refused.limit.interval, now),
            )
    raise RuntimeError("spend counters could not be resolved")


def _cached_ids(keys: list[tuple]) -> list[int] | None:
    """The counter ids of `keys` when every one is cached (no database access), else None."""
    ids = []
    for key in keys:
        counter_id = _counter_ids.get(key)
        if counter_id is None:
            return None
        ids.append(counter_id)
    return ids


async def spend_reserve_async(
    *,
    limits: list[SpendLimit],
    amount_units: int,
    now: datetime,
    request_id: str,
    on_thread,
    record: dict | None = None,
) -> Hold:
    """`spend_reserve` with the hold statement sent from the event loop (PostgreSQL, budgets/counter_sql.py
    `hold_all_async`; `now` aware). Everything around it is pure Python here: the counter ids come from the
    cache and the period starts are computed. The rare rest runs the synchronous `spend_reserve` by
    `await on_thread(...)` on the database thread, as before: a counter not cached yet (looked up or created
    there) and a refusal (its row read for the 402, expired holds reaped, the hold tried again)."""
    kwargs = {"limits": limits, "amount_units": amount_units, "now": now, "request_id": request_id, "record": record}
    normalized = [limit if limit.interval else replace(limit, interval="lifetime") for limit in limits]
    pairs = _dedupe(normalized, now)
    ids = _cached_ids([key for key, _ in pairs])
    if ids is None:
        return await on_thread(**kwargs)
    checks = sorted(
        ((counter_id, limit) for counter_id, (_, limit) in zip(ids, pairs, strict=True)), key=lambda item: item[0]
    )
    reservation_id = uuid.uuid4()
    counter_ids = tuple(counter_id for counter_id, _ in checks)
    try:
        _, refused = await sql.hold_all_async(
            [
                (counter_id, usd_to_units(limit.limit_usd, round_up=False), limit.include_byok)
                for counter_id, limit in checks
            ],
            amount=amount_units,
            request_id=request_id,
            now=now,
            expires_at=now + timedelta(seconds=settings.GATEWAY_BUDGET_RESERVATION_TTL),
            record=record,
            reservation_id=reservation_id,
        )
    except DATABASE_UNAVAILABLE_ERRORS:
        keeper.unknown_outcome(
            Settlement(hold=Hold(reservation_id, counter_ids, amount_units), cost_units=0, is_byok=False)
        )
        raise
    if refused is not None:
        return await on_thread(**kwargs)
    keeper.hold_taken(reservation_id)
    return Hold(reservation_id=reservation_id, counter_ids=counter_ids, amount_units=amount_units)


def spend_settle(*, hold: Hold, cost_units: int, is_byok: bool) -> None:
    """Release the hold and add the actual cost (to the BYOK column when a BYOK key paid)."""
    spend_settle_many([Settlement(hold=hold, cost_units=cost_units, is_byok=is_byok)])


@dataclass(frozen=True, slots=True)
class Settlement:
    """One request's settlement: its hold and its actual cost (paid by a BYOK key or not). Its id makes it
    apply once: a retry of a write whose commit succeeded but whose answer was lost skips it."""

    hold: Hold
    cost_units: int
    is_byok: bool
    settlement_id: uuid.UUID = field(default_factory=uuid.uuid4)


def spend_settle_many(settlements: list[Settlement]) -> None:
    """Settle many requests in one transaction: one DELETE of their reservations, one UPDATE per counter.

    A hold is released only when this call deleted its reservation row; one `reservations_reap` charged as
    spent already (it expired) has that charge taken back instead, so the request ends up charged its cost
    once. A hold settled already (or listed twice) only has its cost added. A settlement applied already
    (its id is in AppliedSettlement: an earlier write committed, its answer was lost) is skipped.
    """
    if not settlements:
        return
    with sql.counter_transaction() as cursor:
        fresh = sql.claim_settlements(cursor, [s.settlement_id for s in settlements], datetime.now(UTC))
        applied = [s for s in settlements if s.settlement_id not in fresh]
        settlements = [s for s in settlements if s.settlement_id in fresh]
        keeper.settled(s.hold.reservation_id for s in applied)
        if not settlements:
            return
        deleted = sql.delete_reservations(cursor, list({s.hold.reservation_id: None for s in settlements}))
        totals: dict[int, list[int]] = {}  # counter id -> [release, spent, byok spent]
        for settlement in settlements:
            hold = settlement.hold
            reaped = deleted.pop(hold.reservation_id, None)  # released once, even if the same hold came twice
            release = hold.amount_units if reaped is False else 0
            uncharge = hold.amount_units if reaped else 0
            for counter_id in hold.counter_ids:
                total = totals.setdefault(counter_id, [0, 0, 0])
                total[0] += release
                total[1] -= uncharge
                total[2 if settlement.is_byok else 1] += settlement.cost_units
        for counter_id in sorted(totals):  # ascending, like reservations: no deadlocks
            release, spent, byok_spent = totals[counter_id]
            sql.apply_totals(cursor, counter_id=counter_id, release=release, spent=spent, byok_spent=byok_spent)
    keeper.settled(s.hold.reservation_id for s in settlements)


async def spend_settle_many_async(settlements: list[Settlement]) -> None:
    """`spend_settle_many` on PostgreSQL as one statement sent from the event loop (budgets/counter_sql.py
    `settle_all_async`, the function of migration budgets/0005): the same arithmetic, one round trip."""
    if not settlements:
        return
    await sql.settle_all_async(
        [
            (s.settlement_id, s.hold.reservation_id, s.hold.amount_units, s.cost_units, s.is_byok, s.hold.counter_ids)
            for s in settlements
        ],
        datetime.now(UTC),
    )
    keeper.settled(s.hold.reservation_id for s in settlements)


# Far longer than any retry of a settlement write (GATEWAY_ACCOUNTING_RETRY_SECONDS, then one by one).
APPLIED_SETTLEMENTS_KEPT = timedelta(hours=1)


def applied_settlements_prune(*, now: datetime) -> int:
    """Forget the applied settlements older than an hour (nothing retries them any more); how many rows went."""
    deleted, _ = AppliedSettlement.objects.filter(created_at__lt=now - APPLIED_SETTLEMENTS_KEPT).delete()
    return deleted


def reservations_reap(*, now: datetime, batch: int = 500) -> int:
    """Charge the holds whose request never settled (its process died) as spent, at the hold amount (what the
    provider may have billed, at most), mark them reaped, and give each request its Generation row (status
    `interrupted`, cost the hold: budgets/recovery.py) in the same transaction; returns how many were charged."""
    from budgets.recovery import record_interrupted

    expired = list(
        SpendReservation.objects.filter(expires_at__lte=now, reaped_at__isnull=True).values_list(
            "id", "amount_units", "counter_ids", "request_id", "record", "created_at"
        )[:batch]
    )
    reaped = 0
    for reservation_id, amount, counter_ids, request_id, record, created_at in expired:
        with transaction.atomic(), sql.counter_transaction() as cursor:
            if sql.mark_reaped(cursor, reservation_id, now):
                for counter_id in sorted(counter_ids):
                    sql.apply(cursor, counter_id=counter_id, release=amount, cost=amount, cost_column="spent_units")
                record_interrupted(
                    request_id=request_id, amount_units=amount, record=record, created_at=created_at, now=now
                )
                reaped += 1
    if reaped:
        logger.warning("charged %d expired hold(s) of requests that never settled at their hold amount", reaped)
    return reaped


def recorded_spend_units(limit: SpendLimit, now: datetime) -> int:
    """Spend that enforcement counts against `limit` in its current window (BYOK spend only if it counts)."""
    key = counter_key(limit, now)
    row = (
        SpendCounter.objects.filter(scope=key[0], scope_id=key[1], interval=key[2], period_start=key[3])
        .values_list("spent_units", "byok_spent_units")
        .first()
    )
    platform, byok = row if row is not None else _initial_spend(key)
    return platform + (byok if limit.include_byok else 0)
