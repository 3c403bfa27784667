"""How a client knows search covers a history: the ``search_coverage`` of a conversation, a user's
``/search/status/``, and the embedding backlog in ``/metrics``, through the real append, persist and
embed path (the tasks run here, in order, as the workers would)."""

import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from conversations.models import Message
from search import coverage, services
from search.models import MessageEmbedding
from tests.conftest import run_queued_tasks, take_queued_tasks
from tests.conversations.test_api import redis_unreachable
from tests.factories import conversation_with_messages

pytestmark = pytest.mark.django_db

SCRAPER = {"HTTP_AUTHORIZATION": "Bearer test-metrics-token"}
HISTORY = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "I adopted a golden retriever puppy called Rex."},
    {"role": "assistant", "content": "Congratulations! Puppies are a lot of work."},
]


def append_history(api, conversation_id="c1", user_id="caroline", messages=HISTORY):
    response = api.post(
        f"/api/v1/conversations/{conversation_id}/messages/", {"user_id": user_id, "messages": messages}, format="json"
    )
    assert response.status_code == 201


def run_embedding(tenant) -> int:
    """What the derived worker does with the queued vector tasks; the summary checks are dropped."""
    embedded = 0
    for name, (tenant_id, conversation_id) in take_queued_tasks(settings.MEMORY_DERIVED_QUEUE):
        if name == "search.tasks.conversation_embed":
            assert tenant_id == tenant.pk
            embedded += services.conversation_embed(tenant=tenant, conversation_id=conversation_id)
    return embedded


def coverage_of(api, conversation_id="c1"):
    response = api.get(f"/api/v1/conversations/{conversation_id}/")
    assert response.status_code == 200
    return response.json()["search_coverage"]


def status_of(api, user_id="caroline"):
    response = api.get(f"/api/v1/users/{user_id}/search/status/")
    assert response.status_code == 200
    return response.json()


def test_a_loaded_history_becomes_searchable_once_persisted_and_embedded(api, tenant, no_worker):
    take_queued_tasks(settings.MEMORY_DERIVED_QUEUE)  # what earlier tests left
    append_history(api)

    acknowledged = status_of(api)
    assert acknowledged == {
        "user_id": "caroline",
        "embedding_model": "all-MiniLM-L6-v2",
        "messages": 0,
        "embedded": 0,
        "not_embedded": 0,
        "pending_persist": 3,
        "searchable": False,
        "reason": "pending_persist",
        "oldest_not_embedded_at": None,
        "embedding_waiting": None,
    }
    assert coverage_of(api)["pending_persist"] == 3

    run_queued_tasks()  # the persist worker
    persisted = status_of(api)
    # The system message is persisted but never embedded, so it is not counted.
    assert (persisted["messages"], persisted["embedded"], persisted["not_embedded"]) == (2, 0, 2)
    assert persisted["pending_persist"] == 0
    assert (persisted["searchable"], persisted["reason"]) == (False, "not_embedded")
    assert persisted["oldest_not_embedded_at"] is not None
    assert coverage_of(api) == {name: value for name, value in persisted.items() if name != "user_id"}

    assert run_embedding(tenant) == 2  # the derived worker
    embedded = status_of(api)
    assert (embedded["messages"], embedded["embedded"], embedded["not_embedded"]) == (2, 2, 0)
    assert (embedded["searchable"], embedded["reason"]) == (True, None)
    assert embedded["oldest_not_embedded_at"] is None
    assert (coverage_of(api)["searchable"], coverage_of(api)["reason"]) == (True, None)


def test_a_user_counts_every_conversation_of_theirs_and_no_one_elses(api, tenant):
    conversation_with_messages(tenant, "first", 4, user_id="caroline")
    conversation_with_messages(tenant, "second", 3, user_id="caroline")
    conversation_with_messages(tenant, "someone-else", 5, user_id="melanie")
    services.conversation_embed(tenant=tenant, conversation_id="first")

    status = status_of(api)
    assert (status["messages"], status["embedded"], status["not_embedded"]) == (7, 4, 3)
    assert status["searchable"] is False
    assert coverage_of(api, "first")["searchable"] is True
    assert coverage_of(api, "second")["not_embedded"] == 3


