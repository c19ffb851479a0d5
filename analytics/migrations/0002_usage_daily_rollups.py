"""The daily rollup tier (analytics.UsageDailyRollup), filled from the hourly rows already kept."""

import datetime

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Sum
from django.db.models.functions import TruncDay

SUMS = ("requests", "errors", "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "cost")
BINS = tuple(f"latency_{i:02d}" for i in range(26))


def fill_daily(apps, schema_editor):
    """Every day that has hourly rows gets its daily rows: the sums of its hourly rows."""
    hourly = apps.get_model("analytics", "UsageRollup")
    daily = apps.get_model("analytics", "UsageDailyRollup")
    grouped = (
        hourly.objects.values("organization_id", "dimension", "value", day=TruncDay("bucket", tzinfo=datetime.UTC))
        .annotate(**{f"sum_{name}": Sum(name) for name in SUMS + BINS})
        .order_by()
    )
    batch = []
    for item in grouped.iterator(chunk_size=5000):
        batch.append(
            daily(
                organization_id=item["organization_id"],
                bucket=item["day"],
                dimension=item["dimension"],
                value=item["value"],
                **{name: item[f"sum_{name}"] for name in SUMS + BINS},
            )
        )
        if len(batch) == 2000:
            daily.objects.bulk_create(batch)
            batch = []
    daily.objects.bulk_create(batch)


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0003_workspace_sdk_settings'),
        ('analytics', '0001_usage_rollups'),
    ]

    operations = [
        migrations.CreateModel(
            name='UsageDailyRollup',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('bucket', models.DateTimeField(help_text='Start of the UTC day')),
                ('dimension', models.CharField(choices=[('model', 'Model that served'), ('provider', 'Provider that served'), ('key', 'API key (hash)'), ('workspace', 'Workspace (id)'), ('user', 'User (id)'), ('status', 'Status of the generation')], max_length=16)),
                ('value', models.CharField(blank=True, default='', max_length=200)),
                ('requests', models.PositiveBigIntegerField(default=0)),
                ('errors', models.PositiveBigIntegerField(default=0)),
                ('prompt_tokens', models.PositiveBigIntegerField(default=0)),
                ('completion_tokens', models.PositiveBigIntegerField(default=0)),
                ('reasoning_tokens', models.PositiveBigIntegerField(default=0)),
                ('cached_tokens', models.PositiveBigIntegerField(default=0)),
                ('cost', models.DecimalField(decimal_places=10, default=0, max_digits=24)),
                ('latency_00', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [0, 10) ms')),
                ('latency_01', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [10, 25) ms')),
                ('latency_02', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [25, 50) ms')),
                ('latency_03', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [50, 75) ms')),
                ('latency_04', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [75, 100) ms')),
                ('latency_05', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [100, 150) ms')),
                ('latency_06', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [150, 200) ms')),
                ('latency_07', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [200, 300) ms')),
                ('latency_08', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [300, 400) ms')),
                ('latency_09', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [400, 500) ms')),
                ('latency_10', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [500, 750) ms')),
                ('latency_11', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [750, 1000) ms')),
                ('latency_12', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [1000, 1500) ms')),
                ('latency_13', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [1500, 2000) ms')),
                ('latency_14', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [2000, 3000) ms')),
                ('latency_15', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [3000, 4000) ms')),
                ('latency_16', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [4000, 5000) ms')),
                ('latency_17', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [5000, 7500) ms')),
                ('latency_18', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [7500, 10000) ms')),
                ('latency_19', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [10000, 15000) ms')),
                ('latency_20', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [15000, 20000) ms')),
                ('latency_21', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [20000, 30000) ms')),
                ('latency_22', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [30000, 60000) ms')),
                ('latency_23', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [60000, 120000) ms')),
                ('latency_24', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [120000, 300000) ms')),
                ('latency_25', models.PositiveBigIntegerField(default=0, help_text='Generations with latency in [300000, ∞) ms')),
                ('organization', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.organization')),
            ],
            options={
                'ordering': ['-bucket', 'dimension', 'value'],
                'abstract': False,
            },
        ),
        migrations.AddConstraint(
            model_name='usagedailyrollup',
            constraint=models.UniqueConstraint(fields=('organization', 'dimension', 'bucket', 'value'), name='usage_daily_rollup_unique_bucket'),
        ),
        migrations.RunPython(fill_daily, migrations.RunPython.noop),
    ]
