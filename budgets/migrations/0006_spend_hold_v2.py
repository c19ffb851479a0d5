"""`budgets_spend_hold_v2`: the budget hold as one conditional UPDATE per counter, without locking first.

Same arguments, result and effect as `budgets_spend_hold_v1` (migration 0003), which stays for processes of the
previous release during a rolling deploy. v1 locks the counter rows (`SELECT ... FOR UPDATE` in id order),
reads each, then updates them all: every counter row is written twice (the lock, then the new version). v2
walks the counters in the order given (ascending ids: budgets/counter_sql.py sorts them, the order every
counter write uses, so no deadlock) with one `UPDATE ... WHERE id = ... AND <the limit can take amount>` each:
PostgreSQL re-evaluates the condition on the latest row version after waiting for a concurrent writer's lock,
so the check and the increment are one atomic step, as on SQLite (`counter_sql.hold_statement`). When a
counter refuses (or its row is gone), the counters held before it in this call are given the amount back in the
same transaction, whose row locks it still holds: no other transaction ever sees the intermediate state, and
nothing changes. Measured with pgbench, two counters: 87-93 us per call against 122-146 us for v1 and 60 us for
an empty function (docs/performance.md). No-op on other databases.
"""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION budgets_spend_hold_v2(
    ids bigint[], limits bigint[], byok boolean[], amount bigint,
    reservation uuid, request text, counter_ids jsonb, created timestamptz, expires timestamptz
) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    FOR i IN 1 .. cardinality(ids) LOOP
        UPDATE budgets_spendcounter SET reserved_units = reserved_units + amount
        WHERE id = ids[i]
          AND spent_units + reserved_units + CASE WHEN byok[i] THEN byok_spent_units ELSE 0 END + amount <= limits[i]
          AND (amount > 0 OR spent_units + reserved_units + CASE WHEN byok[i] THEN byok_spent_units ELSE 0 END
               < limits[i]);
        IF NOT FOUND THEN
            IF i > 1 THEN
                UPDATE budgets_spendcounter SET reserved_units = reserved_units - amount WHERE id = ANY(ids[1:i - 1]);
            END IF;
            RETURN ids[i];
        END IF;
    END LOOP;
    INSERT INTO budgets_spendreservation (id, request_id, amount_units, counter_ids, created_at, expires_at)
    VALUES (reservation, request, amount, counter_ids, created, expires);
    RETURN NULL;
END
$$;
"""
DROP = "DROP FUNCTION IF EXISTS budgets_spend_hold_v2(bigint[], bigint[], boolean[], bigint, uuid, text, jsonb, timestamptz, timestamptz);"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("budgets", "0005_applied_settlements"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
