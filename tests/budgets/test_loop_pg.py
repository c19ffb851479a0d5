"""The event loop's PostgreSQL pool (gateway_project/loop_pg.py: psycopg, psycopg_pool) and the budget hold sent
over it.

Against the real PostgreSQL test database (skipped on SQLite, where the hold stays on the database thread):
exactness of many concurrent holds, one failing pipelined statement leaving the others alone, a connection
killed by the server (in flight: 503 through the data plane; idle: replaced on the next call), a statement
past the deadline, a hold whose client went away, and the number of connections the process keeps.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
import psycopg
import pytest
from django.db import DataError, OperationalError, ProgrammingError, connection

from budgets import counter_sql
from budgets.models import SpendCounter, SpendReservation
from gateway_project import loop_pg
from tests.budgets.test_concurrency import database_url
from tests.inference.conftest import add_endpoint, wait_idle

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _postgresql_only(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("the event loop's client is for PostgreSQL (DATABASE_URL)")


def run(coro):
    """Run `coro` on a fresh event loop in a plain thread (Django refuses database calls from a running loop)."""
    box: dict = {}

    def target():
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(60)
    if "error" in box:
        raise box["error"]
    return box["value"]


def backends(application_name: str = "gateway-data-plane") -> list[tuple[int, str, str | None]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, state, wait_event_type FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            [application_name],
        )
        return cursor.fetchall()


def wait_for(condition, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def terminate(pid: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


class RowLock:
    """A transaction on its own connection holding a counter row's lock: holds on it wait."""

    def __init__(self, counter_id: int) -> None:
        self.conn = psycopg.connect(database_url(connection.settings_dict))
        self.conn.execute("SELECT 1 FROM budgets_spendcounter WHERE id = %s FOR UPDATE", [counter_id])

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


def now_aware() -> datetime:
    return datetime.now(UTC)


def counter() -> SpendCounter:
    return SpendCounter.objects.create(
        scope="workspace", scope_id=str(uuid.uuid4()), interval="daily", period_start=now_aware().replace(hour=0)
    )


# The client itself


def test_many_concurrent_holds_are_exact_against_the_limit():
    row = counter()
    limit, amount, attempts = 37 * 1000, 1000, 200

    async def scenario():
        now = now_aware()
        return await asyncio.gather(
            *(
                counter_sql.hold_all_async(
                    [(row.id, limit, False)],
                    amount=amount,
                    request_id=f"r{i}",
                    now=now,
                    expires_at=now + timedelta(minutes=5),
                )
                for i in range(attempts)
            )
        )

    outcomes = run(scenario())
    held = [reservation for reservation, refused in outcomes if refused is None]
    assert len(held) == 37 and sum(1 for _, refused in outcomes if refused == 0) == attempts - 37
    row.refresh_from_db()
    assert row.reserved_units == 37 * amount
    assert set(SpendReservation.objects.values_list("id", flat=True)) == set(held)


def test_a_failing_pipelined_statement_does_not_affect_the_others():
    async def scenario():
        client = loop_pg.database()
        await client.query("SELECT 1")  # the connection is open: the next ones queue behind the first
        return await asyncio.gather(
            client.query("SELECT %s::int + 1", ["1"]),
            client.query("SELECT 1 / %s::int", ["0"]),
            client.query("SELECT %s::int * 10", ["3"]),
            client.query("SELECT %s::int", ["not a number"]),
            client.query("SELECT 'fine'"),
            return_exceptions=True,
        )

    two, divided, thirty, bad, fine = run(scenario())
    assert two == [(2,)] and thirty == [(30,)] and fine == [("fine",)]
    assert isinstance(divided, DataError) and "division by zero" in str(divided)
    assert isinstance(bad, DataError) and "invalid input syntax" in str(bad)


