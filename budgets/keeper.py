"""Keeps this process's spend holds alive, finishes the releases it could not write, and reaps dead processes' holds.

A hold expires `GATEWAY_BUDGET_RESERVATION_TTL` seconds after it was taken unless its process renews it: this
module remembers the holds of the process's requests in flight (a dict entry per hold, added when the hold is
taken and dropped when its settlement is written: no database work on the request's path) and a daemon thread
renews them every third of the TTL, in one UPDATE for all of them. So a hold outlives its process by at most the
TTL, however long its request runs, and a long stream is never taken for a dead one.

The same thread, on each turn:

- writes the settlements the data plane gave up on (the database was unreachable for longer than
  `GATEWAY_ACCOUNTING_RETRY_SECONDS`), and the releases of holds whose statement's outcome is unknown (the
  database did not answer the hold in time: it may have committed it). Until they are written these holds
  are renewed as well, so the reaper never charges a request that reached no provider;
- reaps the expired holds of every process (`counters.reservations_reap`): charged at their amount, each with
  its request's Generation row rebuilt as `interrupted` (budgets/recovery.py). A hold is marked reaped only if
  it is still expired at that moment, so a renewal that commits after the reaper listed it keeps it live; a
  hold reaped while its request was alive (its process cut from the database for longer than the TTL) is
  charged once all the same: the request's own row replaces the `interrupted` one and its settlement takes
  the reaped charge back (tests/budgets/test_reaper_race.py).

The thread starts with the process's first hold (a process serving no request with a spending limit never
starts it) and runs its first turn at once, so a restarted process reaps what its predecessor left as soon as
it has expired. Its database connection is closed after each turn.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import close_old_connections, connection

from budgets.models import SpendReservation

logger = logging.getLogger("gateway.budgets")

# reservation id -> None (the request is in flight: renew its hold) or the Settlement still to write.
_live: dict[uuid.UUID, object] = {}
_lock = threading.Lock()
_thread: threading.Thread | None = None
AUTOSTART = True  # tests of the in-process app turn the thread off and call `turn()` themselves


def hold_taken(reservation_id: uuid.UUID) -> None:
    """A hold of this process was taken: renew it until its settlement is written."""
    _live[reservation_id] = None
    if _thread is None and AUTOSTART:
        _start()


def settled(reservation_ids) -> None:
    """These holds' settlements were written: nothing more to renew or to retry."""
    for reservation_id in reservation_ids:
        _live.pop(reservation_id, None)


def park(settlement) -> None:
    """A settlement (or the release of a hold whose outcome is unknown) the data plane could not write: written
    by the keeper's next turns, its hold renewed meanwhile."""
    _live[settlement.hold.reservation_id] = settlement
    if _thread is None and AUTOSTART:
        _start()


def unknown_outcome(release) -> None:
    """The database did not answer a hold in time: it may still commit it. Its release (`release`, a Settlement at
    $0) is written on the keeper's next turns once the database answers again (nothing is released if the hold
    never landed), so a request answered 503 that reached no provider keeps no hold."""
    park(release)


def parked() -> list:
    return [value for value in list(_live.values()) if value is not None]


def interval_seconds() -> float:
    return max(0.2, settings.GATEWAY_BUDGET_RESERVATION_TTL / 3)


def turn(now: datetime | None = None) -> None:
    """One turn: write the parked settlements, renew the holds of this process, reap expired ones."""
    from budgets.counters import reservations_reap, spend_settle_many

    now = now or datetime.now(UTC)
    waiting = parked()
    if waiting:
        try:
            spend_settle_many(waiting)  # drops them from _live once written
        except Exception:
            logger.warning("%d settlement(s) still not written; retried in %.0f s", len(waiting), interval_seconds())
    renewing = list(_live)
    if renewing:
        renew_reservations(renewing, now + timedelta(seconds=settings.GATEWAY_BUDGET_RESERVATION_TTL))
    while reservations_reap(now=now):
        pass


def renew_reservations(reservation_ids: list[uuid.UUID], expires_at: datetime) -> int:
    """Push back the expiry of holds still in flight in this process (budgets/keeper.py); how many were renewed
    (a hold reaped already stays reaped: its request's late settlement replaces the charge)."""
    renewed = 0
    for start in range(0, len(reservation_ids), 500):
        renewed += SpendReservation.objects.filter(
            id__in=reservation_ids[start : start + 500], reaped_at__isnull=True
        ).update(expires_at=expires_at)
    return renewed


def _run() -> None:
    while True:
        try:
            close_old_connections()
            turn()
        except Exception:  # the database is unreachable: the next turn tries again
            logger.warning("the budget keeper's turn failed; next in %.0f s", interval_seconds(), exc_info=True)
        finally:
            connection.close()
        time.sleep(interval_seconds())


def _start() -> None:
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_run, name="gateway-budget-keeper", daemon=True)
            _thread.start()
