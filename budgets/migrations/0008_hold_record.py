"""The hold carries what its request's Generation row needs if its process dies (`record`), written by the hold's
own statement: `budgets_spend_hold_v3` is `budgets_spend_hold_v2` (migration 0006) with one more argument, the
record, inserted with the reservation row (no other statement, no other round trip). v2 stays for processes of
the previous release during a rolling deploy (their holds have an empty record: the reaper still charges them,
with a Generation row naming what the record lacks as unknown). No-op function on other databases.
"""

from django.db import migrations, models

CREATE = """
CREATE OR REPLACE FUNCTION budgets_spend_hold_v3(
    ids bigint[], limits bigint[], byok boolean[], amount bigint,
    reservation uuid, request text, counter_ids jsonb, created timestamptz, expires timestamptz, record jsonb
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
    INSERT INTO budgets_spendreservation (id, request_id, amount_units, counter_ids, created_at, expires_at, record)
    VALUES (reservation, request, amount, counter_ids, created, expires, record);
    RETURN NULL;
END
$$;
"""
DROP = (
    "DROP FUNCTION IF EXISTS budgets_spend_hold_v3(bigint[], bigint[], boolean[], bigint, uuid, text, jsonb, "
    "timestamptz, timestamptz, jsonb);"
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("budgets", "0007_admin_labels"),
    ]

    operations = [
        migrations.AddField(
            model_name="spendreservation",
            name="record",
            field=models.JSONField(
                blank=True,
                null=True,
                default=dict,
                help_text=(
                    "What the request's Generation row needs if its process dies: written by the hold's own statement"
                ),
            ),
        ),
        migrations.RunPython(create, drop, elidable=False),
    ]
