"""Search over past messages: semantic search, BM25 and their fusion, with the real
all-MiniLM-L6-v2 model, on the test PostgreSQL."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from conversations import services as conversation_services
from conversations.models import Conversation, Message
from search import selectors, services
from search.models import MessageEmbedding
from tests.factories import conversation_with_messages

pytestmark = pytest.mark.django_db

FACTS = [
    ("user", "Caroline", "I adopted a puppy last Saturday, his name is Rex!"),
    ("assistant", "Melanie", "That's wonderful! What breed is he?"),
    ("user", "Caroline", "A golden retriever, three months old and already chewing every shoe."),
    ("assistant", "Melanie", "I went to Lisbon on 12 March for a pottery conference."),
    ("user", "Caroline", "My brother Tomasz moved to Denver in 2021 for a job at Vestas."),
    ("assistant", "Melanie", "Our order number for the new kiln is 88341, it should arrive in June."),
]


def conversation_of_facts(tenant, conversation_id="s1", user_id="caroline", rows=FACTS, start=None):
    conversation = Conversation.objects.for_tenant(tenant).create(
        tenant=tenant, conversation_id=conversation_id, user_id=user_id, message_count=len(rows), last_seq=len(rows)
    )
    start = start or datetime(2023, 5, 8, 14, 0, tzinfo=UTC)
    Message.objects.for_tenant(tenant).bulk_create(
        Message(
            tenant=tenant,
            conversation=conversation,
            seq=seq,
            role=role,
            content=content,
            metadata={"name": name},
            created_at=start + timedelta(minutes=seq),
            token_count=len(content.split()),
        )
        for seq, (role, name, content) in enumerate(rows, start=1)
    )
    services.conversation_embed(tenant=tenant, conversation_id=conversation_id)
    return conversation


def message_add(tenant, conversation, seq, content, created_at):
    """A user message persisted into ``conversation`` as the write worker would, not embedded yet."""
    return Message.objects.for_tenant(tenant).create(
        tenant=tenant, conversation=conversation, seq=seq, role="user", content=content, created_at=created_at
    )


def search(tenant, query, conversation_id="s1", **given):
    return selectors.memory_search(
        tenant=tenant, request=selectors.SearchRequest.for_tenant(tenant, query=query, **given), conversation_id=conversation_id
    )


def test_every_user_and_assistant_message_gets_one_vector_with_its_model_and_dimension(tenant):
    conversation_of_facts(tenant)
    vectors = MessageEmbedding.objects.for_tenant(tenant)
    assert vectors.count() == len(FACTS)
    assert set(vectors.values_list("model", "dimensions")) == {("all-MiniLM-L6-v2", 384)}
    assert all(len(bytes(vector)) == 384 * 4 for vector in vectors.values_list("vector", flat=True))


def test_embedding_twice_writes_nothing_more(tenant):
    conversation_of_facts(tenant)
    assert services.conversation_embed(tenant=tenant, conversation_id="s1") == 0
    assert MessageEmbedding.objects.for_tenant(tenant).count() == len(FACTS)


def test_tool_and_system_messages_and_empty_answers_are_not_embedded(tenant):
    conversation_with_messages(
        tenant,
        "tools",
        rows=[("system", "You are helpful.", {}), ("user", "Weather?", {}), ("assistant", "", {}), ("tool", '{"t": 21}', {})],
    )
    assert services.conversation_embed(tenant=tenant, conversation_id="tools") == 1


def test_an_erased_conversation_embeds_nothing_and_raises_nothing(tenant):
    assert services.conversation_embed(tenant=tenant, conversation_id="never-was") == 0


def test_semantic_search_finds_a_paraphrase_above_the_threshold(tenant):
    conversation_of_facts(tenant)
    result = search(tenant, "What kind of dog does Caroline have?", mode="semantic")
    assert result.hits, "nothing at or above 0.45"
    assert "golden retriever" in result.hits[0].content or "Rex" in result.hits[0].content
    assert all(hit.similarity >= 0.45 for hit in result.hits)
    assert result.query_embedding_dim == 384


def test_semantic_search_returns_nothing_below_the_threshold(tenant):
    conversation_of_facts(tenant)
    assert search(tenant, "quantum chromodynamics lattice gauge", mode="semantic").hits == []
    assert search(tenant, "quantum chromodynamics lattice gauge", mode="semantic", min_similarity=-1.0).hits


def test_top_k_bounds_the_hits(tenant):
    conversation_of_facts(tenant)
    assert len(search(tenant, "Caroline", mode="semantic", min_similarity=-1.0, top_k=2).hits) == 2


def test_semantic_search_considers_only_the_newest_vectors_up_to_the_fetch_limit(tenant):
    conversation_of_facts(tenant)
    result = search(tenant, "puppy named Rex", mode="semantic", vector_fetch_limit=2, min_similarity=-1.0, scope="conversation")
    assert result.candidates == 2
    assert {hit.seq for hit in result.hits} <= {5, 6}


def test_a_short_conversation_is_extended_with_the_users_other_conversations(tenant):
    conversation_of_facts(tenant, "old-session")
    conversation_of_facts(tenant, "today", rows=[("user", "Caroline", "Good morning!")], start=datetime(2023, 7, 1, tzinfo=UTC))
    result = search(tenant, "Where did Tomasz move?", conversation_id="today", mode="semantic")
    assert result.hits[0].conversation_id == "old-session"
    assert "Denver" in result.hits[0].content


def test_a_conversation_past_the_trigger_is_searched_alone(tenant):
    conversation_of_facts(tenant, "old-session")
    conversation_of_facts(tenant, "today", rows=[("user", "Caroline", "Good morning!")], start=datetime(2023, 7, 1, tzinfo=UTC))
    result = search(tenant, "Where did Tomasz move?", conversation_id="today", mode="semantic", cross_session_trigger=1)
    assert {hit.conversation_id for hit in result.hits} <= {"today"}


def test_another_users_conversations_are_never_searched(tenant):
    conversation_of_facts(tenant, "bob-session", user_id="bob")
    conversation_of_facts(tenant, "today", rows=[("user", "Caroline", "Good morning!")])
    for mode in ("semantic", "hybrid", "keyword"):
        assert {hit.conversation_id for hit in search(tenant, "Tomasz Denver", conversation_id="today", mode=mode).hits} <= {
            "today"
        }


def test_keyword_search_finds_an_order_number_the_vectors_rank_low(tenant):
    conversation_of_facts(tenant)
    keyword = search(tenant, "88341", mode="keyword")
    assert [hit.seq for hit in keyword.hits] == [6]
    assert keyword.hits[0].keyword_score > 0
    hybrid = search(tenant, "What happened with 88341?")
    assert hybrid.hits[0].seq == 6


def test_hybrid_carries_both_scores_and_orders_by_the_fused_one(tenant):
    conversation_of_facts(tenant)
    result = search(tenant, "Rex the puppy")
    assert result.mode == "hybrid"
    top = result.hits[0]
    assert top.seq == 1
    assert top.similarity is not None
    assert top.keyword_score is not None
    assert [hit.score for hit in result.hits] == sorted((hit.score for hit in result.hits), reverse=True)


def test_a_query_of_stop_words_alone_finds_nothing_by_keyword(tenant):
    conversation_of_facts(tenant)
    assert search(tenant, "the of and", mode="keyword").hits == []


def test_messages_not_embedded_yet_are_found_by_their_words(tenant):
    conversation_of_facts(tenant)
    MessageEmbedding.objects.for_tenant(tenant).filter(seq=5).delete()
    result = search(tenant, "Tomasz Vestas", top_k=2)
    found = {hit.seq: hit for hit in result.hits}
    assert found[5].keyword_score > 0
    assert found[5].similarity is None  # no vector yet
    # Counted among the messages the ranking considered, beside every message with a vector.
    assert result.candidates == len(FACTS)


def test_a_hit_found_only_by_its_words_counts_as_a_candidate_when_nothing_is_embedded(tenant):
    conversation_of_facts(tenant)
    MessageEmbedding.objects.for_tenant(tenant).delete()
    result = search(tenant, "Tomasz Vestas", top_k=2)
    assert result.hits
    assert result.candidates == len(result.hits)


def test_the_tenants_settings_are_the_defaults_and_a_request_overrides_them(tenant):
    conversation_of_facts(tenant)
    tenant.settings = {"MEMORY_TOP_K": 1, "MEMORY_SEARCH_MODE": "semantic", "MEMORY_SIMILARITY_THRESHOLD": -1.0}
    tenant.save()
    result = search(tenant, "pottery")
    assert result.mode == "semantic"
    assert len(result.hits) == 1
    assert len(search(tenant, "pottery", top_k=3).hits) == 3


def test_another_tenants_messages_never_appear(tenant, other_tenant):
    conversation_of_facts(other_tenant, "s1", user_id="caroline")
    conversation_of_facts(tenant, "s1", user_id="caroline", rows=[("user", "Caroline", "Hello there")])
    for mode in ("semantic", "hybrid", "keyword"):
        hits = search(tenant, "Rex puppy golden retriever", mode=mode, min_similarity=-1.0).hits
        assert [hit.content for hit in hits] in ([], ["Hello there"])


def test_an_unscoped_query_of_vectors_raises(tenant):
    with pytest.raises(Exception, match="tenant"):
        list(MessageEmbedding.objects.all())


def test_erasing_a_conversation_erases_its_vectors(tenant):
    conversation_of_facts(tenant)
    conversation_services.conversation_erase(tenant=tenant, conversation_id="s1")
    assert not MessageEmbedding.unscoped.filter(tenant=tenant).exists()  # every row of this tenant


def test_a_message_is_embedded_with_its_date_and_speaker(tenant):
    from search import embeddings

    message = Message.objects.for_tenant(tenant).model(
        role="user", content="I adopted a puppy", metadata={"name": "Caroline"}, created_at=datetime(2023, 5, 8, tzinfo=UTC)
    )
    text = embeddings.document_text(
        role=message.role, content=message.content, created_at=message.created_at, metadata=message.metadata
    )
    assert text == "[2023-05-08] Caroline: I adopted a puppy"
    assert embeddings.speaker_of("assistant", {}) == "assistant"
    replying = embeddings.document_text(
        role="assistant",
        content="Yes! Rex.",
        created_at=message.created_at,
        metadata={"name": "Melanie"},
        previous=("Caroline", "Did you name him?"),
    )
    assert replying == "[2023-05-08] Melanie: Yes! Rex. (replying to Caroline: Did you name him?)"
    long = embeddings.document_text(
        role="user", content="ok", created_at=message.created_at, metadata={}, previous=("x", "y" * 5000)
    )
    assert len(long) < 400


def test_a_reply_is_embedded_with_the_turn_it_answers_and_found_by_it(tenant):
    from search import embeddings

    rows = [
        ("user", "Caroline", "Did you end up adopting the greyhound from the rescue shelter?"),
        ("assistant", "Melanie", "Yes! Saturday. He sleeps on the sofa all day."),
        ("user", "Caroline", "My brother Tomasz moved to Denver in 2021 for a job at Vestas."),
    ]
    conversation_of_facts(tenant, rows=rows)
    spoken = {}
    original = embeddings.embed_documents

    def remember(name, texts, **given):
        spoken.update(dict.fromkeys(texts, name))
        return original(name, texts, **given)

    MessageEmbedding.objects.for_tenant(tenant).delete()
    from unittest import mock

    with mock.patch.object(embeddings, "embed_documents", remember):
        services.conversation_embed(tenant=tenant, conversation_id="s1")
    assert (
        "[2023-05-08] Caroline: Did you end up adopting the greyhound from the rescue shelter?" in spoken
    )  # the first turn: alone
    assert (
        "[2023-05-08] Melanie: Yes! Saturday. He sleeps on the sofa all day. "
        "(replying to Caroline: Did you end up adopting the greyhound from the rescue shelter?)"
    ) in spoken
    top = search(tenant, "When did Melanie adopt a greyhound?", mode="semantic", min_similarity=-1.0).hits[0]
    assert top.seq == 2  # the answer, not the question that shares its words


def test_reembedding_with_another_model_switches_the_tenant_and_drops_the_old_vectors(tenant, settings):
    """The deployment moved to a model of its own (named as code, which only it may configure): a
    tenant still on the old one is reembedded and then follows the deployment's setting."""
    tenant.settings = {"MEMORY_EMBEDDING_MODEL": "all-MiniLM-L6-v2"}
    tenant.save()
    model = "tests.search.fakes:openai_like"
    settings.MEMORY_EMBEDDING_MODEL = model
    conversation_of_facts(tenant)
    call_command("reembed", "--tenant", tenant.slug, "--model", model)
    tenant.refresh_from_db()
    assert "MEMORY_EMBEDDING_MODEL" not in tenant.settings
    assert tenant.setting("MEMORY_EMBEDDING_MODEL") == model
    vectors = MessageEmbedding.objects.for_tenant(tenant)
    assert set(vectors.values_list("model", "dimensions")) == {(model, 1536)}
    assert vectors.count() == len(FACTS)
    result = search(tenant, "Lisbon pottery conference", mode="semantic", min_similarity=-1.0)
    assert result.query_embedding_dim == 1536
    assert 4 in [hit.seq for hit in result.hits[:2]]  # the turn, or the reply that carries it


