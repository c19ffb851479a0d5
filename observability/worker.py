"""The delivery worker: claims due outbox rows, sends them, records the outcome.

- Claiming: on PostgreSQL `SELECT ... FOR UPDATE SKIP LOCKED` then a lease (`claim_token` set and
  `next_attempt_at` pushed past the delivery time limit), so concurrent workers never take the same row; on
  SQLite a compare-and-set UPDATE per row does the same. A worker that dies mid-delivery loses its lease and
  the row is claimed again when the lease ends; one that stops (SIGTERM) finishes the deliveries in flight and
  releases the claimed rows it had not started (due at once for another worker). Statements after the claim
  (reading the rows, writing an outcome) are retried for a moment when the database refuses them, so a passing
  fault does not leave a delivered row to be sent again.
- Payload: built here from the generation's stored trace (observability/bodies.py, decrypted), after the
  destination's `filter_rules` (RE2) let it through; a row they do not is `filtered` (not sent, kept like a
  delivered one). A row whose trace is gone (retention) or cannot be decrypted is dead.
- Outcome: 2xx delivered; network errors, 408/425/429 and 5xx retried with exponential backoff and jitter
  (or after `Retry-After` when the receiver sends one); other 4xx and unsupported types go dead at once;
  after `max_attempts` a row is dead. Dead rows are listed in the admin with their last error and a retry
  action.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from email.utils import parsedate_to_datetime

import aiohttp
from django.db import DatabaseError, close_old_connections, connection, connections, transaction
from django.utils import timezone

from gateway_project.netguard import url_problem
from observability.conf import setting
from observability.delivery import Undeliverable, delivery_payload
from observability.models import DeliveryStatus, OutboxEntry, TraceBody
from observability.outbox import bodies_purge, body_release, body_retention
from observability.senders import DeliveryNotSupported, build_request, response_problem
from observability.services import outbox_purge_delivered
from observability.transport import DeliveryClient

logger = logging.getLogger("gateway.observability.worker")

RETRYABLE_STATUSES = frozenset({408, 425, 429})
MAX_RETRY_AFTER_SECONDS = 3600
MAX_ERROR_LENGTH = 1000
PURGE_INTERVAL_SECONDS = 600
# A statement made after rows are claimed (reading them, writing a delivery's outcome) is tried this many times,
# 0.05 s apart and doubling (0.75 s of pauses in all), when the database refuses it (a locked SQLite table, a
# dropped connection): a row left claimed waits for its lease to end, and one whose delivery went out is then
# sent twice.
CLAIMED_ATTEMPTS = 5
CLAIMED_FIRST_PAUSE_SECONDS = 0.05
FILTERED_OUT = "filtered out by the destination's filter_rules"


@dataclass
class WorkerConfig:
    concurrency: int
    max_attempts: int
    backoff_base: float
    backoff_max: float
    timeout: float
    poll_interval: float
    batch_size: int = 4
    retention_days: float = 7.0

    @classmethod
    def from_settings(cls, **overrides) -> WorkerConfig:
        values = {
            "concurrency": setting("GATEWAY_OBSERVABILITY_CONCURRENCY"),
            "max_attempts": setting("GATEWAY_OBSERVABILITY_MAX_ATTEMPTS"),
            "backoff_base": setting("GATEWAY_OBSERVABILITY_BACKOFF_BASE_SECONDS"),
            "backoff_max": setting("GATEWAY_OBSERVABILITY_BACKOFF_MAX_SECONDS"),
            "timeout": setting("GATEWAY_OBSERVABILITY_TIMEOUT_SECONDS"),
            "poll_interval": setting("GATEWAY_OBSERVABILITY_POLL_SECONDS"),
            "retention_days": setting("GATEWAY_OBSERVABILITY_RETENTION_DAYS"),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=max(60.0, self.timeout * (self.batch_size + 2)))


def backoff_seconds(attempts: int, base: float, cap: float) -> float:
    """Exponential backoff with equal jitter: half the delay fixed, half random."""
    delay = min(cap, base * 2 ** max(attempts - 1, 0))
    return delay / 2 + random.uniform(0, delay / 2)


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER_SECONDS)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return min(max((moment - timezone.now()).total_seconds(), 0.0), MAX_RETRY_AFTER_SECONDS)


def claim(limit: int, lease: timedelta) -> list[OutboxEntry]:
    """Take up to `limit` due rows for this worker (see the module docstring)."""
    now = timezone.now()
    token = uuid.uuid4()
    due = OutboxEntry.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now).order_by(
        "next_attempt_at"
    )
    if connection.features.has_select_for_update_skip_locked:
        with transaction.atomic():
            ids = list(due.select_for_update(skip_locked=True).values_list("id", flat=True)[:limit])
            claimed = OutboxEntry.objects.filter(id__in=ids).update(claim_token=token, next_attempt_at=now + lease)
    else:
        claimed = 0
        for row_id, due_at in list(due.values_list("id", "next_attempt_at")[:limit]):
            claimed += OutboxEntry.objects.filter(
                id=row_id, status=DeliveryStatus.PENDING, next_attempt_at=due_at
            ).update(claim_token=token, next_attempt_at=now + lease)
    if not claimed:  # an idle poll: no second query
        return []
    rows = OutboxEntry.objects.filter(claim_token=token).select_related("destination")
    return retried(lambda: list(rows), "reading the claimed outbox rows")


def retried(statement, what: str):
    """`statement()`, tried again after a database error (see CLAIMED_ATTEMPTS); the last error is raised."""
    pause = CLAIMED_FIRST_PAUSE_SECONDS
    for attempt in range(1, CLAIMED_ATTEMPTS + 1):
        try:
            return statement()
        except DatabaseError:
            if attempt == CLAIMED_ATTEMPTS:
                raise
            logger.warning("observability worker: %s failed (attempt %s of %s)", what, attempt, CLAIMED_ATTEMPTS)
            close_old_connections()
            time.sleep(pause)
            pause *= 2


class Worker:
    """Delivers outbox rows; `run_once` for one round, `run` until `stop` is set."""

    def __init__(self, config: WorkerConfig | None = None) -> None:
        self.config = config or WorkerConfig.from_settings()
        self.client = DeliveryClient(self.config.timeout)
        self.stop = threading.Event()

    def close(self) -> None:
        self.client.close()

    def run(self) -> None:
        """Deliver until `stop` is set: `concurrency` threads, each claiming and delivering a few rows at a time."""
        logger.info("observability worker started (concurrency %s)", self.config.concurrency)
        threads = [
            threading.Thread(target=self._loop, name=f"observability-{index}", daemon=True)
            for index in range(self.config.concurrency)
        ]
        for thread in threads:
            thread.start()
        next_purge = 0.0
        for thread in threads:
            while thread.is_alive():
                if time.monotonic() >= next_purge:
                    self.purge()
                    next_purge = time.monotonic() + PURGE_INTERVAL_SECONDS
                thread.join(0.5)
        connections.close_all()
        logger.info("observability worker stopped")

    def purge(self) -> int:
        """Delete rows delivered or filtered out more than `retention_days` ago (dead rows are kept), and the
        stored traces no delivery needs or older than the body retention. Returns how many rows."""
        try:
            now = timezone.now()
            deleted = outbox_purge_delivered(older_than=now - timedelta(days=self.config.retention_days))
            bodies = bodies_purge(older_than=now - body_retention())
        except DatabaseError:
            logger.exception("observability worker: could not purge delivered rows")
            return 0
        if deleted or bodies:
            logger.info("purged %s delivered outbox rows and %s stored traces", deleted, bodies)
        return deleted

    def _loop(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    processed = self.run_once()
                except DatabaseError:
                    logger.exception("observability worker: database error, retrying")
                    close_old_connections()
                    processed = 0
                if not processed:
                    self.stop.wait(self.config.poll_interval)
        finally:
            connections.close_all()

    def run_once(self) -> int:
        """Claim up to `batch_size` due rows and deliver them; returns how many rows were processed."""
        rows = claim(self.config.batch_size, self.config.lease)
        wanted = {row.generation_id for row in rows if row.payload is None}
        traces = TraceBody.objects.filter(pk__in=wanted).values_list("generation_id", "data")
        bodies = retried(lambda: dict(traces), "reading the claimed rows' traces") if wanted else {}
        for index, row in enumerate(rows):
            if self.stop.is_set():  # stopping (SIGTERM): the rows not started go back for another worker now
                self.release(rows[index:])
                break
            self.deliver(row, bodies.get(row.generation_id))
        return len(rows)

    def release(self, rows: list[OutboxEntry]) -> int:
        """Give back claimed rows not delivered: due at once, unclaimed (rather than waiting for their lease)."""
        claimed = OutboxEntry.objects.filter(
            id__in=[row.id for row in rows], claim_token=rows[0].claim_token, status=DeliveryStatus.PENDING
        )
        released = retried(lambda: claimed.update(claim_token=None, next_attempt_at=timezone.now()), "releasing rows")
        logger.info("observability worker stopping: released %s claimed rows not delivered", released)
        return released

    def drain(self, rounds: int = 1000) -> int:
        """Deliver in this thread until nothing is due (tests and `--once`)."""
        total = 0
        for _ in range(rounds):
            processed = self.run_once()
            if not processed:
                break
            total += processed
        return total

    def deliver(self, row: OutboxEntry, token: str | None = None) -> None:
        destination = row.destination
        if destination.deleted_at is not None:
            return self._dead(row, "destination was deleted", None)
        try:
            payload = delivery_payload(row, token)
        except Undeliverable as exc:
            return self._dead(row, str(exc), None)
        if payload is None:
            return self._filtered(row)
        try:
            request = build_request(destination.type, payload, destination.full_config(), str(row.id))
        except DeliveryNotSupported as exc:
            return self._dead(row, str(exc), None)
        except Exception as exc:
            logger.exception("cannot build the request of outbox row %s", row.id)
            return self._failed(row, f"cannot build the request: {exc}", None, None)
        refused = url_problem(request.url)
        if refused:  # checked again at delivery: DNS may have changed since the destination was saved
            return self._dead(row, f"destination URL refused: {refused}", None)
        try:
            response = self.client.send(request.method, request.url, request.body, request.headers)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:  # ValueError: a header aiohttp refuses
            return self._failed(row, f"{type(exc).__name__}: {exc}", None, None)
        status = response.status
        if 200 <= status < 300:
            problem = response_problem(destination.type, status, response.content)
            if problem:
                return self._failed(row, problem, status, None)
            return self._delivered(row, status)
        message = f"HTTP {status}: {response.text[:300]}"
        if status in RETRYABLE_STATUSES or status >= 500:
            return self._failed(row, message, status, parse_retry_after(response.retry_after))
        return self._dead(row, message, status)

    def _finish(self, row: OutboxEntry, **fields) -> None:
        claimed = OutboxEntry.objects.filter(id=row.id, claim_token=row.claim_token)
        retried(lambda: claimed.update(claim_token=None, **fields), f"recording outbox row {row.id}'s outcome")
        if fields.get("status") in (DeliveryStatus.DELIVERED, DeliveryStatus.FILTERED):
            body_release(row.generation_id)

    def _filtered(self, row: OutboxEntry) -> None:
        self._finish(row, status=DeliveryStatus.FILTERED, delivered_at=timezone.now(), last_error=FILTERED_OUT)

    def _delivered(self, row: OutboxEntry, status: int) -> None:
        self._finish(
            row,
            status=DeliveryStatus.DELIVERED,
            attempts=row.attempts + 1,
            delivered_at=timezone.now(),
            last_status_code=status,
            last_error="",
        )

    def _dead(self, row: OutboxEntry, message: str, status: int | None) -> None:
        logger.warning("outbox row %s is dead: %s", row.id, message)
        self._finish(
            row,
            status=DeliveryStatus.DEAD,
            attempts=row.attempts + 1,
            last_error=message[:MAX_ERROR_LENGTH],
            last_status_code=status,
        )

    def _failed(self, row: OutboxEntry, message: str, status: int | None, retry_after: float | None) -> None:
        attempts = row.attempts + 1
        if attempts >= self.config.max_attempts:
            return self._dead(row, f"{message} (after {attempts} attempts)", status)
        delay = retry_after if retry_after is not None else self._backoff(attempts)
        self._finish(
            row,
            attempts=attempts,
            next_attempt_at=timezone.now() + timedelta(seconds=delay),
            last_error=message[:MAX_ERROR_LENGTH],
            last_status_code=status,
        )

    def _backoff(self, attempts: int) -> float:
        return backoff_seconds(attempts, self.config.backoff_base, self.config.backoff_max)
