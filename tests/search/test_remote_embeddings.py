"""Embedding models on a server (``search.remote``): the repository's model server serving the local
all-MiniLM-L6-v2 over ``/v1/embeddings``, called over real HTTP. The vectors and the search answers
are the in-process model's; a server that fails, hangs, answers 429 or the wrong length costs time
only, once per breaker interval, and leaves messages waiting, never lost; a tenant's server sees that
tenant's texts and credential alone."""

import time
from collections.abc import Iterator
from typing import Any
from unittest import mock

import numpy as np
import pytest
from django.core.exceptions import ValidationError

from benchmarks.model_server import ModelServer, ScriptedResponder
from core import breaker
from search import embeddings, remote, selectors, services
from search.models import MessageEmbedding
from tenants import services as tenant_services
from tests.faults import CeleryWorker, wait_until
from tests.search.test_search import FACTS, conversation_of_facts

pytestmark = pytest.mark.django_db

MODEL = "openai:all-MiniLM-L6-v2"
SERVED = "all-MiniLM-L6-v2"
LOOPBACK = "127.0.0.1/32"


@pytest.fixture
def server() -> Iterator[tuple[ModelServer, ScriptedResponder]]:
    responder = ScriptedResponder()
    with ModelServer(responder) as running:
        yield running, responder
    remote.clear()


@pytest.fixture(autouse=True)
def fresh_breakers() -> Iterator[None]:
    breaker.reset_all()
    yield
    breaker.reset_all()


def served_by(tenant: Any, url: str, settings: Any, **more: Any) -> None:
    """The tenant embeds with the model server at ``url`` (its own URL, let through the egress policy)."""
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = [LOOPBACK]
    tenant_services.tenant_update(
        tenant=tenant,
        settings={
            **tenant.settings,
            "MEMORY_EMBEDDING_MODEL": MODEL,
            "MEMORY_EMBEDDING_BASE_URL": url,
            "MEMORY_EMBEDDING_MAX_RETRIES": 0,
            "MEMORY_EMBEDDING_TIMEOUT": 30.0,  # a loaded machine: the server's first call loads its model
            "MEMORY_EMBEDDING_QUERY_TIMEOUT": 30.0,
            "MEMORY_EMBEDDING_BREAKER_SECONDS": 30.0,
            **more,
        },
    )
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret=f"sk-{tenant.slug}-embeddings")
    tenant.refresh_from_db()


def persisted(tenant: Any, conversation_id: str = "s1", rows: list[tuple[str, str, str]] = FACTS) -> None:
    """The conversation as the persist worker leaves it: its messages, no vector yet."""
    with mock.patch.object(services, "conversation_embed", return_value=0):
        conversation_of_facts(tenant, conversation_id=conversation_id, rows=rows)


def embedding_calls(running: ModelServer) -> list[dict[str, Any]]:
    return [request for request in running.requests if "input" in request]


def test_the_servers_vectors_are_the_in_process_models(tenant, server, settings):
    running, _ = server
    served_by(tenant, running.url, settings)
    texts = [text for _, _, text in FACTS]
    far = embeddings.embed_documents(MODEL, texts, tenant=tenant)
    near = embeddings.embed_documents(embeddings.LOCAL_MODEL, texts)
    assert far.shape == near.shape == (len(texts), 384)
    assert np.min(np.sum(far * near, axis=1)) > 0.9999
    query = embeddings.embed_query(MODEL, "Who has a dog?", tenant=tenant)
    assert float(query @ embeddings.embed_query(embeddings.LOCAL_MODEL, "Who has a dog?")) > 0.9999


def test_a_search_over_server_vectors_answers_what_the_in_process_model_answers(tenant, other_tenant, server, settings):
    running, _ = server
    served_by(tenant, running.url, settings)
    for each in (tenant, other_tenant):  # other_tenant: the in-process model
        conversation_of_facts(each)
        services.conversation_embed(tenant=each, conversation_id="s1")
    assert MessageEmbedding.objects.for_tenant(tenant).filter(model=MODEL).count() == len(FACTS)
    for query in ("Who has a dog?", "kiln order", "where did Melanie travel in March"):
        here = selectors.memory_search(
            tenant=tenant, request=selectors.SearchRequest.for_tenant(tenant, query=query), conversation_id="s1"
        )
        there = selectors.memory_search(
            tenant=other_tenant, request=selectors.SearchRequest.for_tenant(other_tenant, query=query), conversation_id="s1"
        )
        assert [hit.content for hit in here.hits] == [hit.content for hit in there.hits]
        assert here.notices == []
        assert here.query_embedding_dim == 384
    assert {request["authorization"] for request in embedding_calls(running)} == {f"Bearer sk-{tenant.slug}-embeddings"}


