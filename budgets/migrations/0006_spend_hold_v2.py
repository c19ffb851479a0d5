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

Its statement: budgets/sql/budgets_spend_hold_v2.sql (budgets/db_functions.py).
"""

from django.db import migrations

from budgets.db_functions import function_operation



class Migration(migrations.Migration):
    dependencies = [
        ("budgets", "0005_applied_settlements"),
    ]

    operations = [function_operation("budgets_spend_hold_v2")]
