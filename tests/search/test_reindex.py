"""Re-indexing a live tenant (``manage.py reembed --reindex``): every message embedded again under the
tenant's model while searches go on, which read the old vectors until one commit replaces them all,
never a mixture of the two; what is persisted meanwhile is indexed too."""

import threading
from datetime import UTC, datetime

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from conversations.models import Conversation
from search import embeddings, services, vectors
from search.models import MessageEmbedding
from tests.search.test_search import FACTS, conversation_of_facts, message_add, search

pytestmark = pytest.mark.django_db(transaction=True)


def similarities(tenant):
    """message seq -> cosine, for a semantic search that ranks every message of the conversation."""
    result = search(tenant, "What is the puppy called?", mode="semantic", min_similarity=-1.0, top_k=50)
    return {hit.seq: hit.similarity for hit in result.hits}


def reindexing_paused(tenant, monkeypatch):
    """Start ``reembed --reindex`` on a thread, its new indexing reading each message as 'NEW ' + the text,
    paused after its first batch; answers (resume, the thread, its errors)."""
    document_text = embeddings.document_text
    monkeypatch.setattr(embeddings, "document_text", lambda **given: "NEW " + document_text(**given))
    first_batch, resume = threading.Event(), threading.Event()
    store = services._store

    def pausing_store(**given):
        written = store(**given)
        if given["model"].endswith("#reindex") and not first_batch.is_set():
            first_batch.set()
            assert resume.wait(60)
        return written

    monkeypatch.setattr(services, "_store", pausing_store)
    errors = []

    def run():
        try:
            call_command("reembed", "--tenant", tenant.slug, "--reindex", stdout=open("/dev/null", "w"))  # noqa: SIM115
        except Exception as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    assert first_batch.wait(60), errors
    return resume, thread, errors


def test_searches_during_a_reindex_read_the_old_vectors_then_the_new_all_at_once(tenant, settings, monkeypatch):
    settings.MEMORY_EMBEDDING_BATCH = 2  # several batches: the pause falls in the middle of the tenant
    conversation_of_facts(tenant)
    vectors.clear()
    before = similarities(tenant)
    assert len(before) == len(FACTS)

    resume, thread, errors = reindexing_paused(tenant, monkeypatch)
    assert MessageEmbedding.objects.for_tenant(tenant).filter(model__endswith="#reindex").count() == 2
    vectors.clear()  # a process that reads the vectors for the first time mid-way reads the old ones too
    assert similarities(tenant) == before
    # A message persisted while the re-index runs: found by its words, and indexed by the swap.
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="s1")
    message_add(tenant, conversation, 7, "The puppy's vet is Dr Okafor.", datetime(2023, 5, 9, tzinfo=UTC))
    assert search(tenant, "Okafor vet", mode="keyword").hits[0].seq == 7
    resume.set()
    thread.join(60)
    assert not thread.is_alive()
    assert errors == []

    after = similarities(tenant)
    assert set(after) == set(range(1, 8))
    changed = [seq for seq in before if after[seq] != pytest.approx(before[seq], abs=1e-6)]
    assert changed == list(before)  # every old message compared under the new index, none under the old
    stored = MessageEmbedding.objects.for_tenant(tenant)
    assert stored.filter(model="all-MiniLM-L6-v2").count() == 7
    assert not stored.exclude(model="all-MiniLM-L6-v2").exists()


def test_kept_vectors_and_rows_read_across_a_swap_are_never_mixed(tenant, monkeypatch):
    conversation_of_facts(tenant, "s1")
    conversation_of_facts(tenant, "s2", rows=FACTS[:3])
    pks = list(Conversation.objects.for_tenant(tenant).order_by("conversation_id").values_list("pk", flat=True))
    vectors.clear()
    model = tenant.setting("MEMORY_EMBEDDING_MODEL")
    vectors.conversation_vectors(tenant=tenant, model=model, conversation_pks=pks[:1])  # s1 kept in this process
    read = vectors._read
    swapped = []

    def swap_then_read(**given):
        if not swapped:  # another process's re-index commits between this search's check and its read
            swapped.append(True)
            document_text = embeddings.document_text
            monkeypatch.setattr(embeddings, "document_text", lambda **g: "NEW " + document_text(**g))
            services.tenant_reindex(tenant=tenant)
            monkeypatch.setattr(embeddings, "document_text", document_text)
        return read(**given)

    monkeypatch.setattr(vectors, "_read", swap_then_read)
    found = vectors.conversation_vectors(tenant=tenant, model=model, conversation_pks=pks)

    assert swapped
    fresh = read(tenant=tenant, model=model, conversation_pks=pks, signatures={})
    for pk in pks:  # s1 kept from before the swap would be the old index beside s2's new one
        assert np.array_equal(found[pk].matrix, fresh[pk].matrix)


def test_a_reindex_names_what_it_cannot_do(tenant, settings):
    with pytest.raises(CommandError, match="leave out --model"):
        call_command("reembed", "--tenant", tenant.slug, "--reindex", "--model", "all-MiniLM-L6-v2")
    tenant.settings = {"MEMORY_EMBEDDING_MODEL": ""}
    tenant.save()
    with pytest.raises(CommandError, match="embeddings turned off"):
        call_command("reembed", "--tenant", tenant.slug, "--reindex")
