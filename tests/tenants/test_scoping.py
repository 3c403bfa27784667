"""Fail-closed tenancy: an unscoped query raises, another tenant's ids answer 404
on every endpoint and in every selector, and the tenant comes from the API key only.

``tenant`` (acme, client ``api``) is the caller; ``other_tenant`` (globex) owns the conversation
``shared``, whose id acme also uses for its own conversation in some tests.
"""

import uuid
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db.models import Count
from django_redis import get_redis_connection

from conversations import selectors
from conversations.api.views import TenantAPIView
from conversations.models import Conversation, Message
from core.exceptions import NotFound
from tenants.managers import TenantScopeError
from tests.conftest import run_tasks, take_queued_tasks
from tests.factories import message_payload

CONVERSATIONS = "/api/v1/conversations/"


def redis_state(tenant_slug: str) -> dict[str, Any]:
    """Every key of a tenant with its value (TTLs aside)."""
    connection = get_redis_connection("default")
    state: dict[str, Any] = {}
    for name in connection.scan_iter(match=f"{tenant_slug}:*"):
        kind = connection.type(name).decode()
        if kind == "string":
            state[name.decode()] = connection.get(name)
        elif kind == "list":
            state[name.decode()] = connection.lrange(name, 0, -1)
        elif kind == "hash":
            state[name.decode()] = connection.hgetall(name)
        else:
            state[name.decode()] = kind
    return state


def globex_state(other_tenant: Any) -> dict[str, Any]:
    return {
        "conversations": list(Conversation.objects.for_tenant(other_tenant).order_by("pk").values()),
        "messages": list(Message.objects.for_tenant(other_tenant).order_by("seq").values()),
        "redis": redis_state(other_tenant.slug),
    }


@pytest.fixture
def globex(api, other_api, tenant, other_tenant, no_worker) -> dict[str, Any]:
    """globex's conversation ``shared``: two persisted messages, one pending, a memory document, a
    warm cache. acme has its own conversation ``mine``."""
    other_api.post(
        CONVERSATIONS, {"conversation_id": "shared", "user_id": "globex-user", "agent_id": "globex-agent"}, format="json"
    )
    persisted = other_api.post(
        f"{CONVERSATIONS}shared/messages/",
        {"messages": [message_payload(content="globex secret one"), message_payload()]},
        format="json",
    ).json()["messages"]
    memory = other_api.put(f"{CONVERSATIONS}shared/memory/", {"messages": [{"content": "globex memory"}]}, format="json").json()
    run_tasks(take_queued_tasks())
    pending = other_api.post(f"{CONVERSATIONS}shared/messages/", message_payload(content="globex pending"), format="json").json()
    assert other_api.get(f"{CONVERSATIONS}shared/messages/").json()["count"] == 3  # warm
    api.post(CONVERSATIONS, {"conversation_id": "mine"}, format="json")
    return {
        "persisted_id": persisted[0]["id"],
        "pending_id": pending["messages"][0]["id"],
        "memory": memory,
        "state": globex_state(other_tenant),
    }


# --- The managers refuse unscoped queries -----------------------------------------------------------

UNSCOPED_QUERIES = {
    "all": lambda: list(Conversation.objects.all()),
    "count": lambda: Conversation.objects.count(),
    "filter exists": lambda: Conversation.objects.filter(conversation_id="c1").exists(),
    "filter on tenant without for_tenant": lambda: list(Conversation.objects.filter(tenant__slug="acme")),
    "first": lambda: Conversation.objects.first(),
    "values_list": lambda: list(Conversation.objects.values_list("conversation_id", flat=True)),
    "aggregate": lambda: Conversation.objects.aggregate(total=Count("id")),
    "iterator": lambda: next(Conversation.objects.iterator()),
    "get_or_create": lambda: Conversation.objects.get_or_create(conversation_id="c1"),
    "message get": lambda: Message.objects.get(content="hello"),
    "message update": lambda: Message.objects.update(content="overwritten"),
    "message delete": lambda: Message.objects.delete(),
    "message in_bulk": lambda: Message.objects.in_bulk(),
    "related manager": lambda: list(Conversation.unscoped.get(conversation_id="c1").messages.all()),
}


@pytest.fixture
def two_tenants_rows(tenant, other_tenant) -> None:
    for owner, conversation_id in ((tenant, "c1"), (other_tenant, "c-globex")):
        conversation = Conversation.unscoped.create(tenant=owner, conversation_id=conversation_id)
        Message.unscoped.create(
            tenant=owner, conversation=conversation, seq=1, role="user", content="hello", created_at="2024-01-01T00:00Z"
        )


@pytest.mark.parametrize("query", UNSCOPED_QUERIES.values(), ids=UNSCOPED_QUERIES.keys())
def test_a_query_without_a_tenant_raises(two_tenants_rows, query):
    with pytest.raises(TenantScopeError):
        query()

    assert Message.unscoped.filter(content="hello").count() == 2  # nothing was changed either


