"""Keyword search scored in the process (``search.terms``): the same BM25 PostgreSQL would compute over
the same terms, and copies of a conversation's terms that follow every change of it."""

from datetime import UTC, datetime

import pytest
from django.db import connection

from conversations import services as conversation_services
from conversations.models import Conversation, Message
from search import ranking, terms
from search.filters import MESSAGE_FILTERS_SQL, search_filters
from search.selectors import admitted
from tests.search.test_search import FACTS, conversation_of_facts, message_add, search

pytestmark = pytest.mark.django_db

# Lucene's BM25 over the scope, written in SQL from the parts the store's keyword search runs: the
# reference the in-process scores must equal.
REFERENCE_SQL = (
    "WITH "  # noqa: S608 (constant parts only)
    + ranking.BM25_QUERY_TERMS
    + """scope AS MATERIALIZED (
    SELECT m.id, m.token_count FROM conversation_messages AS m
    WHERE m.tenant_id = %(tenant)s AND m.conversation_id = ANY(%(conversations)s) AND m.role IN ('user', 'assistant')"""
    + MESSAGE_FILTERS_SQL
    + """),
"""
    + ranking.BM25_STATS
    + """matched AS (
    SELECT m.id, m.token_count, term.lexeme, COALESCE(array_length(term.positions, 1), 1)::float8 AS tf
    FROM conversation_messages AS m
    CROSS JOIN LATERAL unnest("""
    + ranking.MESSAGE_TERMS_SQL
    + """) AS term
    WHERE m.id IN (SELECT id FROM scope) AND term.lexeme = ANY(ARRAY(SELECT unnest(terms) FROM query))
),
"""
    + ranking.BM25_SCORES
)

MORE = [
    ("user", "Caroline", "The kiln kiln kiln arrived: a kiln for pottery, finally, after the order 88341."),
    ("assistant", "Melanie", "Pottery and kilns again! Lisbon taught me that a kiln needs patience."),
    ("user", "Caroline", "Denver was cold; Tomasz says Vestas builds turbines, not kilns."),
    ("assistant", "Melanie", ""),
]


def reference(tenant, conversations, query, filters=None):
    filters = filters or search_filters()
    with connection.cursor() as cursor:
        parameters = {"tenant": tenant.pk, "conversations": conversations, "query": query, "top": 100}
        cursor.execute(REFERENCE_SQL, parameters | filters.sql_parameters())
        return [(key, pytest.approx(float(score), rel=1e-9)) for key, score in cursor.fetchall()]


@pytest.mark.parametrize("query", ["kiln pottery", "What did Tomasz build in Denver?", "88341 order", "Lisbon", "the and of"])
def test_in_process_bm25_equals_postgresql_over_the_same_terms(tenant, query):
    terms.clear()
    first = conversation_of_facts(tenant, "s1")
    second = conversation_of_facts(tenant, "s2", rows=MORE, start=datetime(2023, 6, 1, tzinfo=UTC))
    scope = [first.pk, second.pk]
    expected = reference(tenant, scope, query)
    found = terms.bm25(tenant=tenant, conversation_pks=scope, query=query, limit=10_000, top=100)
    assert found == expected
    assert terms.bm25(tenant=tenant, conversation_pks=scope, query=query, limit=10_000, top=100) == expected  # kept: the same


def test_in_process_bm25_with_filters_ranks_by_the_statistics_of_the_messages_that_match(tenant):
    first = conversation_of_facts(tenant, "s1")
    second = conversation_of_facts(tenant, "s2", rows=MORE)
    filters = search_filters(name=["Melanie"])
    allowed = admitted(tenant=tenant, filters=filters, conversation_pks=[first.pk, second.pk])
    found = terms.bm25(
        tenant=tenant, conversation_pks=[first.pk, second.pk], query="kiln pottery", limit=10_000, top=100, allowed=allowed
    )
    assert found == reference(tenant, [first.pk, second.pk], "kiln pottery", filters)
    assert found
    assert all(Message.objects.for_tenant(tenant).get(pk=key).metadata["name"] == "Melanie" for key, _ in found)


def test_only_the_newest_messages_up_to_the_limit_are_searched(tenant):
    conversation = conversation_of_facts(tenant, "s1", rows=[("user", "Caroline", f"kiln number {n}") for n in range(10)])
    found = terms.bm25(tenant=tenant, conversation_pks=[conversation.pk], query="kiln", limit=3, top=100)
    seqs = sorted(Message.objects.for_tenant(tenant).get(pk=key).seq for key, _ in found)
    assert seqs == [8, 9, 10]


def test_terms_kept_between_searches_follow_every_change_of_the_conversation(tenant):
    terms.clear()
    conversation_of_facts(tenant)
    assert search(tenant, "Lisbon", mode="keyword").candidates == 1
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="s1")
    # Persisted, not embedded yet: found by its words at the next search.
    message_add(tenant, conversation, 7, "Lisbon again in May.", datetime(2023, 5, 9, tzinfo=UTC))
    assert [hit.seq for hit in search(tenant, "Lisbon", mode="keyword").hits] == [7, 4]
    # One deleted and another added (the same count): the deleted one gone, the new one found.
    Message.objects.for_tenant(tenant).filter(seq=7).delete()
    message_add(tenant, conversation, 8, "Porto, not Lisbon.", datetime(2023, 5, 10, tzinfo=UTC))
    assert sorted(hit.seq for hit in search(tenant, "Lisbon", mode="keyword").hits) == [4, 8]
    # Erased: nothing left to match.
    conversation_services.conversation_erase(tenant=tenant, conversation_id="s1")
    conversation_of_facts(tenant, "other", rows=[("user", "Caroline", "Hello")])
    assert search(tenant, "Lisbon", conversation_id="other", mode="keyword").hits == []


def test_terms_are_kept_per_tenant(tenant, other_tenant):
    conversation_of_facts(tenant)
    conversation_of_facts(other_tenant, rows=[("user", "Caroline", "Nothing about that city.")])
    assert [hit.content for hit in search(tenant, "Lisbon", mode="keyword").hits] == [FACTS[3][2]]
    assert search(other_tenant, "Lisbon", mode="keyword").hits == []