def test_reembedding_names_an_unknown_model_and_changes_nothing(tenant):
    conversation_of_facts(tenant)
    with pytest.raises(CommandError, match="Unknown embedding model 'nope'"):
        call_command("reembed", "--tenant", tenant.slug, "--model", "nope")
    with pytest.raises(CommandError, match="No tenant"):
        call_command("reembed", "--tenant", "nobody")
    assert set(MessageEmbedding.objects.for_tenant(tenant).values_list("model", flat=True)) == {"all-MiniLM-L6-v2"}


def test_a_persisted_batch_queues_its_vectors_and_a_summary_check_on_the_derived_queue(tenant, api, settings):
    from tests.conftest import run_queued_tasks, take_queued_tasks

    response = api.post(
        "/api/v1/conversations/c1/messages/", {"messages": [{"role": "user", "content": "hi"}], "user_id": "u"}, format="json"
    )
    assert response.status_code == 201
    assert take_queued_tasks(settings.MEMORY_DERIVED_QUEUE) == []  # nothing before the worker persisted it
    run_queued_tasks()
    queued = take_queued_tasks(settings.MEMORY_DERIVED_QUEUE)
    assert sorted(name for name, _ in queued) == ["search.tasks.conversation_embed", "summaries.tasks.conversation_summarize"]
    assert all(args == [tenant.pk, "c1"] for _, args in queued)


