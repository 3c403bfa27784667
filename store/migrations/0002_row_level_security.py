"""Row-level security and the tenant policy on the store's table (``tenants.rls``), as on every
tenant-owned table; backwards, only this table's are removed."""

from typing import Any

from django.db import migrations

from tenants import rls

TABLE = "store_items"


def enable(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for statement in rls.enable_sql(TABLE, schema_editor.quote_name):
            schema_editor.execute(statement)


def disable(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for statement in rls.disable_sql(TABLE, schema_editor.quote_name):
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("store", "0001_initial"),
        ("tenants", "0002_row_level_security"),
    ]

    operations = [migrations.RunPython(enable, disable, elidable=False)]
