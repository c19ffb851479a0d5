"""Settlements applied once: the `AppliedSettlement` table and `budgets_spend_settle_v2`.

`budgets_spend_settle_v2(settlement_ids, reservations, amounts, costs, byok, owners, counters, created)` is
`budgets_spend_settle_v1` (migration 0004) for the settlements whose id it could insert into
`budgets_appliedsettlement` (`ON CONFLICT DO NOTHING`): a settlement applied already, by a call whose commit
succeeded but whose answer never reached the gateway (a deadline, a dropped connection), is skipped, so the
retry charges nothing twice. Returns how many reservation rows it removed. v1 stays for processes of the
previous release during a rolling deploy. No-op on other databases (`counters.spend_settle_many` claims the
ids with its own INSERT).

Its statement: budgets/sql/budgets_spend_settle_v2.sql (budgets/db_functions.py).
"""

from django.db import migrations, models

from budgets.db_functions import function_operation

# Rows arrive in time order and are deleted by age: a BRIN index serves the pruning at almost no cost per insert.
BRIN = "CREATE INDEX budgets_appliedsettlement_created_brin ON budgets_appliedsettlement USING brin (created_at);"
DROP_BRIN = "DROP INDEX IF EXISTS budgets_appliedsettlement_created_brin;"


def create_brin(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BRIN)


def drop_brin(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_BRIN)


class Migration(migrations.Migration):
    dependencies = [
        ("budgets", "0004_spend_settle_function"),
    ]

    operations = [
        migrations.CreateModel(
            name="AppliedSettlement",
            fields=[
                ("id", models.UUIDField(editable=False, primary_key=True, serialize=False)),
                ("created_at", models.DateTimeField()),
            ],
        ),
        migrations.RunPython(create_brin, drop_brin, elidable=False),
        function_operation("budgets_spend_settle_v2"),
    ]