def test_a_statement_leaves_when_it_is_sent_before_the_loop_turns():
    """The budget hold is sent ahead and the request goes on without yielding (budgets/middleware.py): the
    statement must reach the database in the first step of its task, not at the end of the loop's turn. psycopg
    writes it before the task first waits; the database runs it while the loop is still busy."""
    url = database_url(connection.settings_dict)

    async def scenario():
        client = loop_pg.database()
        await client.query("SELECT 1")  # the connection is open
        marker = f"sent-{uuid.uuid4().hex[:8]}"
        future = asyncio.ensure_future(client.query(f"SELECT '{marker}'"))
        await asyncio.sleep(0)  # the task's first step
        time.sleep(0.3)  # the request's own work: the loop does not turn
        with psycopg.connect(url) as other:
            seen = other.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'gateway-data-plane' AND query LIKE %s",
                [f"%{marker}%"],
            ).fetchone()[0]
        assert (await future) == [(marker,)]
        return seen

    assert run(scenario()) == 1


def _prepared_statements(client) -> dict[str, str]:
    async def names():
        return dict(await client.query("SELECT name, statement FROM pg_prepared_statements"))

    return names()


def test_holds_are_one_prepared_statement_of_the_loop_connection():
    row = counter()

    async def scenario():
        now = now_aware()
        held = [
            await counter_sql.hold_all_async(
                [(row.id, 10_000, False)], amount=amount, request_id=f"p{amount}", now=now, expires_at=now
            )
            for amount in (100, 250, 7)
        ]
        return held, await _prepared_statements(loop_pg.database())

    held, prepared = run(scenario())
    assert all(refused is None for _, refused in held)
    row.refresh_from_db()
    assert row.reserved_units == 357  # each hold's own amount: the parameters are bound per execution
    holds = {name: text for name, text in prepared.items() if "budgets_spend_hold_v3" in text}
    assert len(holds) == 1 and next(iter(holds)).startswith("_pg3_")  # psycopg's name


def test_the_database_thread_hold_takes_aware_and_naive_times():
    """`hold_all` outside atomic(): the same call by a psycopg cursor on the thread's connection, aware datetimes
    and naive ones (taken in the session's time zone), each holding exactly its amount or refusing."""
    row = counter()

    def hold(amount, now, request_id):
        return counter_sql.hold_all(
            [(row.id, 1_000, False)], amount=amount, request_id=request_id, now=now, expires_at=now + timedelta(1)
        )

    aware = hold(600, now_aware(), "aware")
    naive = hold(300, now_aware().replace(tzinfo=None), "naive")
    refused = hold(200, now_aware().replace(tzinfo=None), "over")
    assert aware[1] is None and naive[1] is None and refused[1] == 0
    row.refresh_from_db()
    assert row.reserved_units == 900
    assert set(SpendReservation.objects.values_list("request_id", flat=True)) == {"aware", "naive"}


def test_a_failed_execution_keeps_the_statement_prepared():
    async def scenario():
        client = loop_pg.database()
        with pytest.raises(DataError, match="division by zero"):
            await client.query("SELECT 10 / %s::int", ["0"], prepare=True)  # PREPARE fine, execution fails
        answer = await client.query("SELECT 10 / %s::int", ["5"], prepare=True)
        return answer, await _prepared_statements(client)

    value, prepared = run(scenario())
    assert value == [(2,)] and loop_pg.prepared_statements
    assert "SELECT 10 / $1::int" in prepared.values()


def test_a_statement_that_cannot_be_prepared_reports_its_own_error_and_is_not_remembered():
    async def scenario():
        client = loop_pg.database()
        with pytest.raises(ProgrammingError, match="syntax error"):
            await client.query("SELEC %s::int", ["1"], prepare=True)
        with pytest.raises(ProgrammingError, match="syntax error"):  # prepared again (not taken as known), fails
            await client.query("SELEC %s::int", ["1"], prepare=True)
        return await client.query("SELECT %s::int + 1", ["1"], prepare=True)

    assert run(scenario()) == [(2,)] and loop_pg.prepared_statements


