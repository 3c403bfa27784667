"""Tombstones of erased conversations: keyed with a deployment secret (an HMAC), so an erased id
cannot be confirmed by hashing a guess; still found after the secret is rotated (the old one kept in
``MEMORY_TOMBSTONE_KEYS``); and tombstones stored as a bare digest keyed in place by migration 0006.
"""

import hashlib
import importlib
from typing import Any

import pytest
from django.apps import apps

from conversations import services
from conversations.models import Conversation, Message, Tombstone, tombstone_key, tombstone_keys
from conversations.services import seqs
from memory.erase import user_erase
from tests.conversations.test_persist import SEQ, message, payload, stored
from tests.factories import conversation_with_messages

pytestmark = pytest.mark.django_db

USER = "erased-user"
ERASED = [f"session-{number}" for number in range(20)]


def guesses(conversation_id: str) -> set[str]:
    """What an attacker who knows the scheme but not the secret can compute from a guessed id."""
    digest = hashlib.sha256(conversation_id.encode()).hexdigest()
    return {digest, f"sha256:{digest}", conversation_id}


def stored_keys(tenant: Any) -> set[str]:
    return set(Tombstone.objects.for_tenant(tenant).values_list("conversation_key", flat=True))


def erase(tenant: Any, conversation_id: str) -> None:
    services.conversation_erase(tenant=tenant, conversation_id=conversation_id)


def test_no_erased_id_of_a_user_can_be_confirmed_by_hashing_guesses(tenant):
    for conversation_id in ERASED:
        Conversation.objects.for_tenant(tenant).create(tenant=tenant, conversation_id=conversation_id, user_id=USER)
    user_erase(tenant=tenant, user_id=USER)

    keys = stored_keys(tenant)

    assert len(keys) == len(ERASED)
    for conversation_id in [*ERASED, "session-20", USER]:
        assert keys.isdisjoint(guesses(conversation_id)), conversation_id
    assert all(key.startswith("hmac-sha256:") and conversation_id not in key for key in keys for conversation_id in ERASED)


def test_another_secret_keys_the_same_id_differently(settings):
    settings.MEMORY_TOMBSTONE_KEYS = ["first-secret"]
    first = tombstone_key("c1")
    settings.MEMORY_TOMBSTONE_KEYS = ["second-secret"]

    assert tombstone_key("c1") != first
    assert tombstone_key("c2") != tombstone_key("c1")


def test_unset_the_secret_is_the_secret_key_and_its_fallbacks(settings):
    settings.MEMORY_TOMBSTONE_KEYS = []
    settings.SECRET_KEY_FALLBACKS = ["an-older-secret-key"]
    keyed_now = tombstone_keys("c1")
    settings.MEMORY_TOMBSTONE_KEYS = [settings.SECRET_KEY, "an-older-secret-key"]

    assert tombstone_keys("c1") == keyed_now


def test_a_write_queued_before_the_erase_is_dropped_after_the_secret_is_rotated(tenant, settings):
    settings.MEMORY_TOMBSTONE_KEYS = ["old-secret"]
    services.messages_persist(payload=payload(tenant, [message(SEQ, "before the erase")]))
    erase(tenant, "c1")
    settings.MEMORY_TOMBSTONE_KEYS = ["new-secret", "old-secret"]

    late = message(SEQ + 1, "queued before the erase")
    assert services.messages_persist(payload=payload(tenant, [late])) == 0
    assert stored(tenant) == []
    assert not services.memory_persist(payload=payload(tenant, [], revision=SEQ + 1, document={"k": "v"}))


def test_erasing_again_after_a_rotation_keeps_one_tombstone_keyed_with_the_new_secret(tenant, settings):
    settings.MEMORY_TOMBSTONE_KEYS = ["old-secret"]
    conversation_with_messages(tenant, conversation_id="c1", count=2)
    erase(tenant, "c1")
    [old] = Tombstone.objects.for_tenant(tenant).values_list("erased_before_seq", flat=True)
    settings.MEMORY_TOMBSTONE_KEYS = ["new-secret", "old-secret"]
    conversation_with_messages(tenant, conversation_id="c1", count=1)

    erase(tenant, "c1")

    [(key, floor)] = Tombstone.objects.for_tenant(tenant).values_list("conversation_key", "erased_before_seq")
    assert key == tombstone_key("c1")
    assert floor > old
    settings.MEMORY_TOMBSTONE_KEYS = ["new-secret"]  # the old secret may go now
    assert services.messages_persist(payload=payload(tenant, [message(floor - 1, "late")])) == 0


def test_a_reused_id_starts_above_the_erase_floor_found_under_an_old_secret(tenant, settings):
    settings.MEMORY_TOMBSTONE_KEYS = ["old-secret"]
    ahead = 10**17  # a tombstone written by a host whose clock ran far ahead
    Tombstone.objects.for_tenant(tenant).create(tenant=tenant, conversation_key=tombstone_key("c1"), erased_before_seq=ahead)
    settings.MEMORY_TOMBSTONE_KEYS = ["new-secret", "old-secret"]

    assert seqs._database_seq_floor(tenant=tenant, conversation_id="c1") == ahead


def test_the_migration_keys_tombstones_stored_as_a_bare_digest_and_they_still_drop_erased_writes(tenant, settings):
    settings.MEMORY_TOMBSTONE_KEYS = ["deployment-secret"]
    legacy = "sha256:" + hashlib.sha256(b"c1").hexdigest()
    Tombstone.objects.for_tenant(tenant).create(tenant=tenant, conversation_key=legacy, erased_before_seq=SEQ + 10)
    migration = importlib.import_module("conversations.migrations.0006_tombstone_keyed")

    migration.key_digests(apps, None)

    assert stored_keys(tenant) == {tombstone_key("c1")}
    assert services.messages_persist(payload=payload(tenant, [message(SEQ + 5, "erased"), message(SEQ + 10, "kept")])) == 1
    assert stored(tenant) == [(SEQ + 10, "kept")]
    assert not Message.objects.for_tenant(tenant).filter(seq=SEQ + 5).exists()