def test_tool_system_and_empty_messages_never_hold_a_conversation_back(api, tenant):
    conversation_with_messages(
        tenant,
        "tools",
        rows=[("system", "You are helpful.", {}), ("user", "Weather?", {}), ("assistant", "", {}), ("tool", '{"t": 21}', {})],
        user_id="caroline",
    )
    assert coverage_of(api, "tools")["searchable"] is False
    services.conversation_embed(tenant=tenant, conversation_id="tools")
    found = coverage_of(api, "tools")
    assert (found["messages"], found["embedded"], found["searchable"]) == (1, 1, True)


def test_only_vectors_of_the_tenants_current_model_count(api, tenant):
    conversation_with_messages(tenant, "c1", 2, user_id="caroline")
    services.conversation_embed(tenant=tenant, conversation_id="c1", model="all-MiniLM-L6-v2-plain")
    assert MessageEmbedding.objects.for_tenant(tenant).count() == 2
    assert status_of(api)["not_embedded"] == 2
    services.conversation_embed(tenant=tenant, conversation_id="c1")
    assert status_of(api)["searchable"] is True


def test_a_deployment_without_an_embedding_model_has_nothing_waiting_for_a_vector(api, tenant, settings):
    settings.MEMORY_EMBEDDING_MODEL = ""
    conversation_with_messages(tenant, "c1", 2, user_id="caroline")
    status = status_of(api)
    assert (status["embedding_model"], status["messages"], status["not_embedded"], status["searchable"]) == (None, 2, 0, True)


def test_another_tenant_sees_none_of_the_messages_or_pending_writes(api, other_api, tenant, no_worker):
    append_history(api)
    conversation_with_messages(tenant, "persisted", 2, user_id="caroline")

    assert other_api.get("/api/v1/conversations/c1/").status_code == 404
    theirs = status_of(other_api)
    assert (theirs["messages"], theirs["pending_persist"], theirs["searchable"], theirs["reason"]) == (0, 0, False, "no_messages")
    ours = status_of(api)
    assert (ours["messages"], ours["pending_persist"]) == (2, 3)


