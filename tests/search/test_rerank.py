"""Reranking: a real reranking server (the scripted stand-in, over HTTP) reorders the best hits of the
search API, the context and the memory search; when it fails the hybrid order is answered with a
notice, and a failing server is called once per breaker interval; tenants never share texts or keys."""

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from benchmarks.model_server import RERANK_MODEL, ModelServer, ScriptedResponder
from console.selectors import Scope, health_report
from core import breaker
from memoryproject.health import readiness
from search import rerank
from tenants import services as tenant_services
from tests.extraction.test_api import BOSTON, MOVE, POTTERY, extracting, memories_of  # noqa: F401 - a fixture
from tests.search.test_search import FACTS, conversation_of_facts

pytestmark = pytest.mark.django_db

LOOPBACK_ALLOWED = "127.0.0.1/32"
QUESTION = "What is the name of Caroline's puppy?"
OTHER_FACTS = [
    ("user", "Caroline", "Our launch codename is Bluebird and nobody outside may know it."),
    ("assistant", "Melanie", "Understood, Bluebird stays between us."),
]


@pytest.fixture(autouse=True)
def closed_breakers() -> Iterator[None]:
    breaker.reset_all()
    yield
    breaker.reset_all()


@pytest.fixture
def server(settings: Any) -> Iterator[ModelServer]:
    """The scripted reranking server on loopback, which the egress policy lets tenants reach here."""
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = [LOOPBACK_ALLOWED]
    with ModelServer(ScriptedResponder()) as running:
        yield running


@pytest.fixture
def deployment_reranker(settings: Any, server: ModelServer) -> ModelServer:
    """The deployment's reranker: TEI's format at the server's /rerank."""
    settings.MEMORY_RERANK_URL = root(server) + "/rerank"
    return server


def root(server: ModelServer) -> str:
    return server.url.removesuffix("/v1")


def reranked_requests(server: ModelServer) -> list[dict[str, Any]]:
    return [body for body in server.requests if body.get("path") in ("/rerank", "/v1/rerank")]


def script(server: ModelServer, *steps: dict[str, Any], model: str = RERANK_MODEL) -> None:
    assert isinstance(server.responder, ScriptedResponder)
    server.responder.script(model, steps)


def search(api: Any, **params: Any) -> dict[str, Any]:
    response = api.get("/api/v1/conversations/s1/search/", {"q": QUESTION, "top_k": len(FACTS), **params})
    assert response.status_code == 200, response.content
    return response.json()


def ids(body: dict[str, Any]) -> list[str]:
    return [hit["message_id"] for hit in body["results"]]


def scores_for(order: list[int]) -> list[dict[str, Any]]:
    """A TEI answer giving ``order`` (indices into the texts sent, best first)."""
    return [{"index": index, "score": round(1.0 - place / 100, 2)} for place, index in enumerate(order)]


# --- The reranker's order is the order answered -------------------------------------------------


def test_the_reranker_order_is_exactly_the_order_the_search_answers(api, tenant, deployment_reranker):
    conversation_of_facts(tenant)
    hybrid = search(api, rerank="false")
    assert hybrid["reranked"] is False
    assert hybrid["rerank_model"] is None
    assert reranked_requests(deployment_reranker) == []  # rerank=false: the server is not even asked
    order = [3, 0, 5, 1, 4, 2]
    script(deployment_reranker, {"answer": scores_for(order)})

    body = search(api)

    assert ids(body) == [ids(hybrid)[index] for index in order]
    assert body["reranked"] is True
    assert body["rerank_model"] == "tei"
    assert body["notices"] == []
    [sent] = reranked_requests(deployment_reranker)
    assert sent["query"] == QUESTION
    assert sent["raw_scores"] is False
    assert sent["truncate"] is True
    # Each hit as "[date] Speaker: text", in the hybrid order.
    first = hybrid["results"][0]
    assert sent["texts"][0] == f"[{first['created_at'][:10]}] {first['metadata']['name']}: {first['content']}"
    assert len(sent["texts"]) == len(FACTS)


def test_the_default_scorer_of_the_stand_in_ranks_by_the_words_of_the_question(api, tenant, deployment_reranker):
    conversation_of_facts(tenant)
    body = api.get("/api/v1/conversations/s1/search/", {"q": "kiln order number arrive June", "top_k": 1}).json()
    assert body["reranked"] is True
    assert "88341" in body["results"][0]["content"]


