"""PostgreSQL declarative partitioning of the two tables that grow with every message:
``conversation_messages`` and ``message_embeddings``.

Contract
--------
* Both tables are partitioned by ``HASH (tenant_id)`` into ``PARTITIONS`` partitions of the same
  modulus, named ``<table>_p00`` to ``<table>_p15``. Every query the service sends names its tenant,
  so the planner reads one partition and its indexes: a tenant's rows and hot index pages stay
  together however many other tenants the deployment holds (the figures are in
  ``docs/architecture.md``; ``python -m benchmarks.partitions`` measures them).
* PostgreSQL wants the partition key in every primary key and unique constraint of a partitioned
  table. The primary key in the database is ``(id, tenant_id)`` (Django keeps ``id`` as the model's
  pk: ids still come from one sequence, so ``id`` stays unique), and the models' unique constraints
  end with ``tenant``. ``id`` comes first so that a lookup by id alone still finds an index in
  each partition.
* A foreign key cannot point at a partitioned table's ``id`` alone: a vector points at its message
  with ``(message_id, tenant_id)`` (``VECTOR_TO_MESSAGE``), ``ON DELETE CASCADE`` like Django's
  cascade it replaces.
* ``table_partition`` converts a table in place, rows included, with the constraints and indexes of
  the migration state's model; ``table_unpartition`` converts it back. Both copy the rows into a new
  table, drop the old one, rename the new one, and keep the id sequence's position and name; row
  level security (``tenants.rls``) is enabled on the parent and every partition. The table is locked
  against writes throughout: on a large table run it in a maintenance window.
"""

from typing import Any

from tenants import rls

PARTITIONS = 16
PARTITION_KEY = "tenant_id"

VECTOR_TO_MESSAGE = "message_embeddings_message_fk"
VECTOR_TO_MESSAGE_SQL = (
    f"ALTER TABLE message_embeddings ADD CONSTRAINT {VECTOR_TO_MESSAGE}"
    " FOREIGN KEY (message_id, tenant_id) REFERENCES conversation_messages (id, tenant_id)"
    " ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED"
)


def partition_names(table: str, partitions: int = PARTITIONS) -> list[str]:
    return [f"{table}_p{remainder:02d}" for remainder in range(partitions)]


def table_partitions(cursor: Any, table: str) -> list[str]:
    """The partitions of ``table`` in the database (none when it is not partitioned)."""
    cursor.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        " WHERE i.inhparent = to_regclass(%s) ORDER BY c.relname",
        [table],
    )
    return [name for (name,) in cursor.fetchall()]


def table_partition(schema_editor: Any, model: Any, *, partitions: int = PARTITIONS) -> None:
    """Convert ``model``'s table into one partitioned by ``HASH (tenant_id)``, rows included."""
    _rebuild(schema_editor, model, partitions=partitions)


def table_unpartition(schema_editor: Any, model: Any) -> None:
    """Convert ``model``'s partitioned table back into a plain one, rows included."""
    _rebuild(schema_editor, model, partitions=0)


def _rebuild(schema_editor: Any, model: Any, *, partitions: int) -> None:
    table = model._meta.db_table
    quote = schema_editor.quote_name
    building = f"{table}_rebuilt"
    sequence = f"{table}_id_seq"
    with schema_editor.connection.cursor() as cursor:
        # The foreign keys of other tables that point at this one are dropped with it; the caller
        # restores them (``foreign_keys_restore``) once the other table is ready for them.
        cursor.execute(f"LOCK TABLE {quote(table)} IN ACCESS EXCLUSIVE MODE")
        old_partitions = table_partitions(cursor, table)
        for name in old_partitions:
            cursor.execute(f"LOCK TABLE {quote(name)} IN ACCESS EXCLUSIVE MODE")
        cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
        (old_sequence,) = cursor.fetchone()
        # The columns, NOT NULL, defaults, CHECKs and the identity (a sequence of its own) of the old
        # table; primary key, unique constraints, indexes and foreign keys are built after the copy.
        like = f"LIKE {quote(table)} INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS INCLUDING STORAGE"
        scheme = f" PARTITION BY HASH ({PARTITION_KEY})" if partitions else ""
        cursor.execute(f"CREATE TABLE {quote(building)} ({like}){scheme}")
        for remainder, name in enumerate(partition_names(table, partitions)):
            cursor.execute(
                f"CREATE TABLE {quote(name + '_rebuilt')} PARTITION OF {quote(building)}"
                f" FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})"
            )
        cursor.execute(f"INSERT INTO {quote(building)} SELECT * FROM {quote(table)}")  # noqa: S608 (names from the model)
        cursor.execute(
            f"SELECT setval(pg_get_serial_sequence(%s, 'id'), last_value, is_called) FROM {old_sequence}",  # noqa: S608
            [building],
        )
        cursor.execute(f"DROP TABLE {quote(table)} CASCADE")
        cursor.execute(f"ALTER TABLE {quote(building)} RENAME TO {quote(table)}")
        for name in partition_names(table, partitions):
            cursor.execute(f"ALTER TABLE {quote(name + '_rebuilt')} RENAME TO {quote(name)}")
        cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
        (new_sequence,) = cursor.fetchone()
        cursor.execute(f"ALTER SEQUENCE {new_sequence} RENAME TO {quote(sequence)}")
    primary_key = ["id", PARTITION_KEY] if partitions else ["id"]
    schema_editor.execute(
        f"ALTER TABLE {quote(table)} ADD CONSTRAINT {quote(table + '_pkey')} PRIMARY KEY ({', '.join(map(quote, primary_key))})"
    )
    for constraint in model._meta.constraints:
        schema_editor.add_constraint(model, constraint)
    for index in model._meta.indexes:
        schema_editor.add_index(model, index)
    for field in model._meta.local_fields:
        for statement in schema_editor._field_indexes_sql(model, field):
            schema_editor.execute(statement)
        # A foreign key to a partitioned table's id cannot be: ``foreign_keys_restore`` creates it once
        # that table is plain again.
        if field.remote_field and field.db_constraint and not _partitioned(schema_editor, field.related_model):
            schema_editor.execute(schema_editor._create_fk_sql(model, field, "_fk_%(to_table)s_%(to_column)s"))
    for name in rls.with_partitions(schema_editor, [table]):
        for statement in rls.enable_sql(name, quote):
            schema_editor.execute(statement)
    schema_editor.execute(f"ANALYZE {quote(table)}")


def _partitioned(schema_editor: Any, model: Any) -> bool:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass(%s)", [model._meta.db_table])
        row = cursor.fetchone()
    return bool(row and row[0])


def foreign_keys_restore(schema_editor: Any, apps: Any, target: Any) -> None:
    """The foreign keys of the migration state that point at ``target``'s table and are missing in the
    database (dropped with the table it replaced), created again."""
    with schema_editor.connection.cursor() as cursor:
        for model in apps.get_models():
            for field in model._meta.local_fields:
                if not (field.remote_field and field.db_constraint and field.related_model is target):
                    continue
                cursor.execute(
                    "SELECT 1 FROM pg_constraint WHERE contype = 'f' AND conrelid = to_regclass(%s)"
                    " AND confrelid = to_regclass(%s) AND conkey = ARRAY[("
                    "SELECT attnum FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = %s)]::int2[]",
                    [model._meta.db_table, target._meta.db_table, model._meta.db_table, field.column],
                )
                if cursor.fetchone() is None:
                    schema_editor.execute(schema_editor._create_fk_sql(model, field, "_fk_%(to_table)s_%(to_column)s"))
