"""The settlement of a batch of holds as one PostgreSQL function call (budgets/counter_sql.py, `settle_all_async`):
one statement and one round trip per batch instead of BEGIN, a DELETE, one UPDATE per counter and COMMIT. No-op on
other databases (where `counters.spend_settle_many` runs the statements one by one).

Settlement i is (reservations[i], amounts[i], costs[i], byok[i]); its counters are the `counters[j]` whose
`owners[j]` is i (1-based). The function does what `counters.spend_settle_many` does:

- deletes the reservation rows; the first listing of a reservation this call deleted releases its hold
  (`reserved_units - amount`), or, when the reaper had charged the expired hold as spent, takes that charge back
  (`spent_units - amount`); a reservation already settled (not deleted here) or listed again releases nothing;
- adds each settlement's cost to `spent_units`, or to `byok_spent_units` when a BYOK key paid;
- locks the counter rows in ascending id order (FOR UPDATE, like every other counter write: no deadlock), then
  updates each once with its totals (rows whose totals are all zero are left alone).

It makes its transaction commit without waiting for the WAL flush, like the hold (budgets/counter_sql.py,
`fast_commit`). A changed signature or behaviour goes in a new function name (`_v2`) with its own migration.
"""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION budgets_spend_settle_v1(
    reservations uuid[], amounts bigint[], costs bigint[], byok boolean[], owners integer[], counters bigint[]
) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    gone uuid[];
    gone_reaped boolean[];
    ids bigint[];
    releases bigint[];
    spents bigint[];
    byok_spents bigint[];
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    WITH deleted AS (
        DELETE FROM budgets_spendreservation WHERE id = ANY(reservations)
        RETURNING id, reaped_at IS NOT NULL AS reaped
    )
    SELECT array_agg(id), array_agg(reaped) INTO gone, gone_reaped FROM deleted;
    WITH settlement AS (
        SELECT i, r, a, c, b, row_number() OVER (PARTITION BY r ORDER BY i) AS nth
        FROM unnest(reservations, amounts, costs, byok) WITH ORDINALITY AS s(r, a, c, b, i)
    ), removed AS (
        SELECT * FROM unnest(coalesce(gone, '{}'), coalesce(gone_reaped, '{}')) AS d(id, reaped)
    ), each_one AS (
        SELECT settlement.i,
               CASE WHEN settlement.nth = 1 AND removed.reaped = false THEN settlement.a ELSE 0 END AS release,
               CASE WHEN settlement.nth = 1 AND removed.reaped THEN settlement.a ELSE 0 END AS uncharge,
               settlement.c AS cost,
               settlement.b AS paid_byok
        FROM settlement LEFT JOIN removed ON removed.id = settlement.r
    ), totals AS (
        SELECT k.counter_id,
               sum(each_one.release)::bigint AS release,
               sum(CASE WHEN each_one.paid_byok THEN 0 ELSE each_one.cost END - each_one.uncharge)::bigint AS spent,
               sum(CASE WHEN each_one.paid_byok THEN each_one.cost ELSE 0 END)::bigint AS byok_spent
        FROM unnest(owners, counters) AS k(owner, counter_id) JOIN each_one ON each_one.i = k.owner
        GROUP BY k.counter_id
    )
    SELECT array_agg(counter_id ORDER BY counter_id), array_agg(release ORDER BY counter_id),
           array_agg(spent ORDER BY counter_id), array_agg(byok_spent ORDER BY counter_id)
    INTO ids, releases, spents, byok_spents
    FROM totals WHERE release <> 0 OR spent <> 0 OR byok_spent <> 0;
    IF ids IS NULL THEN
        RETURN coalesce(cardinality(gone), 0);
    END IF;
    PERFORM 1 FROM budgets_spendcounter WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
    UPDATE budgets_spendcounter AS counter
    SET reserved_units = counter.reserved_units - t.release,
        spent_units = counter.spent_units + t.spent,
        byok_spent_units = counter.byok_spent_units + t.byok_spent
    FROM unnest(ids, releases, spents, byok_spents) AS t(id, release, spent, byok_spent)
    WHERE counter.id = t.id;
    RETURN coalesce(cardinality(gone), 0);
END
$$;
"""
DROP = "DROP FUNCTION IF EXISTS budgets_spend_settle_v1(uuid[], bigint[], bigint[], boolean[], integer[], bigint[]);"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("budgets", "0003_spend_hold_function"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
