"""The search endpoints: parameters, answers, errors, tenants; and the path from an append through the
persist and derived-memory workers to a search hit."""

import re

import pytest

from search.models import MessageEmbedding
from tests.conftest import wait_for_rows
from tests.search.test_search import FACTS, conversation_of_facts

pytestmark = pytest.mark.django_db


def test_a_conversation_search_answers_hits_with_their_scores(api, tenant):
    conversation_of_facts(tenant)
    response = api.get("/api/v1/conversations/s1/search/", {"q": "What is the name of Caroline's puppy?"})
    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == "hybrid"
    assert body["embedding_model"] == "all-MiniLM-L6-v2"
    assert body["query_embedding_dim"] == 384
    top = body["results"][0]
    assert "Rex" in top["content"]
    assert set(top) == {
        "message_id", "conversation_id", "seq", "role", "content", "created_at", "metadata", "similarity", "keyword_score", "score",
    }  # fmt: skip


def test_a_user_search_covers_every_conversation_of_that_user(api, tenant):
    conversation_of_facts(tenant, "s1")
    conversation_of_facts(tenant, "s2", rows=[("user", "Caroline", "I finally visited Denver to see Tomasz.")])
    response = api.get("/api/v1/users/caroline/search/", {"q": "Tomasz Denver", "top_k": 2})
    assert response.status_code == 200
    assert response.json()["scope"] == "user"
    assert {hit["conversation_id"] for hit in response.json()["results"]} == {"s1", "s2"}


def test_seed_parameters_pass_through_the_query_string(api, tenant):
    conversation_of_facts(tenant)
    response = api.get(
        "/api/v1/conversations/s1/search/",
        {"q": "pottery", "mode": "semantic", "top_k": 1, "min_similarity": -1, "vector_fetch_limit": 3, "scope": "conversation"},
    )
    body = response.json()
    assert body["mode"] == "semantic"
    assert body["candidates"] == 3
    assert len(body["results"]) == 1


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({}, "q"),
        ({"q": "   "}, "empty"),
        ({"q": "x" * 2001}, "MEMORY_MAX_QUERY_CHARS"),
        ({"q": "x", "mode": "psychic"}, "mode"),
        ({"q": "x", "top_k": 0}, "top_k"),
        ({"q": "x", "top_k": 100000}, "MEMORY_MAX_PAGE_SIZE"),
        ({"q": "x", "min_similarity": 3}, "min_similarity"),
    ],
)
def test_bad_parameters_are_a_400_naming_the_problem(api, tenant, params, named):
    conversation_of_facts(tenant, rows=FACTS[:1])
    response = api.get("/api/v1/conversations/s1/search/", params)
    assert response.status_code == 400
    assert named in response.content.decode()


def test_another_tenants_conversation_is_a_404_and_its_users_are_empty(api, other_api, tenant):
    conversation_of_facts(tenant)
    assert other_api.get("/api/v1/conversations/s1/search/", {"q": "Rex"}).status_code == 404
    response = other_api.get("/api/v1/users/caroline/search/", {"q": "Rex"})
    assert response.status_code == 200
    assert response.json()["results"] == []


@pytest.mark.django_db(transaction=True)
def test_an_appended_message_is_embedded_by_the_worker_and_then_found_by_meaning(api, tenant, worker, derived_worker):
    response = api.post(
        "/api/v1/conversations/live/messages/",
        {
            "user_id": "caroline",
            "messages": [
                {"role": "user", "content": "I adopted a golden retriever puppy called Rex.", "name": "Caroline"},
                {"role": "assistant", "content": "Congratulations! Puppies are a lot of work."},
            ],
        },
        format="json",
    )
    assert response.status_code == 201
    wait_for_rows(MessageEmbedding, tenant, 2, timeout=90)
    body = api.get(
        "/api/v1/conversations/live/search/", {"q": "Which dog did Caroline get?", "mode": "semantic", "min_similarity": 0.3}
    ).json()
    assert body["results"][0]["content"].startswith("I adopted a golden retriever")


def test_an_operator_sees_which_messages_of_their_tenant_are_embedded(operator_client, tenant, other_tenant):
    conversation_of_facts(tenant, "ours")
    conversation_of_facts(other_tenant, "theirs")
    response = operator_client.get("/admin/search/messageembedding/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "ours" in page
    assert "theirs" not in page
    assert "all-MiniLM-L6-v2" in page
    listed = response.context["cl"].result_list
    seqs = {str(vector.seq) for vector in listed}
    shown = {cell.strip() for cell in re.findall(r'<td class="field-place">([^<]*)</td>', page)}
    assert shown == {f"message {place}" for place in range(1, len(listed) + 1)}  # places in the conversation, not seqs
    assert not any(f">{seq}<" in page for seq in seqs)