def test_a_failing_server_is_called_once_per_breaker_interval_and_nothing_is_lost(tenant, server, settings):
    running, responder = server
    served_by(tenant, running.url, settings, MEMORY_EMBEDDING_BREAKER_SECONDS=1.0)
    persisted(tenant)
    responder.script(SERVED, [{"status": 500, "times": 1000}])
    for _ in range(5):
        with pytest.raises(embeddings.EmbeddingUnavailable, match="HTTP 500"):
            services.conversation_embed(tenant=tenant, conversation_id="s1")
    assert len(embedding_calls(running)) == 1  # the breaker refused the four others at once
    assert embeddings.server_blocked(tenant) is not None
    assert MessageEmbedding.objects.for_tenant(tenant).count() == 0
    responder.script(SERVED, [])  # the server is back
    time.sleep(1.1)
    assert embeddings.server_blocked(tenant) is None
    assert services.conversation_embed(tenant=tenant, conversation_id="s1") == len(FACTS)


def test_a_hanging_server_costs_its_timeout_and_the_search_answers_by_words(tenant, server, settings):
    running, responder = server
    served_by(tenant, running.url, settings, MEMORY_EMBEDDING_QUERY_TIMEOUT=1.0)
    persisted(tenant)
    responder.script(SERVED, [{"sleep": 20, "times": 1000}])
    started = time.perf_counter()
    result = selectors.memory_search(
        tenant=tenant, request=selectors.SearchRequest.for_tenant(tenant, query="kiln 88341"), conversation_id="s1"
    )
    first = time.perf_counter() - started
    assert 0.9 < first < 10  # the query timeout (1 s), not the server's 20
    assert [notice["code"] for notice in result.notices] == ["query_not_embedded"]
    assert "88341" in result.hits[0].content  # found by its words
    assert result.query_embedding_dim is None
    started = time.perf_counter()
    again = selectors.memory_search(
        tenant=tenant, request=selectors.SearchRequest.for_tenant(tenant, query="Lisbon"), conversation_id="s1"
    )
    assert time.perf_counter() - started < 0.9  # the breaker answers at once
    assert [notice["code"] for notice in again.notices] == ["query_not_embedded"]
    assert "not called" in again.notices[0]["message"]


def test_429_is_retried_after_the_time_the_server_asks(tenant, server, settings):
    running, responder = server
    served_by(tenant, running.url, settings, MEMORY_EMBEDDING_MAX_RETRIES=1)
    responder.script(SERVED, [{"status": 429, "retry_after": 1}])
    started = time.perf_counter()
    vectors = embeddings.embed_documents(MODEL, ["I adopted a puppy"], tenant=tenant)
    assert time.perf_counter() - started >= 1.0
    assert vectors.shape == (1, 384)
    assert len(embedding_calls(running)) == 2


@pytest.mark.parametrize(
    "step",
    [
        {"dimensions": 100},
        {"answer": "not json"},
        {"answer": {"object": "list", "data": []}},
        {"answer": {"data": [{"index": 0, "embedding": [0.0, 0.0]}]}},
        {"answer": {"data": [{"index": 0, "embedding": ["x"] * 384}]}},
    ],
    ids=["wrong-length", "not-json", "no-vectors", "zero-vector", "not-numbers"],
)
def test_an_answer_that_is_not_the_vectors_asked_for_stores_nothing(tenant, server, settings, step):
    running, responder = server
    served_by(tenant, running.url, settings, MEMORY_EMBEDDING_DIMENSIONS=384)
    persisted(tenant)
    responder.script(SERVED, [step])
    with pytest.raises(embeddings.EmbeddingUnavailable):
        services.conversation_embed(tenant=tenant, conversation_id="s1")
    assert MessageEmbedding.objects.for_tenant(tenant).count() == 0