def test_only_the_best_top_n_are_reranked_and_the_rest_follow_in_hybrid_order(api, tenant, settings, deployment_reranker):
    conversation_of_facts(tenant)
    hybrid = ids(search(api, rerank="false"))
    settings.MEMORY_RERANK_TOP_N = 3
    script(deployment_reranker, {"answer": scores_for([2, 1, 0])})

    body = search(api)

    assert ids(body) == [hybrid[2], hybrid[1], hybrid[0], *hybrid[3:]]
    [sent] = reranked_requests(deployment_reranker)
    assert len(sent["texts"]) == 3


def test_top_k_is_cut_after_reranking_from_the_top_n(api, tenant, deployment_reranker):
    conversation_of_facts(tenant)
    hybrid = ids(search(api, rerank="false"))
    script(deployment_reranker, {"answer": scores_for([5, 4, 3, 2, 1, 0])})

    body = search(api, top_k=2)

    assert ids(body) == [hybrid[5], hybrid[4]]  # the sixth best of the hybrid order reached the top
    [sent] = reranked_requests(deployment_reranker)
    assert len(sent["texts"]) == len(FACTS)


def test_a_cohere_style_server_is_sent_its_model_and_answers_the_order(api, tenant, settings, server):
    settings.MEMORY_RERANK_URL = root(server) + "/v1/rerank"
    settings.MEMORY_RERANK_API = "cohere"
    settings.MEMORY_RERANK_MODEL = "rerank-english-v3.0"
    conversation_of_facts(tenant)
    hybrid = ids(search(api, rerank="false"))
    order = [1, 2, 0, 4, 5, 3]
    results = [{"index": index, "relevance_score": 0.9 - place / 10} for place, index in enumerate(order)]
    script(server, {"answer": {"results": results}}, model="rerank-english-v3.0")

    body = search(api)

    assert ids(body) == [hybrid[index] for index in order]
    assert body["rerank_model"] == "rerank-english-v3.0"
    [sent] = reranked_requests(server)
    assert sent["model"] == "rerank-english-v3.0"
    assert sent["top_n"] == len(FACTS)
    assert len(sent["documents"]) == len(FACTS)


def test_a_post_search_may_turn_reranking_off_in_its_body(api, tenant, deployment_reranker):
    conversation_of_facts(tenant)
    hybrid = ids(search(api, rerank="false"))
    script(deployment_reranker, {"answer": scores_for([5, 4, 3, 2, 1, 0])})

    response = api.post("/api/v1/conversations/s1/search/", {"q": QUESTION, "top_k": len(FACTS), "rerank": False}, format="json")

    assert ids(response.json()) == hybrid
    assert response.json()["reranked"] is False
    assert reranked_requests(deployment_reranker) == []


def test_without_a_reranker_the_answer_says_none_was_asked(api, tenant):
    conversation_of_facts(tenant)
    body = search(api)
    assert body["reranked"] is False
    assert body["rerank_model"] is None
    assert body["notices"] == []


# --- Failures: the hybrid order, a notice, one call per breaker interval --------------------------


@pytest.mark.parametrize(
    ("step", "said"),
    [
        ({"status": 500}, "HTTP 500"),
        ({"status": 429}, "HTTP 429"),
        ({"sleep": 5}, "MEMORY_RERANK_TIMEOUT"),
        ({"answer": "<html>Bad gateway</html>"}, "not JSON"),
        ({"answer": {"error": "overloaded"}}, "not a list"),
        ({"answer": [{"index": 99, "score": 1.0}]}, "index out of"),
        ({"answer": [{"index": 0, "score": 1.0}, {"index": 1, "score": 0.5}]}, "scored 2 of the 6"),
        ({"answer": [{"index": 0, "score": "high"}]}, "not a number"),
    ],
    ids=["500", "429", "hang", "not-json", "not-a-list", "index-out-of-range", "too-few", "score-not-a-number"],
)
def test_a_failing_reranker_answers_the_hybrid_order_with_a_notice_and_is_called_once_per_interval(
    api, tenant, settings, deployment_reranker, step, said
):
    settings.MEMORY_RERANK_TIMEOUT = 0.3
    conversation_of_facts(tenant)
    hybrid = ids(search(api, rerank="false"))
    script(deployment_reranker, {**step, "times": 10})

    failed = search(api)

    assert ids(failed) == hybrid
    assert failed["reranked"] is False
    assert failed["rerank_model"] == "tei"
    [notice] = failed["notices"]
    assert notice["code"] == "rerank_failed"
    assert said in notice["message"]
    assert not any(word in notice["message"] for word in ("Rex", "puppy", "Lisbon", "88341", "Caroline"))  # never the texts
    # The breaker is open: the next searches answer at once without calling the server.
    for _ in range(3):
        skipped = search(api)
        assert ids(skipped) == hybrid
        assert [item["code"] for item in skipped["notices"]] == ["rerank_unavailable"]
    assert len(reranked_requests(deployment_reranker)) == 1
    # Once the interval is over (its key expired), the server is tried again, once.
    breaker.reset_all()
    search(api)
    assert len(reranked_requests(deployment_reranker)) == 2