def test_the_backfill_queues_conversations_with_messages_missing_vectors(tenant, settings):
    from tests.conftest import take_queued_tasks

    conversation_of_facts(tenant)
    MessageEmbedding.objects.for_tenant(tenant).filter(seq=2).delete()
    conversation_with_messages(tenant, "complete")
    Message.objects.for_tenant(tenant).filter(conversation__conversation_id="complete").delete()
    assert services.embeddings_backfill() == 1
    assert take_queued_tasks(settings.MEMORY_DERIVED_QUEUE) == [("search.tasks.conversation_embed", [tenant.pk, "s1"])]


def test_the_plain_model_embeds_the_bare_text(tenant):
    conversation_of_facts(tenant)
    assert services.conversation_embed(tenant=tenant, conversation_id="s1", model="all-MiniLM-L6-v2-plain") == len(FACTS)
    result = search(tenant, "puppy named Rex", mode="semantic", embedding_model="all-MiniLM-L6-v2-plain", min_similarity=-1.0)
    assert result.embedding_model == "all-MiniLM-L6-v2-plain"
    assert result.hits[0].seq == 1
    contextual = {hit.seq: hit for hit in search(tenant, "puppy named Rex", mode="semantic", min_similarity=-1.0).hits}
    assert (
        contextual[1].similarity != result.hits[0].similarity
    )  # other vectors: "[2023-05-08] Caroline: ..." against the bare text


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"MEMORY_SEARCH_MODE": "psychic"}, "MEMORY_SEARCH_MODE"),
        ({"MEMORY_EMBEDDING_MODEL": "no-such-model"}, "Unknown embedding model"),
        ({"MEMORY_EMBEDDING_MODEL": 3}, "must be a string"),
        ({"MEMORY_RETENTION_DAYS": -1}, "non-negative"),
    ],
)
def test_a_tenants_long_term_memory_settings_are_validated(tenant, overrides, named):
    from django.core.exceptions import ValidationError

    tenant.settings = overrides
    with pytest.raises(ValidationError, match=named):
        tenant.full_clean()


