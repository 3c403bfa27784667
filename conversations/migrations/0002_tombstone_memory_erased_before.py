from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="tombstone",
            name="memory_erased_before",
            field=models.BigIntegerField(default=0),
        ),
        # Tombstones written before this field were whole erases: they drop older memory saves too.
        migrations.RunSQL(
            "UPDATE conversations_tombstone SET memory_erased_before = erased_before_seq",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