def test_a_reranker_that_answers_again_closes_its_breaker(api, tenant, deployment_reranker):
    conversation_of_facts(tenant)
    script(deployment_reranker, {"status": 503})
    assert search(api)["notices"][0]["code"] == "rerank_failed"
    breaker.reset_all()  # the interval is over
    assert search(api)["reranked"] is True
    assert search(api)["reranked"] is True
    assert len(reranked_requests(deployment_reranker)) == 3


def test_a_reranker_that_cannot_be_reached_fails_soft(api, tenant, settings):
    settings.MEMORY_RERANK_URL = "http://127.0.0.1:9/rerank"  # nothing listens on the discard port
    conversation_of_facts(tenant)
    body = search(api)
    assert body["reranked"] is False
    assert body["notices"][0]["code"] == "rerank_failed"
    assert "cannot be reached" in body["notices"][0]["message"]


# --- Tenants ---------------------------------------------------------------------------------------


def test_a_tenants_texts_reach_only_its_own_reranker(api, other_api, tenant, other_tenant, settings, deployment_reranker):
    with ModelServer(ScriptedResponder()) as own:
        tenant_services.tenant_update(tenant=tenant, settings={"MEMORY_RERANK_URL": root(own) + "/rerank"})
        conversation_of_facts(tenant)
        conversation_of_facts(other_tenant, rows=OTHER_FACTS)

        assert search(api)["reranked"] is True
        other = other_api.get("/api/v1/conversations/s1/search/", {"q": "launch codename"}).json()
        assert other["reranked"] is True

        acme_texts = [text for body in reranked_requests(own) for text in body["texts"]]
    globex_texts = [text for body in reranked_requests(deployment_reranker) for text in body["texts"]]
    assert acme_texts
    assert globex_texts
    assert not any("Bluebird" in text for text in acme_texts)
    assert all("Bluebird" in text for text in globex_texts)


def test_a_tenants_own_url_is_called_with_its_own_credential_never_the_deployments(
    api, other_api, tenant, other_tenant, settings, deployment_reranker
):
    settings.MEMORY_RERANK_API_KEY = "deployment-secret-key"
    conversation_of_facts(tenant)
    conversation_of_facts(other_tenant, rows=OTHER_FACTS)
    with ModelServer(ScriptedResponder()) as own:
        tenant_services.tenant_update(tenant=tenant, settings={"MEMORY_RERANK_URL": root(own) + "/rerank"})
        assert search(api)["reranked"] is True  # no credential stored: called without one
        tenant_services.provider_credential_set(tenant=tenant, provider="rerank", secret="acme-own-key")
        assert search(api)["reranked"] is True
        assert [body["authorization"] for body in reranked_requests(own)] == ["", "Bearer acme-own-key"]
    # The deployment's URL: the deployment's key for a tenant without its own, the tenant's when stored.
    other_api.get("/api/v1/conversations/s1/search/", {"q": "launch codename"})
    tenant_services.provider_credential_set(tenant=other_tenant, provider="rerank", secret="globex-key")
    other_api.get("/api/v1/conversations/s1/search/", {"q": "launch codename"})
    assert [body["authorization"] for body in reranked_requests(deployment_reranker)] == [
        "Bearer deployment-secret-key",
        "Bearer globex-key",
    ]


