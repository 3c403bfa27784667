"""Row-level security and the tenant policy on the extraction's tables (``tenants.rls``), as on every
tenant-owned table; backwards, only these tables' are removed."""

from typing import Any

from django.db import migrations

from tenants import rls

TABLES = ("extracted_memories", "extracted_memory_changes", "extraction_watermarks")


def enable(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for table in TABLES:
            for statement in rls.enable_sql(table, schema_editor.quote_name):
                schema_editor.execute(statement)


def disable(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for table in TABLES:
            for statement in rls.disable_sql(table, schema_editor.quote_name):
                schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("extraction", "0001_initial"),
        ("tenants", "0002_row_level_security"),
    ]

    operations = [migrations.RunPython(enable, disable, elidable=False)]