def test_an_unknown_user_answers_zeros_not_searchable_for_want_of_messages_and_an_impossible_user_id_is_a_404(api):
    assert status_of(api, "nobody") == {
        "user_id": "nobody",
        "embedding_model": "all-MiniLM-L6-v2",
        "messages": 0,
        "embedded": 0,
        "not_embedded": 0,
        "pending_persist": 0,
        "searchable": False,
        "reason": "no_messages",
        "oldest_not_embedded_at": None,
        "embedding_waiting": None,
    }
    response = api.get(f"/api/v1/users/{'u' * (settings.MEMORY_MAX_ID_LENGTH + 1)}/search/status/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("erase", ["conversation", "messages"])
def test_a_user_whose_messages_were_all_erased_has_nothing_to_search(api, tenant, erase):
    conversation_with_messages(tenant, "c1", 2, user_id="caroline")
    services.conversation_embed(tenant=tenant, conversation_id="c1")
    assert status_of(api)["searchable"] is True

    url = "/api/v1/conversations/c1/" if erase == "conversation" else "/api/v1/conversations/c1/messages/"
    assert api.delete(url).status_code == 200

    status = status_of(api)
    assert (status["messages"], status["searchable"], status["reason"]) == (0, False, "no_messages")
    if erase == "messages":  # the conversation stays, with nothing in it to search
        assert (coverage_of(api)["searchable"], coverage_of(api)["reason"]) == (False, "no_messages")


def test_archived_messages_are_still_searched(api, tenant):
    conversation_with_messages(tenant, "c1", 2, user_id="caroline")
    services.conversation_embed(tenant=tenant, conversation_id="c1")
    Message.objects.for_tenant(tenant).update(archived=True)

    status = status_of(api)
    assert (status["messages"], status["searchable"], status["reason"]) == (2, True, None)


def test_a_history_of_system_and_tool_messages_only_has_nothing_to_search(api, tenant, no_worker):
    only_tools = [{"role": "system", "content": "Be brief."}, {"role": "tool", "content": "42", "tool_call_id": "call-1"}]
    append_history(api, messages=only_tools)
    run_queued_tasks()

    status = status_of(api)
    assert (status["messages"], status["pending_persist"], status["searchable"], status["reason"]) == (0, 0, False, "no_messages")


def test_with_redis_unreachable_the_reason_is_that_the_pending_writes_are_unknown(tenant):
    conversation_with_messages(tenant, "c1", 2, user_id="caroline")
    services.conversation_embed(tenant=tenant, conversation_id="c1")
    with redis_unreachable():
        found = coverage.user_coverage(tenant=tenant, user_id="caroline")
    assert (found.searchable, found.reason) == (False, "pending_unknown")


def metric(text: str, name: str, tenant: str | None = None) -> float | None:
    start = f'{name}{{tenant="{tenant}"}} ' if tenant else f"{name} "
    values = [float(line[len(start) :]) for line in text.splitlines() if line.startswith(start)]
    return values[0] if values else None


def test_metrics_show_the_derived_queue_and_how_long_messages_wait_for_their_vector(api, client, tenant, no_worker):
    take_queued_tasks(settings.MEMORY_DERIVED_QUEUE)
    append_history(api)
    run_queued_tasks()  # persisted: a vector task and a summary check wait in the derived queue
    Message.objects.for_tenant(tenant).update(persisted_at=timezone.now() - timedelta(seconds=90))

    waiting = client.get("/metrics", **SCRAPER)
    assert waiting.status_code == 200
    text = waiting.content.decode()
    assert metric(text, "memory_derived_queue_depth") == 2
    assert metric(text, "memory_embedding_backlog_messages", "acme") == 2
    assert 90 <= metric(text, "memory_embedding_lag_seconds", "acme") < 3600

    run_embedding(tenant)
    text = client.get("/metrics", **SCRAPER).content.decode()
    assert metric(text, "memory_derived_queue_depth") == 0
    assert metric(text, "memory_embedding_backlog_messages", "acme") == 0
    assert metric(text, "memory_embedding_lag_seconds", "acme") == 0


def test_the_backlog_leaves_out_messages_older_than_the_backfills_day(client, tenant):
    conversation_with_messages(tenant, "old", 2)
    Message.objects.for_tenant(tenant).update(persisted_at=timezone.now() - timedelta(days=2))
    text = client.get("/metrics", **SCRAPER).content.decode()
    assert metric(text, "memory_embedding_backlog_messages", "acme") == 0


def test_with_redis_unreachable_the_pending_writes_are_unknown_and_nothing_claims_to_be_searchable(tenant):
    conversation_with_messages(tenant, "c1", 2, user_id="caroline")
    services.conversation_embed(tenant=tenant, conversation_id="c1")
    with redis_unreachable():
        found = coverage.user_coverage(tenant=tenant, user_id="caroline")
    assert (found.embedded, found.not_embedded, found.pending_persist, found.searchable) == (2, 0, None, False)


def test_the_openapi_schema_documents_the_status_and_the_conversations_coverage(client):
    schema = json.loads(client.get("/api/schema/", {"format": "json"}).content)
    status = schema["paths"]["/api/v1/users/{user_id}/search/status/"]["get"]
    assert status["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/UserSearchStatus")
    detail = schema["paths"]["/api/v1/conversations/{conversation_id}/"]["get"]["responses"]["200"]
    name = detail["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert "search_coverage" in schema["components"]["schemas"][name]["properties"]
    coverage_fields = schema["components"]["schemas"]["SearchCoverage"]["properties"]
    assert {"messages", "embedded", "not_embedded", "pending_persist", "searchable", "reason", "oldest_not_embedded_at"} <= set(
        coverage_fields
    )
    assert "no_messages" in coverage_fields["reason"]["description"]