def test_for_tenant_none_raises(two_tenants_rows):
    with pytest.raises(TenantScopeError):
        Conversation.objects.for_tenant(None)


def test_for_tenant_sees_only_that_tenants_rows(two_tenants_rows, tenant, other_tenant):
    assert list(Conversation.objects.for_tenant(tenant).values_list("conversation_id", flat=True)) == ["c1"]
    assert list(Conversation.objects.for_tenant(other_tenant.pk).values_list("conversation_id", flat=True)) == ["c-globex"]
    assert Message.objects.for_tenant(tenant).update(content="changed") == 1
    assert Message.unscoped.get(tenant=other_tenant).content == "hello"


def test_an_async_iteration_without_a_tenant_raises(two_tenants_rows):
    async def read_all() -> list[Conversation]:
        return [conversation async for conversation in Conversation.objects.aiterator()]

    with pytest.raises(TenantScopeError):
        async_to_sync(read_all)()


@pytest.mark.parametrize(
    "combine",
    [lambda scoped, other: scoped | other, lambda scoped, other: scoped.union(other), lambda scoped, other: other | scoped],
    ids=["or", "union", "unscoped first"],
)
def test_combining_a_scoped_query_with_an_unscoped_one_raises(two_tenants_rows, tenant, combine):
    with pytest.raises(TenantScopeError):
        list(combine(Conversation.objects.for_tenant(tenant), Conversation.objects.filter(conversation_id="c-globex")))


def test_combining_two_queries_of_the_same_tenant_works(two_tenants_rows, tenant):
    scoped = Conversation.objects.for_tenant(tenant)

    combined = scoped.filter(conversation_id="c1") | scoped.filter(conversation_id="c-globex")

    assert list(combined.values_list("conversation_id", flat=True)) == ["c1"]


def test_combining_queries_scoped_to_two_tenants_raises(two_tenants_rows, tenant, other_tenant):
    with pytest.raises(TenantScopeError):
        list(Conversation.objects.for_tenant(tenant) | Conversation.objects.for_tenant(other_tenant))


# --- The base view seals the tenant ---------------------------------------------------------------


@pytest.mark.parametrize("hook", ["initial", "tenant"])
def test_a_view_that_overrides_how_the_tenant_is_found_is_refused(hook):
    with pytest.raises(TypeError, match=hook):
        type("SneakyView", (TenantAPIView,), {hook: lambda self, *args, **kwargs: None})


def test_a_view_with_ordinary_handlers_is_allowed():
    view = type("PlainView", (TenantAPIView,), {"get": lambda self, request: None})

    assert issubclass(view, TenantAPIView)


# --- Every endpoint: another tenant's ids answer 404 and change nothing -------------------------------

CROSS_TENANT_REQUESTS = [
    ("get", "shared/", None),
    ("patch", "shared/", {"archived": True, "user_id": "acme-user"}),
    ("delete", "shared/", None),
    ("get", "shared/memory/", None),
    ("get", "shared/messages/", None),
    ("get", "shared/messages/?include_archived=true", None),
    ("get", "shared/messages/?role=user", None),
    ("get", "shared/messages/{persisted_id}/", None),
    ("get", "shared/messages/{pending_id}/", None),
    ("get", "mine/messages/{persisted_id}/", None),
    ("get", "mine/messages/{pending_id}/", None),
]


@pytest.mark.parametrize(("method", "path", "body"), CROSS_TENANT_REQUESTS, ids=[f"{m} {p}" for m, p, _ in CROSS_TENANT_REQUESTS])
def test_another_tenants_conversation_answers_404_and_is_left_unchanged(api, other_api, other_tenant, globex, method, path, body):
    url = CONVERSATIONS + path.format(**globex)

    answer = getattr(api, method)(url, body, format="json")

    assert answer.status_code == 404, answer.content
    assert answer.json()["error"]["code"] == "not_found"
    assert b"globex" not in answer.content
    assert globex_state(other_tenant) == globex["state"]
    assert other_api.get(f"{CONVERSATIONS}shared/memory/").json() == globex["memory"]
    assert other_api.get(f"{CONVERSATIONS}shared/messages/").json()["count"] == 3


def test_the_conversation_list_never_shows_another_tenants_rows(api, globex):
    everything = api.get(CONVERSATIONS).json()
    by_owner = api.get(CONVERSATIONS, {"user_id": "globex-user"}).json()
    by_agent = api.get(CONVERSATIONS, {"agent_id": "globex-agent"}).json()

    assert [conversation["conversation_id"] for conversation in everything["results"]] == ["mine"]
    assert everything["count"] == 1
    assert by_owner["results"] == []
    assert by_agent["results"] == []