def test_vectors_kept_between_searches_follow_every_change_of_the_conversation(tenant):
    from search import vectors

    vectors.clear()
    conversation_of_facts(tenant)
    assert search(tenant, "Lisbon pottery", mode="semantic", min_similarity=-1.0).candidates == len(FACTS)
    # Added and embedded: seen by the next search.
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="s1")
    message_add(tenant, conversation, 7, "We named the kiln Vulcan.", datetime(2023, 5, 9, tzinfo=UTC))
    services.conversation_embed(tenant=tenant, conversation_id="s1")
    result = search(tenant, "What is the kiln called?", mode="semantic", min_similarity=-1.0)
    assert result.candidates == len(FACTS) + 1
    assert result.hits[0].seq == 7
    # One deleted and another added (the same count): the deleted one is gone, the new one found.
    Message.objects.for_tenant(tenant).filter(seq=7).delete()
    message_add(tenant, conversation, 8, "Actually the kiln is Hestia.", datetime(2023, 5, 10, tzinfo=UTC))
    services.conversation_embed(tenant=tenant, conversation_id="s1")
    assert [hit.seq for hit in search(tenant, "kiln name", mode="semantic", min_similarity=-1.0, top_k=20).hits].count(7) == 0
    assert search(tenant, "What is the kiln called?", mode="semantic", min_similarity=-1.0).hits[0].seq == 8
    # Erased: nothing left to compare.
    conversation_services.conversation_erase(tenant=tenant, conversation_id="s1")
    conversation_of_facts(tenant, "other", rows=[("user", "Caroline", "Hello")])
    assert search(tenant, "kiln", conversation_id="other", mode="semantic", min_similarity=-1.0).candidates == 1