def test_a_tenants_refused_key_opens_its_own_breaker_not_the_deployments(
    api, other_api, tenant, other_tenant, deployment_reranker
):
    conversation_of_facts(tenant)
    conversation_of_facts(other_tenant, rows=OTHER_FACTS)
    tenant_services.provider_credential_set(tenant=tenant, provider="rerank", secret="wrong-key")
    script(deployment_reranker, {"status": 401})
    assert search(api)["notices"][0]["code"] == "rerank_failed"
    assert search(api)["notices"][0]["code"] == "rerank_unavailable"
    other = other_api.get("/api/v1/conversations/s1/search/", {"q": "launch codename"}).json()
    assert other["reranked"] is True
    assert other["notices"] == []


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/rerank",
        "http://127.0.0.1:6379/rerank",
        "http://localhost:8080/rerank",
        "ftp://models.example.com/",
    ],
)
def test_a_url_the_egress_policy_refuses_is_refused_when_saved_naming_the_field(tenant, settings, url):
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = []
    with pytest.raises(ValidationError) as refused:
        tenant_services.tenant_update(tenant=tenant, settings={"MEMORY_RERANK_URL": url})
    assert "MEMORY_RERANK_URL" in str(refused.value)
    tenant.refresh_from_db()
    assert "MEMORY_RERANK_URL" not in tenant.settings


def test_an_unknown_format_is_refused_when_saved(tenant):
    with pytest.raises(ValidationError) as refused:
        tenant_services.tenant_update(tenant=tenant, settings={"MEMORY_RERANK_API": "openai"})
    assert "MEMORY_RERANK_API" in str(refused.value)


def test_a_tenants_url_is_checked_again_on_every_call(api, tenant, settings, server):
    tenant_services.tenant_update(tenant=tenant, settings={"MEMORY_RERANK_URL": root(server) + "/rerank"})
    conversation_of_facts(tenant)
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = []  # loopback is no longer allowed: the connection is refused

    body = search(api)

    assert body["reranked"] is False
    assert body["notices"][0]["code"] == "rerank_failed"
    assert "MEMORY_RERANK_URL" in body["notices"][0]["message"]
    assert reranked_requests(server) == []


def test_the_deployments_url_is_not_subject_to_the_tenants_egress_policy(api, tenant, settings, deployment_reranker):
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = []
    conversation_of_facts(tenant)
    assert search(api)["reranked"] is True


# --- The context and the memory search --------------------------------------------------------------


def test_the_context_relevant_messages_come_in_the_reranked_order(api, tenant, deployment_reranker):
    conversation_of_facts(tenant, "old-session")
    conversation_of_facts(tenant, "today", rows=[("user", "Caroline", "Morning!"), ("assistant", "Melanie", "Hi!")])
    body = {"use_memory": True, "query": QUESTION, "top_k": 4}
    hybrid = api.post("/api/v1/conversations/today/context/", body, format="json").json()["memory"]["context"]
    [first] = reranked_requests(deployment_reranker)
    sent = first["texts"]
    order = list(range(len(sent)))[::-1]  # the hybrid order, reversed
    script(deployment_reranker, {"answer": scores_for(order)})

    reranked = api.post("/api/v1/conversations/today/context/", body, format="json").json()["memory"]["context"]

    assert [item["content"] for item in reranked] == [sent[index].split(": ", 1)[1] for index in order][: len(reranked)]
    assert [item["message_id"] for item in reranked] != [item["message_id"] for item in hybrid]


def test_the_memory_search_answers_the_reranked_order_of_subject_and_text(api, extracting, deployment_reranker):  # noqa: F811
    memories_of(extracting, BOSTON, POTTERY, MOVE)
    url = "/api/v1/users/caroline/memories/"
    hybrid = api.get(url, {"query": "Where does Caroline live?", "rerank": "false"}).json()
    assert hybrid["reranked"] is False
    assert hybrid["rerank_model"] is None
    texts = [memory["text"] for memory in hybrid["results"]]
    script(deployment_reranker, {"answer": scores_for(list(range(len(texts)))[::-1])})

    body = api.get(url, {"query": "Where does Caroline live?"}).json()

    assert [memory["text"] for memory in body["results"]] == texts[::-1]
    assert body["reranked"] is True
    assert body["rerank_model"] == "tei"
    [sent] = reranked_requests(deployment_reranker)
    assert sent["texts"] == [f"{memory['subject']}: {memory['text']}" for memory in hybrid["results"]]