def test_a_session_that_lost_its_prepared_statements_is_sent_them_unprepared(monkeypatch, caplog):
    """What a pooler in transaction mode does to a session's prepared statements (the next statement runs on
    another server session): the statement was not run, it is sent again unprepared, and the process stops
    preparing (one warning)."""
    monkeypatch.setattr(loop_pg, "prepared_statements", True)
    row = counter()

    async def scenario():
        client = loop_pg.database()
        now = now_aware()

        async def hold(request_id):
            return await counter_sql.hold_all_async(
                [(row.id, 10_000, False)], amount=100, request_id=request_id, now=now, expires_at=now
            )

        first = await hold("before")
        # The server session forgets every prepared statement, psycopg does not know (libpq, under its feet).
        assert client.parked[0].pgconn.exec_(b"DEALLOCATE ALL").status == psycopg.pq.ExecStatus.COMMAND_OK
        second = await hold("after")
        third = await hold("unprepared")
        return first, second, third, await _prepared_statements(client)

    with caplog.at_level("WARNING", logger="gateway.loop_pg"):
        first, second, third, prepared = run(scenario())
    assert [refused for _, refused in (first, second, third)] == [None, None, None]
    assert set(SpendReservation.objects.values_list("request_id", flat=True)) == {"before", "after", "unprepared"}
    row.refresh_from_db()
    assert row.reserved_units == 300  # the lost statement's call ran once, not twice
    assert loop_pg.prepared_statements is False and prepared == {}
    assert sum("sent unprepared" in r.getMessage() for r in caplog.records) == 1


def test_a_settlement_whose_commit_answer_was_lost_is_charged_once(monkeypatch, settings):
    """The settlement statement commits but its answer is held back past the deadline (a proxy delaying the
    database's replies): the settler retries over a new connection, and the retry charges nothing again."""
    from budgets import settler
    from budgets.counters import Hold, Settlement
    from tests.fakes.tcp_blackhole import BlackholeProxy

    settings.GATEWAY_DB_DEADLINE_SECONDS = 0.5
    settings.GATEWAY_ACCOUNTING_RETRY_SECONDS = 15
    row = counter()
    params = loop_pg.connection_params()
    proxy = BlackholeProxy(params.get("host") or "127.0.0.1", int(params.get("port") or 5432)).start()
    proxied: dict = {}

    def proxied_client():
        loop = asyncio.get_running_loop()
        if loop not in proxied:
            proxied[loop] = loop_pg.LoopDatabase(lambda: {**params, "host": "127.0.0.1", "port": proxy.port})
        return proxied[loop]

    monkeypatch.setattr(loop_pg, "database", proxied_client)

    async def scenario():
        now = now_aware()
        reservation, refused = await counter_sql.hold_all_async(
            [(row.id, 10_000, False)], amount=700, request_id="lost-answer", now=now, expires_at=now + timedelta(1)
        )
        assert refused is None
        hold = Hold(reservation_id=reservation, counter_ids=(row.id,), amount_units=700)
        proxy.reply_delay = 1.2  # from now on the database's answers arrive after the deadline
        threading.Timer(1.0, lambda: setattr(proxy, "reply_delay", 0.0)).start()
        started = time.monotonic()
        try:
            await settler._write_batch([Settlement(hold=hold, cost_units=300, is_byok=False)])
            return time.monotonic() - started
        finally:
            for client in proxied.values():  # this loop's (the settler's retries run on it too)
                await client.aclose()

    try:
        took = run(scenario())
    finally:
        proxy.stop()
    assert took >= 0.5  # the first write timed out, at least one retry followed
    row.refresh_from_db()
    assert row.spent_units == 300 and row.reserved_units == 0  # charged once, released once
    assert not SpendReservation.objects.filter(request_id="lost-answer").exists()


