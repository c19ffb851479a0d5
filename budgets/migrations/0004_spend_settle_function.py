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

Its statement: budgets/sql/budgets_spend_settle_v1.sql (budgets/db_functions.py).
"""

from django.db import migrations

from budgets.db_functions import function_operation



class Migration(migrations.Migration):
    dependencies = [
        ("budgets", "0003_spend_hold_function"),
    ]

    operations = [function_operation("budgets_spend_settle_v1")]
