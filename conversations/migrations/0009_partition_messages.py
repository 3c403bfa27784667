"""``conversation_messages`` partitioned by a hash of ``tenant_id`` (``conversations.partitioning``).

The table is rebuilt with its rows: created partitioned, the rows copied, the old table dropped and
the new one renamed, the id sequence kept where it was. The migration state changes first (the
unique constraints end with the tenant, the window is served by the seq constraint's index, the
foreign keys lose their single-column indexes), then the rebuild reads the constraints and indexes
from the new state. Backwards, the table is rebuilt unpartitioned from the old state, and the
vectors' foreign key to it comes back. The vectors' table follows in ``search`` 0002.
"""

import django.db.models.deletion
from django.db import migrations, models

from conversations import partitioning


def partition(apps, schema_editor):  # noqa: ANN001
    partitioning.table_partition(schema_editor, apps.get_model("conversations", "Message"))


def unpartition(apps, schema_editor):  # noqa: ANN001
    message = apps.get_model("conversations", "Message")
    partitioning.table_unpartition(schema_editor, message)
    partitioning.foreign_keys_restore(schema_editor, apps, message)


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0008_message_terms_speaker"),
        # The vectors' foreign key to this table is dropped with it; row-level security is in place.
        ("search", "0001_initial"),
        ("tenants", "0003_provider_credential"),
    ]

    operations = [
        # Backwards only: the old state (before the changes below) is the one to rebuild from.
        migrations.RunPython(migrations.RunPython.noop, unpartition, elidable=False),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="message", name="message_seq_unique_per_conversation"),
                migrations.RemoveConstraint(model_name="message", name="message_id_unique_per_conversation"),
                migrations.RemoveIndex(model_name="message", name="message_window"),
                migrations.AlterField(
                    model_name="message",
                    name="conversation",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="messages",
                        to="conversations.conversation",
                    ),
                ),
                migrations.AlterField(
                    model_name="message",
                    name="tenant",
                    field=models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenants.tenant"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="message",
                    constraint=models.UniqueConstraint(
                        fields=("conversation", "seq", "tenant"), name="message_seq_unique_per_conversation"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="message",
                    constraint=models.UniqueConstraint(
                        fields=("conversation", "message_id", "tenant"), name="message_id_unique_per_conversation"
                    ),
                ),
            ]
        ),
        # Forwards only: the rebuild, from the new state.
        migrations.RunPython(partition, migrations.RunPython.noop, elidable=False),
    ]