def test_a_failing_reranker_leaves_the_memory_search_in_its_order_with_a_notice(api, extracting, deployment_reranker):  # noqa: F811
    memories_of(extracting, BOSTON, POTTERY, MOVE)
    url = "/api/v1/users/caroline/memories/"
    hybrid = api.get(url, {"query": "Where does Caroline live?", "rerank": "false"}).json()
    script(deployment_reranker, {"answer": "not json at all"})

    body = api.get(url, {"query": "Where does Caroline live?"}).json()

    assert [memory["memory_id"] for memory in body["results"]] == [memory["memory_id"] for memory in hybrid["results"]]
    assert body["reranked"] is False
    assert [notice["code"] for notice in body["notices"]] == ["rerank_failed"]


# --- The health page and the metrics ------------------------------------------------------------------


def figures(tenant=None) -> dict[str, str]:
    scope = Scope.TENANT if tenant is not None else Scope.DEPLOYMENT
    report = health_report(readiness=readiness, scope=scope, tenant=tenant)
    return {figure.label: f"{figure.value} | {figure.detail}" for figure in report.figures}


def test_the_reranker_state_is_read_without_calling_it(api, tenant, deployment_reranker):
    conversation_of_facts(tenant)
    state = rerank.reranker_state()
    assert state.configured is True
    assert state.breaker_open is False
    assert reranked_requests(deployment_reranker) == []  # reading the state never calls the server
    search(api)
    script(deployment_reranker, {"status": 500})
    search(api)
    search(api)  # skipped: the breaker is open

    state = rerank.reranker_state()
    assert state.breaker_open is True
    assert "HTTP 500" in state.breaker_reason
    assert (state.recent.ok, state.recent.failed, state.recent.skipped) == (1, 1, 1)
    assert state.recent.mean_milliseconds is not None
    assert rerank.reranker_state(tenant).recent == state.recent
    assert len(reranked_requests(deployment_reranker)) == 2


def test_the_metrics_count_rerank_calls_by_outcome(api, tenant, deployment_reranker):
    from prometheus_client import REGISTRY

    def counted(outcome: str) -> float:
        return REGISTRY.get_sample_value("memory_rerank_calls_total", {"outcome": outcome}) or 0.0

    conversation_of_facts(tenant)
    before = {outcome: counted(outcome) for outcome in ("ok", "http_error", "skipped")}
    search(api)
    script(deployment_reranker, {"status": 500})
    search(api)
    search(api)
    assert {outcome: counted(outcome) - before[outcome] for outcome in before} == {"ok": 1, "http_error": 1, "skipped": 1}
    assert (REGISTRY.get_sample_value("memory_rerank_seconds_count") or 0) >= 2


def test_the_health_page_shows_the_reranker_and_its_recent_calls(api, tenant, settings, deployment_reranker):
    assert figures()["Reranker"].startswith("on | tei")
    conversation_of_facts(tenant)
    search(api)
    assert figures()["Rerank calls"].startswith("1 answered / 0 failed")
    script(deployment_reranker, {"status": 500})
    search(api)
    shown = figures(tenant)
    assert shown["Reranker"].startswith("not called")
    assert "HTTP 500" in shown["Reranker"]
    settings.MEMORY_RERANK_URL = ""
    assert figures()["Reranker"].startswith("off")


def test_a_tenants_health_figures_count_its_own_calls_only(api, other_api, tenant, other_tenant, deployment_reranker):
    conversation_of_facts(tenant)
    conversation_of_facts(other_tenant, rows=OTHER_FACTS)
    search(api)
    other_api.get("/api/v1/conversations/s1/search/", {"q": "launch codename"})
    other_api.get("/api/v1/conversations/s1/search/", {"q": "launch codename"})
    assert figures(tenant)["Rerank calls"].startswith("1 answered")
    assert figures(other_tenant)["Rerank calls"].startswith("2 answered")
    assert figures()["Rerank calls"].startswith("3 answered")


def test_the_scripted_servers_answers_read_as_json(deployment_reranker):
    """The stand-in's own formats, as a client sees them (the tests above rely on them)."""
    import urllib.request

    def post(path: str, body: dict[str, Any]) -> Any:
        sent = urllib.request.Request(  # noqa: S310 - the loopback server
            root(deployment_reranker) + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(sent, timeout=5) as answer:  # noqa: S310
            return json.loads(answer.read())

    tei = post("/rerank", {"query": "red apple", "texts": ["a pear", "a red apple", "red"]})
    assert [item["index"] for item in tei] == [1, 2, 0]
    cohere = post("/v1/rerank", {"model": "m", "query": "red apple", "documents": ["a pear", "a red apple", "red"], "top_n": 2})
    assert [item["index"] for item in cohere["results"]] == [1, 2]
