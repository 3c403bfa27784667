"""``message_embeddings`` partitioned by a hash of ``tenant_id`` like the messages
(``conversations.partitioning``), with a composite foreign key to its message, ``ON DELETE CASCADE``,
in place of the one ``conversations`` 0009 dropped with the old messages table.

As there: the state changes first, the rebuild reads the new state; backwards, the table is rebuilt
unpartitioned from the old state (its foreign key to the message comes back with ``conversations``
0009's backward step, once the messages' table is plain again).
"""

import django.db.models.deletion
from django.db import migrations, models

from conversations import partitioning


def partition(apps, schema_editor):  # noqa: ANN001
    partitioning.table_partition(schema_editor, apps.get_model("search", "MessageEmbedding"))
    schema_editor.execute(partitioning.VECTOR_TO_MESSAGE_SQL)


def unpartition(apps, schema_editor):  # noqa: ANN001
    schema_editor.execute(f"ALTER TABLE message_embeddings DROP CONSTRAINT IF EXISTS {partitioning.VECTOR_TO_MESSAGE}")
    partitioning.table_unpartition(schema_editor, apps.get_model("search", "MessageEmbedding"))


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0009_partition_messages"),
        ("search", "0001_initial"),
        ("tenants", "0003_provider_credential"),
    ]

    operations = [
        # Backwards only: the old state (before the changes below) is the one to rebuild from.
        migrations.RunPython(migrations.RunPython.noop, unpartition, elidable=False),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="messageembedding", name="embedding_unique_per_message_model"),
                migrations.AlterField(
                    model_name="messageembedding",
                    name="message",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="embeddings",
                        to="conversations.message",
                    ),
                ),
                migrations.AlterField(
                    model_name="messageembedding",
                    name="tenant",
                    field=models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenants.tenant"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="messageembedding",
                    constraint=models.UniqueConstraint(
                        fields=("message", "model", "tenant"), name="embedding_unique_per_message_model"
                    ),
                ),
            ]
        ),
        # Forwards only: the rebuild, from the new state.
        migrations.RunPython(partition, migrations.RunPython.noop, elidable=False),
    ]
