"""Tombstones are keyed with a deployment secret: an unsalted digest of an erased conversation id
could be confirmed by hashing a guess. A digest already stored is keyed in place (the id is not
needed: the key is an HMAC of that digest), with the newest secret of MEMORY_TOMBSTONE_KEYS (or
SECRET_KEY when that is unset)."""

from django.db import migrations

LEGACY_PREFIX = "sha256:"


def key_digests(apps, schema_editor):
    from conversations.models import tombstone_digest, tombstone_secrets

    secret = tombstone_secrets()[0]
    Tombstone = apps.get_model("conversations", "Tombstone")
    legacy = Tombstone._base_manager.filter(conversation_key__startswith=LEGACY_PREFIX)  # every tenant's
    for tombstone in legacy.iterator(chunk_size=1000):
        tombstone.conversation_key = tombstone_digest(tombstone.conversation_key.removeprefix(LEGACY_PREFIX), secret)
        tombstone.save(update_fields=["conversation_key"])


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0005_ledger_epoch"),
    ]

    # Not reversible in place: the code before this one looks tombstones up by the bare digest.
    operations = [migrations.RunPython(key_digests, migrations.RunPython.noop)]
