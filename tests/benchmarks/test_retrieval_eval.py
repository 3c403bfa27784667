"""The retrieval evaluation runs end to end in the test database: one small pair of friends stored,
embedded with the real model and asked ten questions by every method."""

import pytest

from benchmarks.retrieval.dataset import dataset_generate
from benchmarks.retrieval.evaluate import METHODS, dialog_ids, evaluation_run, report_markdown, user_ingest
from conversations.models import Conversation, Message


@pytest.fixture
def small():
    return dataset_generate(users=1, seed=3, sessions=(4, 4), turns=(15, 20))


def test_the_evaluation_reports_every_method_and_hybrid_finds_at_least_what_the_seed_finds(db, tenant, small):
    report = evaluation_run(dataset=small, tenant=tenant, ks=(8, 20), questions_per_user=10, progress=False)

    figures = {method.name: method for method in report.methods}
    assert list(figures) == [method.name for method in METHODS]
    assert report.questions == 10
    for method in report.methods:
        values = [*method.recall.values(), method.no_result]
        values += [recall for by_k in method.recall_by_category.values() for recall in by_k.values()]
        assert all(0.0 <= value <= 1.0 for value in values), method
        assert method.recall[8] <= method.recall[20]
    assert figures["hybrid (default)"].recall[8] >= figures["vectors alone, the first design"].recall[8]
    assert figures["recent window (50)"].window_holds is not None
    table = report_markdown(report)
    assert all(f"| {method.name} |" in table for method in METHODS)


def test_sessions_are_stored_once_as_conversations_of_the_pair_with_speakers_as_roles(db, tenant, other_tenant, small):
    (user,) = small.users

    assert user_ingest(tenant=tenant, user=user) is True
    assert user_ingest(tenant=tenant, user=user) is False  # the same sessions: nothing rewritten

    conversations = Conversation.objects.for_tenant(tenant).filter(user_id=user.user_id)
    assert sorted(conversations.values_list("conversation_id", flat=True)) == [f"{user.user_id}-s{n}" for n in range(1, 5)]
    first = Message.objects.for_tenant(tenant).filter(conversation__conversation_id=f"{user.user_id}-s1").order_by("seq")
    turns = user.sessions[0].turns
    assert [(m.seq, m.content, m.metadata["name"]) for m in first] == [
        (n, t.text, t.speaker) for n, t in enumerate(turns, start=1)
    ]
    assert {m.role for m in first if m.metadata["name"] == user.speakers[0]} == {"user"}
    assert {m.role for m in first if m.metadata["name"] == user.speakers[1]} == {"assistant"}
    assert all(later.created_at > earlier.created_at for earlier, later in zip(first, first[1:], strict=False))
    assert set(dialog_ids(tenant=tenant, user=user).values()) == set(user.turns())
    assert not Conversation.objects.for_tenant(other_tenant).exists()