def test_a_question_naming_a_speaker_finds_what_they_said_before_someone_greeting_them(tenant):
    # People seldom say their own name: the name matches the speaker's turns, not only the greetings.
    rows = [
        ("assistant", "Melanie", "Hi Caroline! So good to hear from you, Caroline."),
        ("user", "Caroline", "I finally signed up for the marathon in Boston."),
        ("assistant", "Melanie", "I signed up for a pottery class myself, it starts next week."),
    ]
    conversation_of_facts(tenant, rows=rows)
    keyword = search(tenant, "What did Caroline sign up for?", mode="keyword")
    assert [hit.seq for hit in keyword.hits][:1] == [2]
    assert search(tenant, "What did Caroline sign up for?").hits[0].seq == 2


def test_the_turn_after_a_matching_question_is_found_beside_it(tenant):
    rows = [
        ("user", "Caroline", "Did you end up adopting the greyhound from the rescue shelter?"),
        ("assistant", "Melanie", "Yes! Saturday. He sleeps on the sofa all day."),
        ("user", "Caroline", "My brother Tomasz moved to Denver in 2021 for a job at Vestas."),
        ("assistant", "Melanie", "Our order number for the new kiln is 88341, it should arrive in June."),
        ("user", "Caroline", "The weather in Denver has been strange all week."),
    ]
    conversation_of_facts(tenant, rows=rows)
    query = "Did Melanie adopt the greyhound from the rescue shelter?"
    alone = search(tenant, query, top_k=2, neighbour_weight=0.0)
    beside = search(tenant, query, top_k=2, neighbour_weight=0.5)
    assert [hit.seq for hit in beside.hits] == [1, 2]
    assert beside.hits[1].score > next((hit.score for hit in alone.hits if hit.seq == 2), 0.0)


def test_turns_beside_a_hit_obey_the_filters(tenant):
    from search.filters import search_filters

    rows = [
        ("user", "Caroline", "Did you end up adopting the greyhound from the rescue shelter?"),
        ("assistant", "Melanie", "Yes! Saturday. He sleeps on the sofa all day."),
    ]
    conversation_of_facts(tenant, rows=rows)
    only_caroline = search(tenant, "greyhound rescue shelter", neighbour_weight=1.0, filters=search_filters(role=["user"]))
    assert [hit.seq for hit in only_caroline.hits] == [1]


def test_a_search_whose_model_cannot_load_says_so_and_leaves_no_thread_behind(tenant, settings):
    conversation_of_facts(tenant)
    by_words = search(tenant, "puppy", embedding_model="no.such:factory")
    assert [notice["code"] for notice in by_words.notices] == ["query_not_embedded"]
    assert "no.such" in by_words.notices[0]["message"]
    assert "puppy" in by_words.hits[0].content  # ranked by its words
    assert by_words.query_embedding_dim is None
    assert search(tenant, "puppy").notices == []  # the next search is served as usual
