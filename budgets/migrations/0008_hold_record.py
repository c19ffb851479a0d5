"""The hold carries what its request's Generation row needs if its process dies (`record`), written by the hold's
own statement: `budgets_spend_hold_v3` is `budgets_spend_hold_v2` (migration 0006) with one more argument, the
record, inserted with the reservation row (no other statement, no other round trip). v2 stays for processes of
the previous release during a rolling deploy (their holds have an empty record: the reaper still charges them,
with a Generation row naming what the record lacks as unknown). No-op function on other databases.

Its statement: budgets/sql/budgets_spend_hold_v3.sql (budgets/db_functions.py).
"""

from django.db import migrations, models

from budgets.db_functions import function_operation



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
        function_operation("budgets_spend_hold_v3"),
    ]