def test_a_connection_killed_by_the_server_fails_the_call_in_flight_and_is_replaced():
    async def scenario():
        client = loop_pg.database()
        first_pid = (await client.query("SELECT pg_backend_pid()"))[0][0]
        in_flight = asyncio.ensure_future(client.query("SELECT pg_sleep(30)"))
        await asyncio.sleep(0.2)
        await asyncio.to_thread(terminate, first_pid)
        with pytest.raises(OperationalError):
            await asyncio.wait_for(in_flight, 10)
        second_pid = (await client.query("SELECT pg_backend_pid()"))[0][0]
        return first_pid, second_pid

    first, second = run(scenario())
    assert first != second


def test_an_idle_connection_killed_by_the_server_is_replaced_before_the_next_call():
    async def scenario():
        client = loop_pg.database()
        first_pid = (await client.query("SELECT pg_backend_pid()"))[0][0]
        await asyncio.to_thread(terminate, first_pid)
        await asyncio.sleep(0.3)  # the server closed the socket: noticed before the next statement uses it
        second_pid = (await client.query("SELECT pg_backend_pid()"))[0][0]
        return first_pid, second_pid

    first, second = run(scenario())
    assert first != second


def test_no_answer_within_the_deadline_is_an_operational_error_and_a_new_connection():
    async def scenario():
        client = loop_pg.database()
        await client.query("SELECT 1")  # the connection is open
        first_pid = (await client.query("SELECT pg_backend_pid()"))[0][0]
        slow = asyncio.ensure_future(client.query("SELECT pg_sleep(5)", timeout=0.3))
        await asyncio.sleep(0)  # sent
        queued = asyncio.ensure_future(client.query("SELECT pg_backend_pid()", timeout=3))
        started = time.monotonic()
        with pytest.raises(OperationalError, match="did not answer within 0.3 s"):
            await slow
        waited = time.monotonic() - started
        # Queued behind the stuck one, not sent: it runs on the connection that replaces it.
        queued_pid = (await queued)[0][0]
        after = await client.query("SELECT 2", timeout=3)
        return waited, first_pid, queued_pid, after

    waited, first_pid, queued_pid, value = run(scenario())
    assert waited < 2 and value == [(2,)] and queued_pid != first_pid


def test_a_statement_whose_task_is_cancelled_is_cancelled_in_the_database_without_stalling_the_loop():
    """No shield task per statement: a caller cancelled while its statement runs leaves psycopg's cancellation
    (`cancel_safe`, non-blocking with the libpq psycopg-binary bundles) to stop it; the loop keeps turning and the
    connection serves the next statement."""

    async def scenario():
        client = loop_pg.database()
        first_pid = (await client.query("SELECT pg_backend_pid()"))[0][0]
        slow = asyncio.ensure_future(client.query("SELECT pg_sleep(30)"))
        await asyncio.sleep(0.2)
        ticks = 0

        async def ticking():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.ensure_future(ticking())
        started = time.monotonic()
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        took = time.monotonic() - started
        await asyncio.sleep(0.1)
        ticker.cancel()
        after = await client.query("SELECT pg_backend_pid()")
        return took, ticks, first_pid, after[0][0]

    took, ticks, first_pid, second_pid = run(scenario())
    assert took < 2 and ticks >= 5  # cancelled in the database at once; the loop went on meanwhile
    assert second_pid == first_pid  # the same connection, usable


def test_an_unreachable_database_is_an_operational_error(monkeypatch):
    params = loop_pg.connection_params()

    async def scenario():
        client = loop_pg.LoopDatabase(lambda: {**params, "host": "127.0.0.1", "port": 1, "connect_timeout": 2})
        with pytest.raises(OperationalError):
            await client.query("SELECT 1", timeout=3)
        await client.aclose()

    run(scenario())