def test_posting_to_another_tenants_conversation_id_makes_the_callers_own(api, other_api, tenant, other_tenant, globex):
    answer = api.post(f"{CONVERSATIONS}shared/messages/", message_payload(content="acme words"), format="json")
    acme_tasks = [task for task in take_queued_tasks() if task[1]["tenant_id"] == tenant.pk]
    run_tasks(acme_tasks)

    assert answer.status_code == 201, answer.content
    assert len(acme_tasks) == 1
    assert [message["content"] for message in api.get(f"{CONVERSATIONS}shared/messages/").json()["messages"]] == ["acme words"]
    assert list(
        Message.objects.for_tenant(tenant).filter(conversation__conversation_id="shared").values_list("content", flat=True)
    ) == ["acme words"]
    assert globex_state(other_tenant) == globex["state"]
    assert other_api.get(f"{CONVERSATIONS}shared/messages/").json()["count"] == 3


def test_saving_memory_under_another_tenants_conversation_id_makes_the_callers_own(api, other_api, tenant, other_tenant, globex):
    answer = api.put(f"{CONVERSATIONS}shared/memory/", {"messages": [{"content": "acme memory"}]}, format="json")
    run_tasks([task for task in take_queued_tasks() if task[1]["tenant_id"] == tenant.pk])

    assert answer.status_code == 200, answer.content
    assert api.get(f"{CONVERSATIONS}shared/memory/").json()["messages"] == [{"content": "acme memory"}]
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="shared").memory["messages"] == [
        {"content": "acme memory"}
    ]
    assert other_api.get(f"{CONVERSATIONS}shared/memory/").json() == globex["memory"]
    assert globex_state(other_tenant) == globex["state"]


def test_a_tenant_named_in_the_body_is_ignored(api, tenant, other_tenant):
    answer = api.post(
        CONVERSATIONS, {"conversation_id": "c1", "tenant": other_tenant.pk, "tenant_id": other_tenant.pk}, format="json"
    )

    assert answer.status_code == 201
    assert Conversation.objects.for_tenant(tenant).filter(conversation_id="c1").exists()
    assert not Conversation.objects.for_tenant(other_tenant).exists()


@pytest.mark.parametrize("which", ["persisted_id", "pending_id"])
def test_a_message_id_another_tenant_uses_names_a_new_message_and_both_persist(api, tenant, other_tenant, globex, which):
    message_id = globex[which]

    answer = api.post(f"{CONVERSATIONS}mine/messages/", message_payload(id=message_id, content="acme's own"), format="json")
    for task in sorted(take_queued_tasks(), key=lambda task: task[1]["tenant_id"] != tenant.pk):  # acme's task first
        run_tasks([task])

    assert answer.status_code == 201, answer.content
    assert b"globex" not in answer.content
    assert Message.objects.for_tenant(tenant).get(message_id=message_id).content == "acme's own"
    assert Message.objects.for_tenant(other_tenant).get(message_id=message_id).content != "acme's own"


# --- Every selector: another tenant's ids raise NotFound or return nothing ------------------------


def test_selectors_called_for_another_tenants_ids_find_nothing(tenant, globex):
    query = selectors.WindowQuery(limit=50)

    with pytest.raises(NotFound):
        selectors.conversation_window(tenant=tenant, conversation_id="shared", query=query)
    with pytest.raises(NotFound):
        selectors.conversation_window(
            tenant=tenant, conversation_id="shared", query=selectors.WindowQuery(limit=50, include_archived=True)
        )
    with pytest.raises(NotFound):
        selectors.conversation_get(tenant=tenant, conversation_id="shared")
    with pytest.raises(NotFound):
        selectors.memory_get(tenant=tenant, conversation_id="shared")
    for conversation_id in ("shared", "mine"):
        for message_id in (globex["persisted_id"], globex["pending_id"]):
            with pytest.raises(NotFound):
                selectors.message_get(tenant=tenant, conversation_id=conversation_id, message_id=message_id)
    assert [conversation.conversation_id for conversation in selectors.conversation_list(tenant=tenant)] == ["mine"]
    assert list(selectors.conversation_list(tenant=tenant, user_id="globex-user")) == []


def test_selectors_called_for_the_owner_find_its_data(other_tenant, globex):
    """The positive control of the test above: the same calls for globex find globex's data."""
    window = selectors.conversation_window(tenant=other_tenant, conversation_id="shared", query=selectors.WindowQuery(limit=50))

    assert len(window.messages) == 3
    assert selectors.conversation_get(tenant=other_tenant, conversation_id="shared").user_id == "globex-user"
    assert selectors.memory_get(tenant=other_tenant, conversation_id="shared") == globex["memory"]
    found = selectors.message_get(tenant=other_tenant, conversation_id="shared", message_id=globex["persisted_id"])
    assert found["content"] == "globex secret one"
    assert [conversation.conversation_id for conversation in selectors.conversation_list(tenant=other_tenant)] == ["shared"]
    assert uuid.UUID(globex["pending_id"])
