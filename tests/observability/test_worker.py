"""The delivery worker against a loopback receiver: delivery, retries with backoff, Retry-After, dead rows,
the admin retry action, outages, concurrent workers and SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import OperationalError, connection
from django.test import Client
from django.utils import timezone

from observability.models import OutboxEntry
from observability.senders.webhook import SIGNATURE_HEADER, verify
from observability.worker import Worker, WorkerConfig, backoff_seconds, parse_retry_after
from tests.fakes.fake_receiver import FakeReceiver, Reply
from tests.observability.conftest import record_generation
from tests.observability.test_outbox import destination


def make_worker(**overrides) -> Worker:
    values = {
        "concurrency": 1,
        "max_attempts": 5,
        "backoff_base": 0.0,
        "backoff_max": 0.0,
        "timeout": 5.0,
        "poll_interval": 0.05,
    }
    values.update(overrides)
    return Worker(WorkerConfig(**values))


def webhook(api, receiver, **fields):
    config = {"url": f"{receiver.url}/hook", "secret": "whsec-test-secret"}
    return destination(api, config=config, **fields)


@pytest.mark.django_db
def test_delivers_a_signed_webhook_and_marks_the_row_delivered(api, org, receiver):
    webhook(api, receiver)
    generation = record_generation(org)
    worker = make_worker()
    assert worker.run_once() == 1
    (received,) = receiver.requests
    assert received.method == "POST" and received.path == "/hook"
    assert verify("whsec-test-secret", received.headers[SIGNATURE_HEADER.lower()], received.body)
    assert received.json()["trace"]["id"] == str(generation.id)
    row = OutboxEntry.objects.get()
    assert row.status == "delivered" and row.attempts == 1 and row.delivered_at and row.last_status_code == 200
    assert worker.run_once() == 0 and len(receiver.requests) == 1


@pytest.mark.django_db
def test_fails_twice_then_succeeds(api, org, receiver):
    webhook(api, receiver)
    record_generation(org)
    receiver.reply_with(Reply(500), Reply(503))
    worker = make_worker()
    assert worker.run_once() == 1
    row = OutboxEntry.objects.get()
    assert (
        row.status == "pending" and row.attempts == 1 and row.last_status_code == 500 and "HTTP 500" in row.last_error
    )
    worker.run_once()
    worker.run_once()
    row.refresh_from_db()
    assert row.status == "delivered" and row.attempts == 3 and row.last_error == ""
    assert len(receiver.requests) == 3
    assert len({r.headers["x-gateway-delivery"] for r in receiver.requests}) == 1


@pytest.mark.django_db
def test_backoff_is_exponential_with_jitter(api, org, receiver):
    webhook(api, receiver)
    record_generation(org)
    receiver.default = Reply(502)
    worker = make_worker(backoff_base=10.0, backoff_max=1000.0)
    before = timezone.now()
    worker.run_once()
    row = OutboxEntry.objects.get()
    delay = (row.next_attempt_at - before).total_seconds()
    assert 5 <= delay <= 12
    assert worker.run_once() == 0  # not due yet
    for attempts, low, high in ((1, 5, 10), (2, 10, 20), (3, 20, 40), (10, 500, 1000)):
        samples = [backoff_seconds(attempts, 10, 1000) for _ in range(200)]
        assert low <= min(samples) and max(samples) <= high and len(set(samples)) > 100


@pytest.mark.django_db
def test_429_retry_after_is_honoured(api, org, receiver):
    webhook(api, receiver)
    record_generation(org)
    receiver.reply_with(Reply(429, {"Retry-After": "120"}))
    before = timezone.now()
    make_worker().run_once()
    row = OutboxEntry.objects.get()
    assert row.status == "pending" and row.last_status_code == 429
    assert 119 <= (row.next_attempt_at - before).total_seconds() <= 125
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0
    assert parse_retry_after("soon") is None


@pytest.mark.django_db
def test_dead_after_max_attempts_then_admin_retry(api, org, receiver):
    webhook(api, receiver)
    record_generation(org)
    receiver.default = Reply(500, body=b'{"error":"boom"}')
    worker = make_worker(max_attempts=3)
    assert worker.drain() == 3
    row = OutboxEntry.objects.get()
    assert row.status == "dead" and row.attempts == 3
    assert "HTTP 500" in row.last_error and "boom" in row.last_error and "after 3 attempts" in row.last_error

    org.admin.is_staff = org.admin.is_superuser = True
    org.admin.save()
    client = Client()
    client.force_login(org.admin)
    page = client.get("/admin/observability/outboxentry/?status__exact=dead").content.decode()
    assert str(row.id) in page and "HTTP 500" in page
    response = client.post(
        "/admin/observability/outboxentry/", {"action": "retry", "_selected_action": [str(row.id)]}, follow=True
    )
    assert response.status_code == 200 and "1 row(s) queued" in response.content.decode()
    row.refresh_from_db()
    assert row.status == "pending" and row.attempts == 0
    receiver.default = Reply(200)
    worker.drain()
    row.refresh_from_db()
    assert row.status == "delivered"


@pytest.mark.django_db
def test_client_errors_and_unsupported_types_are_dead_at_once(api, org, receiver):
    webhook(api, receiver)
    destination(api, name="spend", type="ramp", config={"apiKey": "ramp-key-123456"})
    record_generation(org)
    receiver.reply_with(Reply(401, body=b"bad token"))
    make_worker().drain()
    rows = {r.destination.type: r for r in OutboxEntry.objects.select_related("destination")}
    assert (
        rows["webhook"].status == "dead" and rows["webhook"].attempts == 1 and "HTTP 401" in rows["webhook"].last_error
    )
    assert rows["ramp"].status == "dead"
    assert rows["ramp"].last_error == "delivery not supported for type ramp"


@pytest.mark.django_db
def test_deleted_destination_rows_are_not_delivered(api, org, receiver):
    dest = webhook(api, receiver)
    record_generation(org)
    api.delete(f"/api/v1/observability/destinations/{dest['id']}")
    make_worker().drain()
    assert receiver.requests == []
    assert OutboxEntry.objects.get().last_error == "destination was deleted"


@pytest.mark.django_db
def test_langfuse_207_with_errors_is_retried(api, org, receiver):
    destination(api, type="langfuse", config={"publicKey": "pk", "secretKey": "sk", "baseUrl": receiver.url})
    record_generation(org)
    errors = {"successes": [], "errors": [{"id": "x", "status": 400, "message": "invalid body"}]}
    receiver.reply_with(Reply(207, body=json.dumps(errors).encode()), Reply(207, body=b'{"successes":[],"errors":[]}'))
    worker = make_worker()
    worker.run_once()
    row = OutboxEntry.objects.get()
    assert row.status == "pending" and "Langfuse rejected 1 event(s): 400 invalid body" in row.last_error
    worker.run_once()
    row.refresh_from_db()
    assert row.status == "delivered"
    assert receiver.requests[0].path == "/api/public/ingestion"


@pytest.mark.django_db
def test_generation_recorded_while_receiver_is_down_is_delivered_when_it_comes_back(api, org):
    receiver = FakeReceiver().start()
    port = receiver.port
    receiver.stop()
    webhook(api, receiver)
    generation = record_generation(org)
    worker = make_worker()
    worker.run_once()
    row = OutboxEntry.objects.get()
    assert row.status == "pending" and row.attempts == 1 and "Cannot connect to host" in row.last_error
    back = FakeReceiver(port).start()
    try:
        worker.drain()
        row.refresh_from_db()
        assert row.status == "delivered"
        assert [r.json()["trace"]["id"] for r in back.requests] == [str(generation.id)]
    finally:
        back.stop()


@pytest.mark.django_db(transaction=True)
def test_two_workers_never_deliver_a_row_twice(api, org, receiver):
    """PostgreSQL: SKIP LOCKED; SQLite: a conditional update per row (observability/worker.py claim())."""
    webhook(api, receiver)
    generations = [record_generation(org) for _ in range(30)]
    workers = [make_worker(concurrency=4, batch_size=2), make_worker(concurrency=4, batch_size=2)]
    threads = [threading.Thread(target=w.run) for w in workers]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while OutboxEntry.objects.filter(status="pending").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    for worker in workers:
        worker.stop.set()
    for thread in threads:
        thread.join(30)
    delivered = [r.headers["x-gateway-delivery"] for r in receiver.requests]
    assert len(delivered) == len(set(delivered)) == len(generations)
    assert OutboxEntry.objects.filter(status="delivered").count() == 30


@pytest.mark.django_db
def test_expired_lease_is_claimed_again(api, org, receiver):
    webhook(api, receiver)
    record_generation(org)
    OutboxEntry.objects.update(next_attempt_at=timezone.now() + timedelta(minutes=5), claim_token=None)
    assert make_worker().run_once() == 0
    OutboxEntry.objects.update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    assert make_worker().run_once() == 1


OUTCOME_WRITE = 'UPDATE "observability_outboxentry" SET "claim_token" = NULL'
CLAIMED_READ = 'SELECT "observability_outboxentry"."id"'


def refuse(times: int, statement: str = OUTCOME_WRITE):
    """An execute wrapper that refuses the first `times` statements starting with `statement` as the database
    would (a locked SQLite table, a dropped connection)."""
    refused = []

    def wrapper(execute, sql, params, many, context):
        if sql.startswith(statement) and (statement != CLAIMED_READ or "claim_token" in sql.split("WHERE")[-1]):
            if len(refused) < times:
                refused.append(sql)
                raise OperationalError("database table is locked")
        return execute(sql, params, many, context)

    return wrapper, refused


@pytest.mark.django_db(transaction=True)
def test_an_outcome_write_the_database_refuses_is_retried_not_delivered_twice(api, org, receiver):
    webhook(api, receiver)
    record_generation(org)
    worker = make_worker()
    outcome, refused_outcomes = refuse(2)
    read, refused_reads = refuse(1, CLAIMED_READ)
    with connection.execute_wrapper(outcome), connection.execute_wrapper(read):
        assert worker.run_once() == 1
    assert len(refused_outcomes) == 2 and len(refused_reads) == 1 and len(receiver.requests) == 1
    row = OutboxEntry.objects.get()
    assert row.status == "delivered" and row.claim_token is None and row.attempts == 1
    assert worker.run_once() == 0 and len(receiver.requests) == 1


@pytest.mark.django_db(transaction=True)
def test_an_outcome_write_refused_every_time_leaves_the_row_to_its_lease(api, org, receiver):
    webhook(api, receiver)
    record_generation(org)
    wrapper, refused = refuse(100)
    with connection.execute_wrapper(wrapper), pytest.raises(OperationalError):
        make_worker().run_once()
    assert len(refused) == 5 and len(receiver.requests) == 1
    row = OutboxEntry.objects.get()
    assert row.status == "pending" and row.claim_token is not None and row.next_attempt_at > timezone.now()


@pytest.mark.django_db(transaction=True)
def test_command_delivers_and_stops_cleanly_on_sigterm(api, org, receiver, settings):
    settings.GATEWAY_OBSERVABILITY_POLL_SECONDS = 0.05
    webhook(api, receiver)
    record_generation(org)

    before = signal.getsignal(signal.SIGTERM)

    def delivered() -> bool:
        try:
            return OutboxEntry.objects.filter(status="delivered").exists()
        except OperationalError:  # SQLite's shared-cache table lock while the worker writes: look again
            return False
        finally:
            connection.close()  # this thread's connection

    def terminate():
        # SIGTERM once the row is marked delivered, not when the receiver has the request: the worker may have
        # to retry that write (a locked SQLite table under load), and a stop before it leaves the row pending.
        deadline = time.monotonic() + 30
        while not (receiver.requests and delivered()) and time.monotonic() < deadline:
            time.sleep(0.02)
        if signal.getsignal(signal.SIGTERM) is not before:  # never SIGTERM pytest itself
            os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=terminate)
    killer.start()
    out = StringIO()
    call_command("run_observability_worker", "--concurrency", "2", stdout=out)
    killer.join()
    assert "received signal 15" in out.getvalue() and "observability worker stopped" in out.getvalue()
    assert OutboxEntry.objects.get().status == "delivered"
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.django_db
def test_command_once(api, org, receiver):
    webhook(api, receiver)
    record_generation(org)
    out = StringIO()
    call_command("run_observability_worker", "--once", stdout=out)
    assert "processed 1 outbox rows" in out.getvalue() and len(receiver.requests) == 1


@pytest.mark.django_db
def test_purge_deletes_old_delivered_rows_only(api, org, receiver):
    webhook(api, receiver)
    for _ in range(3):
        record_generation(org)
    worker = make_worker(retention_days=7)
    worker.drain()
    old, recent, _ = OutboxEntry.objects.order_by("created_at")
    OutboxEntry.objects.filter(pk=old.pk).update(delivered_at=timezone.now() - timedelta(days=8))
    dead = OutboxEntry.objects.filter(pk=recent.pk)
    dead.update(status="dead", delivered_at=None)
    assert worker.purge() == 1
    assert not OutboxEntry.objects.filter(pk=old.pk).exists()
    assert OutboxEntry.objects.count() == 2 and dead.get().status == "dead"


@pytest.mark.django_db
def test_a_stopping_worker_releases_the_claimed_rows_it_did_not_start(api, org, receiver):
    """SIGTERM sets `stop`: the delivery in flight finishes, the other claimed rows are due at once for another
    worker instead of waiting for their lease (minutes)."""
    webhook(api, receiver)
    for _ in range(4):
        record_generation(org)
    stopping = make_worker(batch_size=4)
    deliver = stopping.deliver

    def deliver_then_stop(row, token=None):
        deliver(row, token)
        stopping.stop.set()  # the signal arrives during the first delivery

    stopping.deliver = deliver_then_stop
    assert stopping.run_once() == 4
    assert len(receiver.requests) == 1
    pending = OutboxEntry.objects.filter(status="pending")
    assert pending.count() == 3
    assert all(row.claim_token is None and row.next_attempt_at <= timezone.now() for row in pending)
    assert make_worker(batch_size=4).run_once() == 3  # taken by another worker at once
    assert OutboxEntry.objects.filter(status="delivered").count() == 4 and len(receiver.requests) == 4


@pytest.mark.django_db
def test_deliveries_go_through_the_egress_proxy(api, org, receiver, monkeypatch):
    from inference.providers import upstream
    from tests.fakes.forward_proxy import ForwardProxy

    proxy = ForwardProxy().start()
    for name in ("http_proxy", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    upstream.reload()
    try:
        webhook(api, receiver)
        record_generation(org)
        worker = make_worker()
        assert worker.run_once() == 1
        worker.close()
        assert OutboxEntry.objects.get().status == "delivered" and len(receiver.requests) == 1
        ((method, target, _),) = proxy.relayed
        assert (method, target) == ("POST", f"{receiver.url}/hook")
    finally:
        monkeypatch.undo()
        upstream.reload()
        proxy.stop()
