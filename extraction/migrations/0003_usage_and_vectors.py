"""Memories' vectors, and the extractor's daily usage (with row-level security, as every tenant-owned table)."""

import django.db.models.deletion
from django.db import migrations, models

from tenants import rls


def enable(apps, schema_editor):  # noqa: ANN001, ANN201
    if schema_editor.connection.vendor == "postgresql":
        for statement in rls.enable_sql("extraction_usage", schema_editor.quote_name):
            schema_editor.execute(statement)


def disable(apps, schema_editor):  # noqa: ANN001, ANN201
    if schema_editor.connection.vendor == "postgresql":
        for statement in rls.disable_sql("extraction_usage", schema_editor.quote_name):
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("extraction", "0002_row_level_security"),
        ("tenants", "0003_provider_credential"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="embedding",
            field=models.BinaryField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="memory",
            name="embedding_model",
            field=models.CharField(blank=True, default="", editable=False, max_length=200),
        ),
        migrations.CreateModel(
            name="ExtractionUsage",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("calls", models.PositiveIntegerField(default=0)),
                ("tokens", models.PositiveBigIntegerField(default=0)),
                ("turns_read", models.PositiveIntegerField(default=0)),
                ("skipped_reads", models.PositiveIntegerField(default=0)),
                ("skipped_turns", models.PositiveIntegerField(default=0)),
                ("failed_calls", models.PositiveIntegerField(default=0)),
                ("dead_letters", models.PositiveIntegerField(default=0)),
                (
                    "tenant",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenants.tenant"
                    ),
                ),
            ],
            options={
                "db_table": "extraction_usage",
                "constraints": [models.UniqueConstraint(fields=("tenant", "day"), name="extraction_usage_per_day")],
            },
        ),
        migrations.RunPython(enable, disable, elidable=False),
    ]