def test_vectors_of_another_length_are_never_stored_beside_the_tenants(tenant, server, settings):
    running, responder = server
    served_by(tenant, running.url, settings)  # no length configured: the stored vectors' is the rule
    conversation_of_facts(tenant, rows=FACTS[:3])
    services.conversation_embed(tenant=tenant, conversation_id="s1")
    persisted(tenant, conversation_id="s2", rows=FACTS[3:])
    responder.script(SERVED, [{"dimensions": 128}])
    with pytest.raises(embeddings.EmbeddingUnavailable, match="never mixed"):
        services.conversation_embed(tenant=tenant, conversation_id="s2")
    assert set(MessageEmbedding.objects.for_tenant(tenant).values_list("dimensions", flat=True)) == {384}
    assert services.conversation_embed(tenant=tenant, conversation_id="s2") == 3  # the server's right again


def test_a_tenants_own_server_gets_its_credential_only_and_never_the_deployments_key(tenant, server, settings, monkeypatch):
    running, _ = server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-deployment-secret")
    served_by(tenant, running.url, settings)
    tenant_services.provider_credential_delete(tenant=tenant, provider="openai")
    tenant.refresh_from_db()
    with pytest.raises(embeddings.EmbeddingModelError, match="own credential only"):
        embeddings.embed_documents(MODEL, ["hello"], tenant=tenant)
    assert embedding_calls(running) == []
    assert embeddings.server_blocked(tenant) is not None
    result = selectors.memory_search(
        tenant=tenant, request=selectors.SearchRequest.for_tenant(tenant, query="hello"), user_id="u"
    )
    assert [notice["code"] for notice in result.notices] == ["query_not_embedded"]
    assert "own credential only" in result.notices[0]["message"]


def test_two_tenants_on_two_servers_each_send_their_own_texts_and_keys(tenant, other_tenant, settings):
    with ModelServer(ScriptedResponder()) as first, ModelServer(ScriptedResponder()) as second:
        served_by(tenant, first.url, settings)
        served_by(other_tenant, second.url, settings)
        conversation_of_facts(tenant, rows=FACTS[:3])
        conversation_of_facts(other_tenant, rows=FACTS[3:])
        services.conversation_embed(tenant=tenant, conversation_id="s1")
        services.conversation_embed(tenant=other_tenant, conversation_id="s1")
        for running, owner, rows in ((first, tenant, FACTS[:3]), (second, other_tenant, FACTS[3:])):
            calls = embedding_calls(running)
            sent = " ".join(text for call in calls for text in call["input"])
            assert all(text in sent for _, _, text in rows)
            theirs = {text for _, _, text in FACTS} - {text for _, _, text in rows}
            assert not any(text in sent for text in theirs)
            assert {call["authorization"] for call in calls} == {f"Bearer sk-{owner.slug}-embeddings"}
    remote.clear()


def test_a_tenants_server_must_pass_the_egress_policy_when_saved(tenant):
    for url in ("http://127.0.0.1:8080/v1", "http://169.254.169.254/v1", "http://localhost/v1", "ftp://models.example.com/"):
        with pytest.raises(ValidationError, match="MEMORY_EMBEDDING_BASE_URL"):
            tenant_services.tenant_update(tenant=tenant, settings={"MEMORY_EMBEDDING_BASE_URL": url})
    with pytest.raises(ValidationError, match="MEMORY_EMBEDDING_MODEL"):
        tenant_services.tenant_update(tenant=tenant, settings={"MEMORY_EMBEDDING_MODEL": "openai:"})
    tenant.refresh_from_db()
    assert "MEMORY_EMBEDDING_BASE_URL" not in tenant.settings


def test_one_tenants_bad_key_does_not_open_another_tenants_breaker(tenant, other_tenant, server, settings):
    running, responder = server
    served_by(tenant, running.url, settings)
    served_by(other_tenant, running.url, settings)
    responder.script(SERVED, [{"status": 401}])
    with pytest.raises(embeddings.EmbeddingUnavailable, match="HTTP 401"):
        embeddings.embed_documents(MODEL, ["one"], tenant=tenant)
    assert embeddings.server_blocked(tenant) is not None
    assert embeddings.server_blocked(other_tenant) is None
    assert embeddings.embed_documents(MODEL, ["two"], tenant=other_tenant).shape == (1, 384)


