"""Tenants' credentials for chat model providers, under row-level security like every tenant-owned table."""

import django.db.models.deletion
from django.db import migrations, models

from tenants import rls


class Migration(migrations.Migration):
    dependencies = [("tenants", "0002_row_level_security")]

    operations = [
        migrations.CreateModel(
            name="ProviderCredential",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("provider", models.CharField(help_text="The provider of MEMORY_CHAT_MODEL, e.g. openai.", max_length=50)),
                ("encrypted_secret", models.TextField(editable=False)),
                ("hint", models.CharField(editable=False, max_length=8)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "tenant",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="credentials",
                        to="tenants.tenant",
                    ),
                ),
            ],
            options={"db_table": "tenant_provider_credentials"},
        ),
        migrations.AddConstraint(
            model_name="providercredential",
            constraint=models.UniqueConstraint(fields=("tenant", "provider"), name="provider_credential_unique"),
        ),
        migrations.RunPython(rls.enable, rls.disable, elidable=False),
    ]
