# Management commands as a source, and purges (of the response cache) as an action.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='auditevent',
            name='action',
            field=models.CharField(choices=[('create', 'Created'), ('update', 'Updated'), ('delete', 'Deleted'), ('refuse', 'Refused a request'), ('purge', 'Purged')], max_length=16),
        ),
        migrations.AlterField(
            model_name='auditevent',
            name='source',
            field=models.CharField(choices=[('api', 'Management API'), ('admin', 'Django admin'), ('scim', 'SCIM'), ('data_plane', 'Data plane'), ('command', 'Management command')], max_length=16),
        ),
    ]