def test_a_waiting_conversation_is_queued_again_once_the_breaker_closes(tenant, server, settings, monkeypatch):
    running, responder = server
    served_by(tenant, running.url, settings, MEMORY_EMBEDDING_BREAKER_SECONDS=1.0)
    sent: list[tuple[str, Any]] = []
    monkeypatch.setattr(services.current_app, "send_task", lambda name, args=None, **options: sent.append((name, args)))
    services.embedding_wait(tenant=tenant, conversation_id="s1", reason="the server answered HTTP 503")
    services.embedding_wait(tenant=tenant, conversation_id="s1", reason="again")  # noted once
    responder.script(SERVED, [{"status": 503}])
    with pytest.raises(embeddings.EmbeddingUnavailable):
        embeddings.embed_documents(MODEL, ["x"], tenant=tenant)
    assert services.embeddings_resume() == 0  # the breaker is open: it stays waiting
    time.sleep(1.1)
    assert services.embeddings_resume() == 1
    assert sent[0] == (services.EMBEDDINGS_RESUME, None)  # the wait scheduled its own resume, once
    assert sent[1:] == [(services.EMBEDDINGS_RESUME, None), (services.CONVERSATION_EMBED, [tenant.pk, "s1"])]
    assert services.embeddings_resume() == 0  # taken off the waiting list


# --- End to end: the API, the persist worker, a derived worker process calling the server ---------


@pytest.mark.django_db(transaction=True)
def test_appends_while_the_server_is_down_wait_and_are_all_embedded_once_it_is_back(
    api, tenant, worker, worker_env, server, settings
):
    running, responder = server
    served_by(tenant, running.url, settings, MEMORY_EMBEDDING_BREAKER_SECONDS=2.0)
    responder.script(SERVED, [{"status": 503, "times": 100_000}])
    env = {**worker_env, "MEMORY_EGRESS_ALLOWED_NETWORKS": LOOPBACK}
    derived = CeleryWorker(env=env, name="embedding", queue_variable="MEMORY_DERIVED_QUEUE")
    derived.start()
    try:
        started = time.monotonic()
        for index, (role, name, content) in enumerate(FACTS):
            response = api.post(
                f"/api/v1/conversations/c{index % 2}/messages/",
                {"user_id": "caroline", "messages": [{"role": role, "content": content, "name": name}]},
                format="json",
            )
            assert response.status_code == 201, response.content  # the append never waits on the server
        wait_until(
            lambda: api.get("/api/v1/users/caroline/search/status/").json()["reason"] == "embedding_unavailable",
            timeout=60,
            message="the messages persisted, waiting for the embedding server",
        )
        status = api.get("/api/v1/users/caroline/search/status/").json()
        assert status["not_embedded"] == len(FACTS)
        assert status["embedded"] == 0
        assert "HTTP 503" in status["embedding_waiting"]
        found = api.get("/api/v1/users/caroline/search/", {"q": "kiln order 88341"}).json()
        assert "88341" in found["results"][0]["content"]  # by its words meanwhile
        assert [notice["code"] for notice in found["notices"]] == ["query_not_embedded"]
        elapsed = time.monotonic() - started
        assert len(embedding_calls(running)) <= elapsed / 2.0 + 3  # one call per breaker interval, not one per message
        responder.script(SERVED, [])  # the server is back

        # No beat runs here: the waits scheduled their resume themselves.
        wait_until(
            lambda: MessageEmbedding.objects.for_tenant(tenant).filter(model=MODEL).count() == len(FACTS),
            timeout=60,
            message="every message embedded once the server is back",
        )
        status = api.get("/api/v1/users/caroline/search/status/").json()
        assert status["searchable"]
        assert status["embedding_waiting"] is None
        found = api.get("/api/v1/users/caroline/search/", {"q": "Who adopted a dog?"}).json()
        assert found["notices"] == []
        assert found["query_embedding_dim"] == 384
        assert "puppy" in found["results"][0]["content"]
    finally:
        derived.stop()