def test_a_connection_attempt_that_fails_after_its_caller_gave_up_does_not_fail_the_next_call():
    """A connection attempt whose caller gave up (the attempt is abandoned at the caller's deadline now; with
    psycopg_pool's `AsyncConnectionPool` it went on and failed later, once the database was back) does not fail
    the next call: that one gets a new connection, not the stale failure (a 503 after recovery)."""
    from tests.fakes.tcp_blackhole import BlackholeProxy

    params = loop_pg.connection_params()
    proxy = BlackholeProxy(params.get("host") or "127.0.0.1", int(params.get("port") or 5432)).start()
    try:
        proxy.blackhole()

        async def scenario():
            client = loop_pg.LoopDatabase(
                lambda: {**params, "host": "127.0.0.1", "port": proxy.port, "connect_timeout": 2}
            )
            with pytest.raises(OperationalError, match="did not answer within 0.3 s"):
                await client.query("SELECT 1", timeout=0.3)
            await asyncio.sleep(2.6)  # longer than the attempt could last (connect_timeout 2 s, libpq's least)
            proxy.resume()
            answer = await client.query("SELECT 3", timeout=3)
            await client.aclose()
            return answer

        assert run(scenario()) == [(3,)]
    finally:
        proxy.stop()


def test_the_statement_after_an_outage_gets_a_connection_at_once():
    """A black-holed database for 5 s, statements failing at their deadlines meanwhile, then back: the next
    statement gets a connection attempt of its own, at once, not the pool's next one on its reconnection
    schedule (psycopg_pool's `AsyncConnectionPool` tried 1, 2, 4 ... s apart: this statement waited past its
    deadline). An attempt still in flight when the database comes back (its packets lost, its caller about to
    give up) does not hold it up past that caller's deadline, and nothing is left connected."""
    from tests.fakes.tcp_blackhole import BlackholeProxy

    params = loop_pg.connection_params()
    name = f"outage-{uuid.uuid4().hex[:8]}"
    proxy = BlackholeProxy(params.get("host") or "127.0.0.1", int(params.get("port") or 5432)).start()

    async def scenario():
        client = loop_pg.LoopDatabase(
            lambda: {**params, "host": "127.0.0.1", "port": proxy.port, "connect_timeout": 2, "application_name": name}
        )
        assert await client.query("SELECT 1", timeout=2) == [(1,)]
        proxy.blackhole()
        failed = []
        for _ in range(7):  # 4.9 s: the old pool's attempts at about 0.5, 3.5 and 7.5 s, each stuck for 2 s
            started = time.monotonic()
            with pytest.raises(OperationalError, match="did not answer within 0.5 s"):
                await client.query("SELECT 1", timeout=0.5)
            failed.append(time.monotonic() - started)
            await asyncio.sleep(0.2)
        stuck = asyncio.ensure_future(client.query("SELECT 1", timeout=1))  # its connection attempt goes nowhere
        await asyncio.sleep(0.5)
        proxy.resume()
        resumed = time.monotonic()
        answer = await client.query("SELECT 2", timeout=1.2)
        took = time.monotonic() - resumed
        with pytest.raises(OperationalError):
            await stuck
        await client.aclose()
        return failed, answer, took

    try:
        failed, answer, took = run(scenario())
    finally:
        proxy.stop()
    assert max(failed) < 1.0  # each within its deadline during the outage
    assert answer == [(2,)] and took < 1.0, took  # the stuck attempt is abandoned at its caller's deadline (0.5 s)
    wait_for(lambda: not backends(name))


def test_a_closed_database_runs_nothing_and_opens_no_connection():
    """`close`/`aclose` are for good: a statement sent after them fails at once, whether the database had a
    pool already or not (`close_all` closes a loop's database before its first statement too), and no
    connection is opened."""
    params = loop_pg.connection_params()
    name = f"closed-{uuid.uuid4().hex[:8]}"

    async def scenario():
        used = loop_pg.LoopDatabase(lambda: {**params, "application_name": name})
        assert await used.query("SELECT 1") == [(1,)]
        await used.aclose()
        unused = loop_pg.LoopDatabase(lambda: {**params, "application_name": name})
        unused.close()
        for client in (used, unused):
            with pytest.raises(OperationalError, match="closed"):
                await client.query("SELECT 1", timeout=2)
        return used.connections_open(), unused.connections_open()

    assert run(scenario()) == (0, 0)
    time.sleep(0.2)
    assert not backends(name)


