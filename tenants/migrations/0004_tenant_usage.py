"""Tenants' usage per UTC day, under row-level security like every tenant-owned table."""

import django.db.models.deletion
from django.db import migrations, models

from tenants import rls


def enable(apps, schema_editor):  # noqa: ANN001, ANN201
    if schema_editor.connection.vendor == "postgresql":
        for statement in rls.enable_sql("tenant_usage", schema_editor.quote_name):
            schema_editor.execute(statement)


def disable(apps, schema_editor):  # noqa: ANN001, ANN201
    if schema_editor.connection.vendor == "postgresql":
        for statement in rls.disable_sql("tenant_usage", schema_editor.quote_name):
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("tenants", "0003_provider_credential")]

    operations = [
        migrations.CreateModel(
            name="TenantUsage",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("messages", models.PositiveBigIntegerField(default=0)),
                ("searches", models.PositiveBigIntegerField(default=0)),
                ("chat_runs", models.PositiveBigIntegerField(default=0)),
                ("model_tokens", models.PositiveBigIntegerField(default=0)),
                ("storage_bytes", models.PositiveBigIntegerField(default=0)),
                ("rolled_up_at", models.DateTimeField(blank=True, null=True)),
                (
                    "tenant",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenants.tenant"
                    ),
                ),
            ],
            options={"db_table": "tenant_usage", "verbose_name_plural": "tenant usage"},
        ),
        migrations.AddConstraint(
            model_name="tenantusage",
            constraint=models.UniqueConstraint(fields=("tenant", "day"), name="tenant_usage_per_day"),
        ),
        migrations.RunPython(enable, disable, elidable=False),
    ]