def test_moving_a_tenant_to_the_server_loses_no_message_persisted_meanwhile_and_mixes_no_models(
    tenant, server, settings, monkeypatch
):
    running, _ = server
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = [LOOPBACK]
    conversation_of_facts(tenant, rows=FACTS[:4])  # on the in-process model
    tenant_services.tenant_update(
        tenant=tenant,
        settings={"MEMORY_EMBEDDING_BASE_URL": running.url, "MEMORY_EMBEDDING_BATCH": 2, "MEMORY_EMBEDDING_TIMEOUT": 30.0},
    )
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret="sk-acme-embeddings")
    tenant.refresh_from_db()
    seen: list[list[str]] = []
    locking = services._writing_vectors

    def persisted_just_before_the_switch(owner: Any, *, exclusive: bool = False) -> None:
        # The worker persisted and embedded a conversation, under the model the tenant still has, after
        # the new vectors were all written and before the switch: a search then reads the old model alone.
        if exclusive and not seen:
            conversation_of_facts(tenant, conversation_id="s2", rows=FACTS[4:])
            result = selectors.memory_search(
                tenant=tenant, request=selectors.SearchRequest.for_tenant(tenant, query="kiln order"), user_id="caroline"
            )
            assert result.embedding_model == embeddings.LOCAL_MODEL
            seen.append([hit.content for hit in result.hits])
        locking(owner, exclusive=exclusive)

    monkeypatch.setattr(services, "_writing_vectors", persisted_just_before_the_switch)
    summary = services.tenant_reembed(tenant=tenant, model=MODEL)
    tenant.refresh_from_db()
    assert tenant.setting("MEMORY_EMBEDDING_MODEL") == MODEL
    assert "88341" in seen[0][0]
    vectors = MessageEmbedding.objects.for_tenant(tenant)
    assert set(vectors.values_list("model", flat=True)) == {MODEL}  # the old ones dropped in the switch
    assert vectors.count() == len(FACTS)  # the conversation persisted meanwhile too
    assert summary.embedded == len(FACTS)
    result = selectors.memory_search(
        tenant=tenant, request=selectors.SearchRequest.for_tenant(tenant, query="kiln order"), user_id="caroline"
    )
    assert result.embedding_model == MODEL
    assert result.notices == []
    assert "88341" in result.hits[0].content


def test_a_move_whose_server_fails_switches_nothing(tenant, server, settings):
    running, responder = server
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = [LOOPBACK]
    conversation_of_facts(tenant)
    tenant_services.tenant_update(
        tenant=tenant, settings={"MEMORY_EMBEDDING_BASE_URL": running.url, "MEMORY_EMBEDDING_MAX_RETRIES": 0}
    )
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret="sk-acme-embeddings")
    tenant.refresh_from_db()
    responder.script(SERVED, [{"status": 502, "times": 10}])
    with pytest.raises(embeddings.EmbeddingUnavailable):
        services.tenant_reembed(tenant=tenant, model=MODEL)
    tenant.refresh_from_db()
    assert tenant.setting("MEMORY_EMBEDDING_MODEL") == embeddings.LOCAL_MODEL
    assert set(MessageEmbedding.objects.for_tenant(tenant).values_list("model", flat=True)) == {embeddings.LOCAL_MODEL}


def test_the_context_is_served_while_the_server_is_down_and_says_how_it_ranked(api, tenant, server, settings):
    running, responder = server
    served_by(tenant, running.url, settings)
    conversation_of_facts(tenant, conversation_id="today")  # embedded while the server answered
    responder.script(SERVED, [{"status": 503, "times": 1000}])
    response = api.post(
        "/api/v1/conversations/today/context/", {"use_memory": True, "query": "the kiln order number"}, format="json"
    )
    assert response.status_code == 200, response.content
    memory = response.json()["memory"]
    assert [notice["code"] for notice in memory["notices"]] == ["query_not_embedded"]
    assert "88341" in memory["context"][0]["content"]  # by its words
    assert memory["query_embedding_dim"] is None
    responder.script(SERVED, [])
    breaker.reset_all()
    memory = api.post(
        "/api/v1/conversations/today/context/", {"use_memory": True, "query": "the kiln order number"}, format="json"
    ).json()["memory"]
    assert memory["notices"] == []
    assert memory["query_embedding_dim"] == 384