def test_the_process_keeps_one_connection_per_event_loop():
    before = len(backends())
    for _ in range(5):  # five event loops one after the other: each one's connection replaces the last's

        async def scenario():
            client = loop_pg.database()
            await asyncio.gather(*(client.query("SELECT 1") for _ in range(50)))

        run(scenario())
    assert loop_pg.open_connections() <= before + 1
    wait_for(lambda: len(backends()) <= before + 1)
    loop_pg.close_all()
    wait_for(lambda: len(backends()) == 0 or loop_pg.open_connections() == 0)


# Through the data plane (the gateway on a loopback port)


@pytest.fixture
def priced_echo(transactional_db):
    from inference.routing import clear_caches

    clear_caches()
    return add_endpoint("echo/echo-1", "echo", prompt_price="0", completion_price="0.001")


@pytest.fixture
def http(gateway_server, org, priced_echo):
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as client:
        client.headers["Authorization"] = f"Bearer {org.inference_key}"
        yield client
    wait_idle()


def put_budget(org, limit):
    response = org.client().put(
        f"/api/v1/workspaces/{org.workspace.slug}/budgets/daily", {"limit_usd": limit}, format="json"
    )
    assert response.status_code == 200, response.content


def ask(http, **kwargs):
    return http.post("/responses", json={"model": "echo/echo-1", "input": "a b c", "max_output_tokens": 4}, **kwargs)


def workspace_counter(org) -> SpendCounter:
    wait_idle()
    return SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id), interval="daily")


def test_holds_through_the_data_plane_use_the_loop_connection(http, org):
    put_budget(org, 0.012)  # three requests of $0.004
    assert [ask(http).status_code for _ in range(4)] == [200, 200, 200, 402]
    assert backends()  # the server's event loop holds its connection
    counter_row = workspace_counter(org)
    assert counter_row.spent_usd == Decimal("0.012") and counter_row.reserved_units == 0
    assert not SpendReservation.objects.exists()


def test_server_killing_the_connection_of_a_hold_in_flight_is_a_503_then_the_next_request_passes(http, org):
    put_budget(org, 5)
    assert ask(http).status_code == 200  # the counter exists and its id is cached
    counter_row = workspace_counter(org)
    lock = RowLock(counter_row.id)
    try:
        answer: dict = {}
        asking = threading.Thread(target=lambda: answer.setdefault("response", ask(http)))
        asking.start()
        waiting = wait_for(lambda: [b for b in backends() if b[2] == "Lock"])  # the hold waits for the row
        terminate(waiting[0][0])
        asking.join(10)
    finally:
        lock.release()
    response = answer["response"]
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "2"
    assert response.json()["error"]["message"].startswith("Service temporarily unavailable: the database")
    assert ask(http).status_code == 200  # a new connection
    counter_row = workspace_counter(org)
    assert counter_row.reserved_units == 0 and counter_row.spent_usd == Decimal("0.008")


def test_server_killing_the_idle_connection_is_noticed_and_the_next_request_passes(http, org):
    put_budget(org, 5)
    assert ask(http).status_code == 200
    (pid, _, _), *_ = wait_for(backends)
    terminate(pid)
    wait_for(lambda: pid not in [b[0] for b in backends()])  # gone (pg_terminate_backend only signals it)
    time.sleep(0.2)  # its socket closes as the process exits, a moment after it leaves pg_stat_activity
    assert ask(http).status_code == 200
    assert workspace_counter(org).spent_usd == Decimal("0.008")


def test_a_hold_past_the_deadline_is_a_503(http, org, settings):
    put_budget(org, 5)
    assert ask(http).status_code == 200
    counter_row = workspace_counter(org)
    settings.GATEWAY_DB_DEADLINE_SECONDS = 0.5
    lock = RowLock(counter_row.id)
    try:
        started = time.monotonic()
        response = ask(http)
        waited = time.monotonic() - started
    finally:
        lock.release()
    assert response.status_code == 503 and response.headers["Retry-After"] == "2"
    assert waited < 3
    settings.GATEWAY_DB_DEADLINE_SECONDS = 5
    assert ask(http).status_code == 200


