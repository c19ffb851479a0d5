"""The budget hold as one PostgreSQL function call (budgets/counter_sql.py, `hold_all`): one statement and one
round trip per hold, its plans cached by the database session. No-op on other databases.

The function locks the counter rows in ascending id order (FOR UPDATE: the same order as every other counter
write, so no deadlock), checks every limit against the locked (latest) row, and only when all of them can take
`amount` adds it to reserved_units of each and inserts the reservation row; otherwise it changes nothing and
returns the id of the first counter (by id) that refused, or whose row is gone. It makes its transaction commit
without waiting for the WAL flush (budgets/counter_sql.py, `fast_commit`). A changed signature or behaviour
goes in a new function name (`_v2`) with its own migration.
"""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION budgets_spend_hold_v1(
    ids bigint[], limits bigint[], byok boolean[], amount bigint,
    reservation uuid, request text, counter_ids jsonb, created timestamptz, expires timestamptz
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    used bigint;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM 1 FROM budgets_spendcounter WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
    FOR i IN 1 .. cardinality(ids) LOOP
        SELECT spent_units + reserved_units + CASE WHEN byok[i] THEN byok_spent_units ELSE 0 END INTO used
        FROM budgets_spendcounter WHERE id = ids[i];
        IF used IS NULL OR used + amount > limits[i] OR (amount = 0 AND used >= limits[i]) THEN
            RETURN ids[i];
        END IF;
    END LOOP;
    UPDATE budgets_spendcounter SET reserved_units = reserved_units + amount WHERE id = ANY(ids);
    INSERT INTO budgets_spendreservation (id, request_id, amount_units, counter_ids, created_at, expires_at)
    VALUES (reservation, request, amount, counter_ids, created, expires);
    RETURN NULL;
END
$$;
"""
DROP = "DROP FUNCTION IF EXISTS budgets_spend_hold_v1(bigint[], bigint[], boolean[], bigint, uuid, text, jsonb, timestamptz, timestamptz);"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("budgets", "0002_reaped_reservations"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
