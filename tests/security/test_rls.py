"""PostgreSQL row-level security (``tenants.rls``), proved from outside the application.

The application connects as a superuser here, which row-level security never binds; so the tests
create a login role without ``SUPERUSER`` or ``BYPASSRLS`` in the test database, grant it the
tables, and open a separate connection as that role. Without ``app.tenant_id`` it sees no row of
any tenant-owned table; with it, exactly its tenant's rows, and it cannot write a row of another
tenant. Both tenants' whole worlds (``test_isolation_api.tenant_world``) are committed first, so
the other connection sees them (hence ``transaction=True``). The role is dropped afterwards: roles
belong to the whole PostgreSQL cluster, so its name carries the test database's.
"""

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.apps import apps
from django.db import connection

from conversations.models import Conversation
from tenants import rls
from tests.security.test_isolation_api import tenant_world


def probe_role_name() -> str:
    return f"rls_probe_{connection.settings_dict['NAME']}"[:63]


@pytest.fixture
def probe(transactional_db: Any) -> Iterator[psycopg.Connection]:
    """A connection as a fresh login role without SUPERUSER or BYPASSRLS, granted every table."""
    role = connection.ops.quote_name(probe_role_name())
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE")
        cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
        cursor.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    settings = connection.settings_dict
    probe = psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        dbname=settings["NAME"],
        user=probe_role_name(),
        autocommit=True,
    )
    try:
        yield probe
    finally:
        probe.close()
        with connection.cursor() as cursor:
            cursor.execute(f"DROP OWNED BY {role}")  # its grants in this database
            cursor.execute(f"DROP ROLE {role}")


def tables() -> list[str]:
    return rls.tenant_owned_tables(apps)


def rows_by_tenant(table: str) -> dict[int, int]:
    """What the application (a superuser) counts in a table, per tenant."""
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT tenant_id, count(*) FROM "{table}" GROUP BY tenant_id')  # noqa: S608 - a table name from the models
        return dict(cursor.fetchall())


def seen(probe: psycopg.Connection, table: str) -> dict[int, int]:
    """What the probe role counts in a table, per tenant."""
    return dict(probe.execute(f'SELECT tenant_id, count(*) FROM "{table}" GROUP BY tenant_id').fetchall())  # noqa: S608


def name_tenant(probe: psycopg.Connection, tenant_id: int) -> None:
    sql, parameters = rls.tenant_scope_sql(tenant_id, local=False)
    probe.execute(sql, parameters)


# --- The catalogue ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_table_with_a_tenant_has_row_level_security_and_the_tenant_policy():
    """Found from the catalogue (every table with a tenant_id column, each partition of a partitioned
    one included), so a table added later without the policy fails here with its name."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, p.qual, p.with_check FROM pg_class c "
            "JOIN information_schema.columns t ON t.table_name = c.relname AND t.table_schema = 'public' "
            "AND t.column_name = 'tenant_id' "
            "LEFT JOIN pg_policies p ON p.tablename = c.relname AND p.schemaname = 'public' AND p.policyname = %s "
            "WHERE c.relkind IN ('r', 'p') AND c.relnamespace = 'public'::regnamespace",  # tables, partitioned ones
            [rls.POLICY],
        )
        found = {name: (enabled, forced, qual, check) for name, enabled, forced, qual, check in cursor.fetchall()}

    unprotected = sorted(name for name, (enabled, _, qual, _) in found.items() if not enabled or qual is None)
    forced = sorted(name for name, (_, is_forced, _, _) in found.items() if is_forced)
    other_rule = sorted(
        name for name, (_, _, qual, check) in found.items() if qual and (qual != check or rls.SETTING not in qual)
    )
    assert set(tables()) <= set(found)
    assert not unprotected, (
        f"Tables with a tenant_id but no {rls.POLICY} policy (add a migration running rls.enable): {unprotected}"
    )
    # Forcing it would bind the application too, which owns the tables and never names a tenant.
    assert not forced, f"Tables with forced row-level security: {forced}"
    assert not other_rule, f"Tables whose {rls.POLICY} policy is not the tenant rule: {other_rule}"


# --- A role bound by the policy ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_role_without_bypassrls_sees_nothing_without_a_tenant_and_only_its_tenants_rows_with_one(tenant, other_tenant, probe):
    tenant_world(tenant, number=1180)
    tenant_world(other_tenant, number=4821)
    totals = {table: rows_by_tenant(table) for table in tables()}
    assert all({tenant.pk, other_tenant.pk} <= set(counts) for counts in totals.values()), totals

    without_tenant = {table: seen(probe, table) for table in tables()}
    name_tenant(probe, tenant.pk)
    as_acme = {table: seen(probe, table) for table in tables()}
    name_tenant(probe, other_tenant.pk)
    as_globex = {table: seen(probe, table) for table in tables()}

    assert without_tenant == {table: {} for table in tables()}
    assert as_acme == {table: {tenant.pk: counts[tenant.pk]} for table, counts in totals.items()}
    assert as_globex == {table: {other_tenant.pk: counts[other_tenant.pk]} for table, counts in totals.items()}
    # The application itself is not bound: it still sees every tenant.
    assert set(Conversation.unscoped.values_list("tenant_id", flat=True)) == {tenant.pk, other_tenant.pk}


@pytest.mark.django_db(transaction=True)
def test_a_role_without_bypassrls_cannot_write_another_tenants_rows_and_a_transaction_tenant_ends_with_it(
    tenant, other_tenant, probe
):
    tenant_world(tenant, number=1180)
    globex = tenant_world(other_tenant, number=4821)
    globex_facts = rows_by_tenant("user_facts")[other_tenant.pk]
    name_tenant(probe, tenant.pk)

    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        probe.execute(
            "INSERT INTO user_facts (tenant_id, user_id, key, value, token_count, created_at, updated_at) "
            "VALUES (%s, 'intruder', 'k', 'v', 1, now(), now())",
            [other_tenant.pk],
        )
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        probe.execute("UPDATE user_facts SET tenant_id = %s", [other_tenant.pk])
    updated = probe.execute("UPDATE user_facts SET value = 'changed' WHERE user_id = %s", [globex.user_id]).rowcount
    deleted = probe.execute("DELETE FROM conversation_messages WHERE tenant_id = %s", [other_tenant.pk]).rowcount

    assert (updated, deleted) == (0, 0)
    assert rows_by_tenant("user_facts")[other_tenant.pk] == globex_facts
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM user_facts WHERE value = 'changed'")
        assert cursor.fetchone()[0] == 0

    # A tenant named for one transaction is gone after it: no row, and no error either.
    probe.execute("RESET app.tenant_id")
    with probe.transaction():
        sql, parameters = rls.tenant_scope_sql(other_tenant.pk)
        probe.execute(sql, parameters)
        inside = seen(probe, "user_facts")
    after = seen(probe, "user_facts")
    assert (inside, after) == ({other_tenant.pk: globex_facts}, {})
