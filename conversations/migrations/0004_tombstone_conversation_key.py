"""Tombstones keep a digest of the conversation id, not the id: an erase leaves nothing readable."""

import hashlib

from django.db import migrations, models


def digest_ids(apps, schema_editor):  # noqa: ANN001, ANN201
    Tombstone = apps.get_model("conversations", "Tombstone")
    for tombstone in Tombstone._base_manager.all():
        if not tombstone.conversation_key.startswith("sha256:"):
            tombstone.conversation_key = "sha256:" + hashlib.sha256(tombstone.conversation_key.encode()).hexdigest()
            tombstone.save(update_fields=["conversation_key"])


class Migration(migrations.Migration):
    dependencies = [("conversations", "0003_message_terms_index")]

    operations = [
        migrations.RemoveConstraint(model_name="tombstone", name="tombstone_unique_per_conversation"),
        migrations.RenameField(model_name="tombstone", old_name="conversation_id", new_name="conversation_key"),
        migrations.AddConstraint(
            model_name="tombstone",
            constraint=models.UniqueConstraint(fields=("tenant", "conversation_key"), name="tombstone_unique_per_conversation"),
        ),
        migrations.RunPython(digest_ids, migrations.RunPython.noop),
    ]
