"""The budget hold as one PostgreSQL function call (budgets/counter_sql.py, `hold_all`): one statement and one
round trip per hold, its plans cached by the database session. No-op on other databases.

The function locks the counter rows in ascending id order (FOR UPDATE: the same order as every other counter
write, so no deadlock), checks every limit against the locked (latest) row, and only when all of them can take
`amount` adds it to reserved_units of each and inserts the reservation row; otherwise it changes nothing and
returns the id of the first counter (by id) that refused, or whose row is gone. It makes its transaction commit
without waiting for the WAL flush (budgets/counter_sql.py, `fast_commit`). A changed signature or behaviour
goes in a new function name (`_v2`) with its own migration.

Its statement: budgets/sql/budgets_spend_hold_v1.sql (budgets/db_functions.py).
"""

from django.db import migrations

from budgets.db_functions import function_operation



class Migration(migrations.Migration):
    dependencies = [
        ("budgets", "0002_reaped_reservations"),
    ]

    operations = [function_operation("budgets_spend_hold_v1")]
