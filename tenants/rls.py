"""PostgreSQL row-level security on every tenant-owned table: a second wall beneath ``TenantManager``.

Contract
--------
* Every table with a ``tenant`` foreign key (``tenant_owned_tables``), and each partition of one that
  is partitioned, has row-level security enabled and one policy, ``tenant_isolation``: a row is visible, and may be written, only when its
  ``tenant_id`` equals the session's ``app.tenant_id`` setting. Without the setting (or with it
  empty, as it is after a ``SET LOCAL`` ended) no row at all: fail closed.
* The policy binds every role that is neither a superuser, nor ``BYPASSRLS``, nor the table's owner.
  The application connects as the owner of its tables (it runs their migrations) or as a superuser,
  so it is unchanged: ``TenantManager`` scopes its queries, and its cross-tenant maintenance (the
  admin of superusers, sweepers, retention) keeps working. Any other role, a reporting or support
  login, a replica reader, sees one tenant at a time, the one it names with ``tenant_scope_sql``.
* Row-level security is not forced (``FORCE ROW LEVEL SECURITY``): forcing it would bind the owner
  too, and the application, which never sets ``app.tenant_id``, would see no row where it does not
  connect as a superuser (a managed PostgreSQL's administrator role usually is not one).
* A process that connects as a role without ``BYPASSRLS`` that does not own the tables must name its
  tenant on each connection or transaction, or it sees nothing.

``enable`` and ``disable`` are the migration's forward and backward steps; they read the models of
the migration state, so the tables are those existing at that point of the migration history. A
tenant-owned table added later needs a migration that runs ``enable`` again (it is idempotent), and
``tests/security/test_rls.py`` fails until it has one.
"""

from typing import Any

SETTING = "app.tenant_id"
POLICY = "tenant_isolation"
# NULLIF: once a session has seen the setting, an unset value reads as "" (not NULL), which must mean
# "no tenant" rather than an error casting "" to bigint.
CONDITION = f"tenant_id = NULLIF(current_setting('{SETTING}', true), '')::bigint"


def tenant_owned_tables(apps: Any) -> list[str]:
    """The tables of every model with a ``tenant`` foreign key to ``tenants.Tenant``."""
    tenant_model = apps.get_model("tenants", "Tenant")
    tables = set()
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if field.name == "tenant" and field.is_relation and field.related_model is tenant_model:
                tables.add(model._meta.db_table)
    return sorted(tables)


def enable_sql(table: str, quote: Any) -> list[str]:
    name = quote(table)
    return [
        f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {POLICY} ON {name}",
        f"CREATE POLICY {POLICY} ON {name} USING ({CONDITION}) WITH CHECK ({CONDITION})",
    ]


def disable_sql(table: str, quote: Any) -> list[str]:
    name = quote(table)
    return [f"DROP POLICY IF EXISTS {POLICY} ON {name}", f"ALTER TABLE {name} DISABLE ROW LEVEL SECURITY"]


def with_partitions(schema_editor: Any, tables: list[str]) -> list[str]:
    """The tables and the partitions of those that are partitioned: a partition read directly (a role
    granted every table may) answers by its own policy, not its parent's."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent::regclass::text = ANY(%s) ORDER BY c.relname",
            [tables],
        )
        return [*tables, *(name for (name,) in cursor.fetchall())]


def enable(apps: Any, schema_editor: Any) -> None:
    """Migration step: row-level security and the tenant policy on every tenant-owned table (and partition)."""
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in with_partitions(schema_editor, tenant_owned_tables(apps)):
        for statement in enable_sql(table, schema_editor.quote_name):
            schema_editor.execute(statement)


def disable(apps: Any, schema_editor: Any) -> None:
    """Migration step back: no policy, no row-level security."""
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in with_partitions(schema_editor, tenant_owned_tables(apps)):
        for statement in disable_sql(table, schema_editor.quote_name):
            schema_editor.execute(statement)


def tenant_scope_sql(tenant_id: int, *, local: bool = True) -> tuple[str, list[str]]:
    """SQL and parameters that name the tenant a connection bound by the policy may see: for the
    current transaction only (``local``), or for the rest of the session."""
    return "SELECT set_config(%s, %s, %s)", [SETTING, str(int(tenant_id)), "true" if local else "false"]