def test_a_hold_whose_client_went_away_is_released(http, org):
    put_budget(org, 5)
    assert ask(http).status_code == 200
    counter_row = workspace_counter(org)
    lock = RowLock(counter_row.id)
    try:
        with pytest.raises(httpx.ReadTimeout):
            ask(http, timeout=0.5)  # the client gives up while the hold waits for the row lock
        wait_for(lambda: [b for b in backends() if b[2] == "Lock"])
    finally:
        lock.release()  # the hold completes now, after its client left

    def released():
        wait_idle()
        row = SpendCounter.objects.get(id=counter_row.id)
        return row.reserved_units == 0 and not SpendReservation.objects.exists()

    wait_for(released)
    assert SpendCounter.objects.get(id=counter_row.id).spent_usd == Decimal("0.004")  # the first request only


# The settlement in one statement (migration budgets/0004) against the statement-by-statement one


def settle_scenario(scope: str, settle) -> list[tuple[int, int, int]]:
    """Holds on overlapping counters, one reaped before its settlement, one listed twice, BYOK and not; settled
    by `settle(settlements)`. Returns (reserved, spent, BYOK spent) of the counters."""
    from django.test import override_settings

    from budgets import counters
    from budgets.counters import Settlement
    from inference.pipeline.context import SpendLimit

    def limit(name):
        return SpendLimit(
            scope="api-key", scope_id=f"{scope}-{name}", name=name, limit_usd=Decimal("100"), interval="daily"
        )

    now = now_aware().replace(hour=10)
    a, b, c = limit("a"), limit("b"), limit("c")
    with override_settings(GATEWAY_BUDGET_RESERVATION_TTL=60):
        slow = counters.spend_reserve(limits=[a, b], amount_units=5000, now=now)
        holds = [
            counters.spend_reserve(limits=limits, amount_units=amount, now=now + timedelta(seconds=50))
            for limits, amount in (([a], 700), ([b, c], 900), ([a, b, c], 1100), ([c], 300))
        ]
        assert counters.reservations_reap(now=now + timedelta(seconds=61)) == 1  # `slow` charged its hold
    settle(
        [
            Settlement(hold=slow, cost_units=4000, is_byok=False),
            Settlement(hold=holds[0], cost_units=100, is_byok=False),
            Settlement(hold=holds[1], cost_units=200, is_byok=True),
            Settlement(hold=holds[2], cost_units=0, is_byok=False),
            Settlement(hold=holds[2], cost_units=50, is_byok=True),  # listed twice: released once
            Settlement(hold=holds[0], cost_units=7, is_byok=False),  # again
        ]
    )
    settle([Settlement(hold=holds[3], cost_units=300, is_byok=False)])
    settle([Settlement(hold=holds[3], cost_units=1, is_byok=False)])  # settled already: its cost only
    return [
        tuple(
            SpendCounter.objects.filter(scope_id=f"{scope}-{name}")
            .values_list("reserved_units", "spent_units", "byok_spent_units")
            .get()
        )
        for name in "abc"
    ]


def test_the_one_statement_settlement_matches_the_statement_by_statement_one():
    from budgets import counters

    by_statements = settle_scenario("sync", counters.spend_settle_many)
    one_statement = settle_scenario("async", lambda settlements: run(counters.spend_settle_many_async(settlements)))
    assert one_statement == by_statements
    assert by_statements == [(0, 4000 + 107, 50), (0, 4000, 250), (0, 301, 250)]
    assert not SpendReservation.objects.exists()


def test_many_concurrent_settlements_through_the_data_plane_are_exact(http, org):
    put_budget(org, 5)

    def one():
        return ask(http).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: one(), range(40)))
    assert codes == [200] * 40
    row = workspace_counter(org)
    assert row.reserved_units == 0 and row.spent_usd == Decimal("0.160")
    assert not SpendReservation.objects.exists()
