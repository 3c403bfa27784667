"""Tenant isolation of the API, route by route, generated from the URL configuration.

Every route under ``/api/v1/`` is found by walking ``django.urls.get_resolver()`` (through every
include) with the HTTP methods its view class implements. Each (route, method) is called with
acme's key on globex's identifiers (globex's conversation, message, checkpoint, user and fact key).
``tenant_world`` builds globex's whole world first, through the API where there is one: persisted
messages, a memory document, a checkpoint with writes, facts with their history, a summary, vectors,
a tombstone, a cache repair, a dead letter, an operator; every piece of content carries a marker.
Every call must leave every row of globex (every table with a ``tenant`` column, found from the
models) and every Redis key under its prefix unchanged (``tenant_snapshot``), and its answer must
contain none of globex's markers, nor its slug, nor any of its ids the caller did not send itself.
What each route must answer is decided in ``RULES``; a route added later without a rule fails
``test_every_api_route_and_method_has_an_isolation_rule`` with its name.

With a twin world for acme under globex's very ids (conversation, user, checkpoint, fact key, even
message ids), every read answers acme's own content and nothing of globex's.

A user id is only a string: acme's ``customer-4821`` and globex's ``customer-4821`` are different
people. So a user-scoped read of globex's user id answers acme's user of that id (who has nothing),
and a write to globex's ids creates acme's own row of that id.

===================================  =======  ======  ==================================================
route                                method   status  what acme's key gets on globex's ids
===================================  =======  ======  ==================================================
api:root                             GET      200     the public index of the API; no tenant data
api:conversation-list                GET      200     acme's conversations only: an empty page
api:conversation-list                POST     201     acme's own conversation of globex's id
api:conversation-detail              GET      404     not found
api:conversation-detail              PATCH    404     not found, nothing changed
api:conversation-detail              DELETE   404     not found, nothing erased
api:conversation-memory              GET      404     not found
api:conversation-memory              PUT      200     acme's own conversation of that id, with the document
api:message-list                     GET      404     not found
api:message-list                     POST     201     acme's own conversation and message (even with
                                                      globex's message id: a new message, not a replay)
api:message-list                     DELETE   404     not found, nothing cleared
api:conversation-window              GET      404     not found
api:conversation-context             POST     404     not found (with memory and checkpoint asked for)
api:message-detail                   GET      404     not found
chat:conversation-chat               POST     201     acme's own conversation of that id; the model gets
                                                      none of globex's history, memory or facts
api:user-detail                      DELETE   200     acme's user of that id erased: every count 0
api:status                           GET      200     deployment-wide figures; no tenant data
checkpoints:checkpoint-list          GET      404     not found
checkpoints:checkpoint-list          POST     201     acme's own conversation and checkpoint
checkpoints:checkpoint-list          DELETE   404     not found, nothing deleted
checkpoints:checkpoint-latest        GET      404     not found
checkpoints:checkpoint-detail        GET      404     not found
checkpoints:checkpoint-writes        POST     404     not found, nothing written
search:conversation-search           GET      404     not found
search:user-search                   GET      200     acme's user of that id: no results
search:user-search-status            GET      200     acme's user of that id: no messages, none pending
search:conversation-search           POST     404     not found
search:user-search                   POST     200     acme's user of that id, filtered on globex's conversation
                                                      id: no results
summaries:summary-list               GET      404     not found
summaries:summary-list               POST     404     not found, nothing summarised
facts:fact-list                      GET      200     acme's user of that id: no facts
facts:fact-list                      POST     201     acme's own fact
facts:fact-history-all               GET      200     acme's user of that id: an empty history
facts:fact-detail                    GET      404     not found
facts:fact-detail                    PUT      201     acme's own fact of that key
facts:fact-detail                    DELETE   404     not found, nothing deleted
facts:fact-history                   GET      404     not found (acme's user never had that key)
extraction:memory-list               GET      200     acme's user of that id: no memories
extraction:memory-detail             GET      404     not found
extraction:memory-detail             PATCH    404     not found, nothing corrected
extraction:memory-detail             DELETE   404     not found, nothing taken back
mcp_server:mcp                       POST     200     a tool error not_found (get_context on globex's
                                                      conversation; tests/mcp_server: every tool)
api-slashed-id:conversation-slashed-id  any   400     the refusal of a conversation id holding "/"
                                                      (globex's id followed by "/part/"), nothing changed
every route                          OPTIONS  200     the route's description; no tenant data
===================================  =======  ======  ==================================================

Without a valid key (none, an unknown one, globex's key prefix with another secret, globex's revoked
key, globex's expired key) every route answers 401 and changes nothing, except ``api:root``, the
public index, which answers 200 to GET and OPTIONS with no tenant data. ``api:status`` needs a key.

Outside the API and the admin, the routes anyone may call (found from the URL configuration: the
schema, the docs, the metrics) must tell an anonymous caller nothing of any tenant. ``/metrics``
names tenants, so it answers only a scraper holding ``MEMORY_METRICS_TOKEN`` (401 to anyone else).
"""

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from django.apps import apps
from django.conf import settings
from django.db import models
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from django_redis import get_redis_connection
from rest_framework.test import APIClient
from rest_framework.views import APIView

from checkpoints.models import Checkpoint
from conversations.api.views import TenantAPIView
from conversations.models import CacheRepair, Conversation, Message
from conversations.services import dead_letter_record
from extraction.models import ExtractionUsage, Memory
from extraction.services import Operation, memories_apply, messages_read
from facts.models import UserFact
from search.services import conversation_embed
from store.models import StoreItem
from summaries.services import summary_create_now
from tenants import services as tenant_services
from tenants.models import Tenant, TenantApiKey, TenantUsage
from tests.conftest import client_for, run_queued_tasks, take_queued_tasks

pytestmark = pytest.mark.django_db


# --- A whole world of one tenant, and snapshots of it -------------------------------------------------

OPERATOR_PASSWORD = "a-long-password-1"


@dataclass
class World:
    """What ``tenant_world`` made: the tenant's ids, and the markers its content carries."""

    tenant: Tenant
    conversation_id: str
    user_id: str
    checkpoint_id: str
    fact_key: str
    message_ids: list[str]
    # Words of the messages that are no marker: what a search for them would ask.
    search_words: str
    markers: dict[str, str] = field(default_factory=dict)
    # The memory an extractor read from the conversation (a UUID: never the same in two worlds).
    memory_id: str = ""
    # Other names of the tenant's that appear nowhere in a request: its operator, its keys' prefixes.
    names: dict[str, str] = field(default_factory=dict)

    @property
    def message_id(self) -> str:
        return self.message_ids[0]

    @property
    def identifiers(self) -> dict[str, str]:
        """The tenant's ids by the URL parameter that names them."""
        return {
            "conversation_id": self.conversation_id,
            "message_id": self.message_id,
            "checkpoint_id": self.checkpoint_id,
            "user_id": self.user_id,
            "key": self.fact_key,
            "memory_id": self.memory_id,
        }

    def forbidden(self, request_text: str = "", *, ids: bool = True) -> dict[str, str]:
        """What another tenant's answer must not contain: every marker, the tenant's slug and names, and
        its ids (unless ``ids`` is false: the other tenant has a twin world of the same ids); but for
        what the caller sent itself, which an answer may echo (an id in the path, a search term)."""
        found = {f"marker {name}": value for name, value in self.markers.items()}
        found["tenant slug"] = self.tenant.slug
        found.update(self.names)
        if ids:
            found.update({f"id {name}": value for name, value in self.identifiers.items()})
            found.update({f"id message {index}": value for index, value in enumerate(self.message_ids)})
        return {name: value for name, value in found.items() if value not in request_text}


def tenant_world(tenant: Tenant, *, number: int, message_ids: list[str] | None = None) -> World:
    """Fill every tenant-owned table of ``tenant`` (a table added later and left empty fails here).
    Its ids are made of ``number`` (and its message ids are ``message_ids`` when given), so that two
    tenants' worlds may have the same ids or not."""
    client = client_for(tenant)
    secret = f"{tenant.slug}-secret"
    world = World(
        tenant=tenant,
        conversation_id=f"support-chat-{number}",
        user_id=f"customer-{number}",
        checkpoint_id=f"step-{number}-0001",
        fact_key=f"favourite_fruit_{number}",
        message_ids=message_ids or [str(uuid.uuid4()) for _ in range(4)],
        search_words="pineapple invoice",
        markers={
            name: f"{secret}-{name.replace(' ', '-')}"
            for name in (
                "conversation metadata",
                "question",
                "answer",
                "message metadata",
                "memory",
                "memory metadata",
                "checkpoint state",
                "checkpoint metadata",
                "checkpoint write",
                "fact value",
                "store namespace",
                "store value",
                "fact old value",
                "other fact value",
                "agent",
                "dead letter",
                "extracted memory",
            )
        },
    )
    marks = world.markers

    def ok(answer: Any) -> Any:
        assert answer.status_code in (200, 201, 204), answer.content
        return answer

    conversations = "/api/v1/conversations/"
    conversation = f"{conversations}{world.conversation_id}/"
    ok(
        client.post(
            conversations,
            {
                "conversation_id": world.conversation_id,
                "user_id": world.user_id,
                "agent_id": marks["agent"],
                "metadata": {"note": marks["conversation metadata"]},
            },
            format="json",
        )
    )
    ok(
        client.post(
            f"{conversation}messages/",
            {
                "messages": [
                    {
                        "id": message_id,
                        "role": "user" if index % 2 == 0 else "assistant",
                        "content": f"{marks['question' if index % 2 == 0 else 'answer']} {index}: the {world.search_words}",
                        "metadata": {"source": marks["message metadata"]},
                    }
                    for index, message_id in enumerate(world.message_ids)
                ]
            },
            format="json",
        )
    )
    ok(
        client.put(
            f"{conversation}memory/",
            {"messages": [{"role": "user", "content": marks["memory"]}], "metadata": {"topic": marks["memory metadata"]}},
            format="json",
        )
    )
    ok(
        client.post(
            f"{conversation}checkpoints/",
            {
                "checkpoint_id": world.checkpoint_id,
                "state": {"channel_values": {"notes": marks["checkpoint state"]}},
                "metadata": {"step": marks["checkpoint metadata"]},
            },
            format="json",
        )
    )
    ok(
        client.post(
            f"{conversation}checkpoints/{world.checkpoint_id}/writes/",
            {"task_id": "task-1", "writes": [{"idx": 0, "channel": "notes", "value": marks["checkpoint write"]}]},
            format="json",
        )
    )
    facts = f"/api/v1/users/{world.user_id}/facts/"
    ok(client.put(f"{facts}{world.fact_key}/", {"value": marks["fact old value"]}, format="json"))
    ok(client.put(f"{facts}{world.fact_key}/", {"value": marks["fact value"]}, format="json"))
    ok(client.post(facts, {"facts": {"home_city": marks["other fact value"]}}, format="json"))
    # A LangGraph store item, its namespace a marker too (namespace listings answer nothing else).
    store_item = {**store_address(world), "value": {"text": f"{world.search_words} {marks['store value']}"}}
    ok(client.put("/api/v1/store/items/", store_item, format="json"))
    # An erased conversation leaves its tombstone.
    ok(client.post(f"{conversations}erased-{number}/messages/", {"role": "user", "content": "gone"}, format="json"))
    run_queued_tasks()
    ok(client.delete(f"{conversations}erased-{number}/"))

    # The derived memory is made here and now, not by the tasks the persist queued for it.
    take_queued_tasks(settings.MEMORY_DERIVED_QUEUE)
    summary_create_now(tenant=tenant, conversation_id=world.conversation_id)
    assert conversation_embed(tenant=tenant, conversation_id=world.conversation_id) > 0
    # A memory an extractor read from the conversation (its history and the conversation's watermark with it).
    stored = Conversation.objects.for_tenant(tenant).get(conversation_id=world.conversation_id)
    read = messages_read(tenant=tenant, conversation=stored)
    extracted = memories_apply(
        tenant=tenant,
        conversation=stored,
        read_through_seq=stored.last_seq,
        read=read,
        operations=[
            Operation(
                op="add", kind="fact", subject=world.user_id, text=marks["extracted memory"], sources=(str(read[0].message_id),)
            )
        ],
        model="scripted",
    )
    assert extracted.added == 1
    world.memory_id = str(Memory.objects.for_tenant(tenant).get(user_id=world.user_id).memory_id)
    ExtractionUsage.objects.for_tenant(tenant).create(tenant=tenant, day=date(2025, 1, 1), calls=1, tokens=100)
    TenantUsage.objects.for_tenant(tenant).create(tenant=tenant, day=date(2025, 1, 1), searches=1, model_tokens=100)
    # What the workers and the sweeper leave behind: a conversation whose cache missed a write, and
    # a task that failed for good.
    CacheRepair.objects.for_tenant(tenant).create(tenant=tenant, conversation_id=world.conversation_id)
    dead_letter_record(
        task_name="conversations.tasks.messages_persist",
        payload={"tenant_id": tenant.pk, "tenant_slug": tenant.slug, "conversation_id": world.conversation_id, "messages": []},
        error=marks["dead letter"],
        attempts=5,
    )
    # The key of the tenant's chat model provider: no API shows it, and each admin shows its own only.
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret=f"{secret}-provider-credential")
    operator = tenant_services.operator_create(tenant=tenant, username=f"{tenant.slug}-operator", password=OPERATOR_PASSWORD)
    world.names["operator"] = operator.username
    for index, prefix in enumerate(TenantApiKey.objects.filter(tenant=tenant).values_list("prefix", flat=True)):
        world.names[f"api key prefix {index}"] = prefix
    empty = [model._meta.label for model in tenant_owned_models() if not _rows(model, tenant).exists()]
    assert not empty, f"The world has no row of {empty}: fill them here so that their isolation is tested"
    return world


@pytest.fixture
def globex_world(other_tenant: Tenant) -> World:
    """globex's whole world: what acme's key must never reach."""
    return tenant_world(other_tenant, number=4821)


@pytest.fixture
def acme_twin_world(tenant: Tenant, globex_world: World) -> World:
    """acme's own world under the very same ids as globex's: the same conversation, user, checkpoint,
    fact key and even message ids name different things in two tenants."""
    return tenant_world(tenant, number=4821, message_ids=globex_world.message_ids)


# --- Snapshots --------------------------------------------------------------------------------------


def tenant_owned_models() -> list[type[models.Model]]:
    """Every model with a ``tenant`` foreign key, and the tenant itself."""
    owned = [
        model
        for model in apps.get_models()
        if any(field.name == "tenant" and field.related_model is Tenant for field in model._meta.concrete_fields)
    ]
    return [Tenant, *sorted(owned, key=lambda model: model._meta.label)]


def _rows(model: type[models.Model], tenant: Tenant) -> models.QuerySet:
    if model is Tenant:
        return Tenant.objects.filter(pk=tenant.pk)
    # Every row of the tenant, whatever the model's default manager scopes: the snapshot must see all.
    manager = model.unscoped if hasattr(model, "unscoped") else model._base_manager
    return manager.filter(tenant=tenant).order_by("pk")


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | memoryview):
        return bytes(value).hex()
    return str(value)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=_plain).encode()).hexdigest()


def redis_snapshot(tenant: Tenant) -> dict[str, str]:
    """Every Redis key under the tenant's prefix with a digest of its value (TTLs left out: they run down)."""
    redis = get_redis_connection("default")
    found = {}
    for key in redis.scan_iter(match=f"{tenant.slug}:*", count=1000):
        kind = redis.type(key).decode()
        found[key.decode()] = _digest([kind, _redis_value(redis, key, kind)])
    return found


def _redis_value(redis: Any, key: bytes, kind: str) -> Any:
    if kind == "string":
        return redis.get(key)
    if kind == "list":
        return redis.lrange(key, 0, -1)
    if kind == "hash":
        return sorted(redis.hgetall(key).items())
    if kind == "set":
        return sorted(redis.smembers(key))
    if kind == "zset":
        return redis.zrange(key, 0, -1, withscores=True)
    return None


def tenant_snapshot(tenant: Tenant) -> dict[str, Any]:
    """Row count and digest per tenant-owned table, and the tenant's Redis keys."""
    tables = {}
    for model in tenant_owned_models():
        rows = list(_rows(model, tenant).values())
        tables[model._meta.db_table] = (len(rows), _digest(rows))
    return {"tables": tables, "redis": redis_snapshot(tenant)}


def assert_unchanged(before: dict[str, Any], after: dict[str, Any], *, what: str) -> None:
    changed = [table for table in before["tables"] if before["tables"][table] != after["tables"].get(table)]
    redis_changed = sorted({key for key, _ in set(before["redis"].items()) ^ set(after["redis"].items())})
    assert not changed, f"{what} changed the other tenant's rows in {changed}"
    assert not redis_changed, f"{what} changed the other tenant's cache keys {redis_changed}"


def leaks(body: bytes, forbidden: dict[str, str]) -> list[str]:
    """The names of the forbidden strings found in an answer."""
    return [name for name, value in forbidden.items() if value.encode() in body]


# --- The routes ---------------------------------------------------------------------------------------


API_PREFIX = "api/v1/"
PUBLIC_ROUTES = {"api:root"}


@dataclass(frozen=True)
class Endpoint:
    name: str  # the namespaced URL name, e.g. "checkpoints:checkpoint-detail"
    route: str
    method: str
    view_class: type | None
    parameters: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.method)

    def __str__(self) -> str:
        return f"{self.method} {self.name}"


def url_patterns() -> list[tuple[str, str, URLPattern]]:
    """Every URL pattern of the project, through every include: (route, namespaced name, pattern)."""
    found: list[tuple[str, str, URLPattern]] = []

    def walk(patterns: list, prefix: str, namespaces: tuple[str, ...]) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = (*namespaces, pattern.namespace) if pattern.namespace else namespaces
                walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
            else:
                route = prefix + str(pattern.pattern)
                found.append((route, ":".join((*namespaces, pattern.name or route)), pattern))

    walk(get_resolver().url_patterns, "", ())
    return found


def api_endpoints() -> list[Endpoint]:
    """Every (route, method) under /api/v1/: the methods a view class has a handler for."""
    found: list[Endpoint] = []
    for route, name, pattern in url_patterns():
        if not route.startswith(API_PREFIX):
            continue
        view_class = getattr(pattern.callback, "view_class", None)
        parameters = tuple(getattr(pattern.pattern, "converters", {}))
        methods = [method for method in getattr(view_class, "http_method_names", ["*"]) if hasattr(view_class, method)]
        for method in methods or ["*"]:
            found.append(Endpoint(name, route, method.upper(), view_class, parameters))
    return found


ENDPOINTS = api_endpoints()


# --- What each route must answer acme on globex's ids ----------------------------------------------


@dataclass(frozen=True)
class Rule:
    status: int
    body: Callable[[World], dict[str, Any]] | None = None
    query: Callable[[World], dict[str, Any]] | None = None
    # What the answer must say beyond its status (an empty list for a user-scoped read).
    answer: Callable[[Any, World], bool] | None = None
    # The row of acme's that the write created (checked after the queued writes are persisted).
    creates: Callable[[Tenant, World], bool] | None = None
    # The path, for a route no identifiers reverse (the refusal of a conversation id holding "/").
    path: Callable[[World], str] | None = None


NOT_FOUND = Rule(404)
OWN_TEXT = "acme-own-words"


def _acme_conversation(tenant: Tenant, world: World) -> Conversation | None:
    return Conversation.objects.for_tenant(tenant).filter(conversation_id=world.conversation_id).first()


def _acme_memory_saved(tenant: Tenant, world: World) -> bool:
    conversation = _acme_conversation(tenant, world)
    return conversation is not None and conversation.memory["messages"] == [{"role": "user", "content": OWN_TEXT}]


def _acme_message_saved(tenant: Tenant, world: World) -> bool:
    return (
        Message.objects.for_tenant(tenant)
        .filter(conversation__conversation_id=world.conversation_id, message_id=world.message_id, content=OWN_TEXT)
        .exists()
    )


def _acme_checkpoint_saved(tenant: Tenant, world: World) -> bool:
    return (
        Checkpoint.objects.for_tenant(tenant)
        .filter(conversation__conversation_id=world.conversation_id, checkpoint_id=world.checkpoint_id, state={"step": 1})
        .exists()
    )


def _acme_fact_saved(tenant: Tenant, world: World) -> bool:
    return UserFact.objects.for_tenant(tenant).filter(user_id=world.user_id, key=world.fact_key, value=OWN_TEXT).exists()


def store_address(world: World) -> dict[str, Any]:
    return {"namespace": ["memories", world.markers["store namespace"]], "key": world.fact_key}


def _acme_store_item_saved(tenant: Tenant, world: World) -> bool:
    address = store_address(world)
    return StoreItem.objects.for_tenant(tenant).filter(**address, value={"text": OWN_TEXT}).exists()


def _nothing_erased(body: Any, world: World) -> bool:
    return body["user_id"] == world.user_id and all(value == 0 for name, value in body.items() if name.endswith("_erased"))


RULES: dict[tuple[str, str], Rule] = {
    ("api:root", "GET"): Rule(200),
    ("api:conversation-list", "GET"): Rule(200, answer=lambda body, world: body["count"] == 0 and body["results"] == []),
    ("api:conversation-list", "POST"): Rule(
        201,
        body=lambda world: {"conversation_id": world.conversation_id, "user_id": world.user_id},
        creates=lambda tenant, world: _acme_conversation(tenant, world) is not None,
    ),
    ("api:conversation-detail", "GET"): NOT_FOUND,
    ("api:conversation-detail", "PATCH"): Rule(404, body=lambda world: {"archived": True, "metadata": {"note": OWN_TEXT}}),
    ("api:conversation-detail", "DELETE"): NOT_FOUND,
    ("api:conversation-memory", "GET"): NOT_FOUND,
    ("api:conversation-memory", "PUT"): Rule(
        200,
        body=lambda world: {"messages": [{"role": "user", "content": OWN_TEXT}], "metadata": {}},
        creates=_acme_memory_saved,
    ),
    ("api:message-list", "GET"): NOT_FOUND,
    ("api:message-list", "POST"): Rule(
        201, body=lambda world: {"id": world.message_id, "role": "user", "content": OWN_TEXT}, creates=_acme_message_saved
    ),
    ("api:message-list", "DELETE"): NOT_FOUND,
    ("api:conversation-window", "GET"): NOT_FOUND,
    ("api:conversation-context", "POST"): Rule(
        404, body=lambda world: {"query": f"what about the {world.search_words}?", "use_memory": True, "checkpoint_namespace": ""}
    ),
    ("api:message-detail", "GET"): NOT_FOUND,
    ("chat:conversation-chat", "POST"): Rule(
        201,
        body=lambda world: {"content": f"Remember the {world.search_words}?", "use_memory": True},
        answer=lambda body, world: (
            body["history"]["messages"] == 0 and "given 0 earlier messages" in body["assistant_message"]["content"]
        ),
        creates=lambda tenant, world: (
            Message.objects.for_tenant(tenant)
            .filter(conversation__conversation_id=world.conversation_id, role="assistant")
            .exists()
        ),
    ),
    ("api:user-detail", "DELETE"): Rule(200, answer=_nothing_erased),
    ("api:status", "GET"): Rule(200),
    ("usage:usage", "GET"): Rule(200, answer=lambda body, world: body["tenant"] == "acme"),
    ("checkpoints:checkpoint-list", "GET"): NOT_FOUND,
    ("checkpoints:checkpoint-list", "POST"): Rule(
        201, body=lambda world: {"checkpoint_id": world.checkpoint_id, "state": {"step": 1}}, creates=_acme_checkpoint_saved
    ),
    ("checkpoints:checkpoint-list", "DELETE"): NOT_FOUND,
    ("checkpoints:checkpoint-latest", "GET"): NOT_FOUND,
    ("checkpoints:checkpoint-detail", "GET"): NOT_FOUND,
    ("checkpoints:checkpoint-writes", "POST"): Rule(
        404, body=lambda world: {"task_id": "task-1", "writes": [{"idx": 1, "channel": "notes", "value": OWN_TEXT}]}
    ),
    ("search:conversation-search", "GET"): Rule(404, query=lambda world: {"q": world.search_words}),
    ("search:user-search", "GET"): Rule(
        200, query=lambda world: {"q": world.search_words}, answer=lambda body, world: body["results"] == []
    ),
    ("search:user-search-status", "GET"): Rule(
        200,
        answer=lambda body, world: body["messages"] == 0 and body["pending_persist"] == 0 and body["reason"] == "no_messages",
    ),
    ("search:conversation-search", "POST"): Rule(404, body=lambda world: {"q": world.search_words}),
    ("search:user-search", "POST"): Rule(
        200,
        body=lambda world: {"q": world.search_words, "conversation_id": [world.conversation_id]},
        answer=lambda body, world: body["results"] == [],
    ),
    ("summaries:summary-list", "GET"): NOT_FOUND,
    ("summaries:summary-list", "POST"): NOT_FOUND,
    ("facts:fact-list", "GET"): Rule(200, answer=lambda body, world: body["facts"] == [] and body["total_tokens"] == 0),
    ("facts:fact-list", "POST"): Rule(201, body=lambda world: {"facts": {world.fact_key: OWN_TEXT}}, creates=_acme_fact_saved),
    ("facts:fact-history-all", "GET"): Rule(200, answer=lambda body, world: body["count"] == 0 and body["results"] == []),
    ("facts:fact-detail", "GET"): NOT_FOUND,
    ("facts:fact-detail", "PUT"): Rule(201, body=lambda world: {"value": OWN_TEXT}, creates=_acme_fact_saved),
    ("facts:fact-detail", "DELETE"): NOT_FOUND,
    ("facts:fact-history", "GET"): NOT_FOUND,
    ("extraction:memory-list", "GET"): Rule(200, answer=lambda body, world: body["count"] == 0 and body["results"] == []),
    ("extraction:memory-detail", "GET"): NOT_FOUND,
    ("extraction:memory-detail", "PATCH"): Rule(404, body=lambda world: {"text": OWN_TEXT}),
    ("extraction:memory-detail", "DELETE"): NOT_FOUND,
    ("mcp_server:mcp", "POST"): Rule(
        200,
        body=lambda world: {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "get_context",
                "arguments": {"conversation_id": world.conversation_id, "query": world.search_words, "use_memory": True},
            },
        },
        answer=lambda body, world: body["result"]["structuredContent"]["error"]["code"] == "not_found",
    ),
    ("store:store-batch", "POST"): Rule(
        200,
        body=lambda world: {
            "operations": [
                {"op": "get", **store_address(world)},
                {"op": "search", "namespace_prefix": [], "query": world.search_words},
                {"op": "list_namespaces"},
            ]
        },
        answer=lambda body, world: body["results"] == [None, [], []],
    ),
    ("store:store-item", "GET"): Rule(404, query=store_address),
    ("store:store-item", "PUT"): Rule(
        200, body=lambda world: {**store_address(world), "value": {"text": OWN_TEXT}}, creates=_acme_store_item_saved
    ),
    ("store:store-item", "DELETE"): Rule(204, query=lambda world: {"namespace": "memories", "key": world.fact_key}),
    ("store:store-search", "POST"): Rule(
        200,
        body=lambda world: {"namespace_prefix": [], "query": world.search_words},
        answer=lambda body, world: body["items"] == [],
    ),
    ("store:store-namespaces", "GET"): Rule(200, answer=lambda body, world: body["namespaces"] == []),
}
# OPTIONS describes a route (DRF's metadata), whatever its ids name.
RULES.update({(endpoint.name, "OPTIONS"): Rule(200) for endpoint in ENDPOINTS if endpoint.method == "OPTIONS"})
# Not a resource: the refusal of a conversation id holding "/" (globex's id followed by "/part/").
SLASHED_ID = "api-slashed-id:conversation-slashed-id"
RULES.update(
    {
        (SLASHED_ID, method): Rule(
            200 if method == "OPTIONS" else 400, path=lambda world: f"/api/v1/conversations/{world.conversation_id}/part/window/"
        )
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
    }
)


@dataclass(frozen=True)
class Call:
    path: str
    query: dict[str, Any]
    body: dict[str, Any] | None

    @property
    def text(self) -> str:
        """Everything the caller sent, for telling an echo from a leak."""
        return f"{self.path} {self.query} {self.body}"


def call_for(endpoint: Endpoint, rule: Rule, world: World) -> Call:
    if rule.path is not None:
        return Call(
            path=rule.path(world), query=rule.query(world) if rule.query else {}, body=rule.body(world) if rule.body else None
        )
    missing = [name for name in endpoint.parameters if name not in world.identifiers]
    assert not missing, f"{endpoint}: the world has no identifier for the URL parameter(s) {missing}; add one to World"
    path = reverse(endpoint.name, kwargs={name: world.identifiers[name] for name in endpoint.parameters})
    return Call(
        path=path,
        query=rule.query(world) if rule.query else {},
        body=rule.body(world) if rule.body else None,
    )


def send(client: APIClient, endpoint: Endpoint, call: Call) -> Any:
    send_method = getattr(client, endpoint.method.lower())
    if endpoint.method == "GET":
        return send_method(call.path, call.query)
    path = call.path + (f"?{urlencode(call.query)}" if call.query else "")
    return send_method(path, call.body, format="json") if call.body is not None else send_method(path)


# --- The route list is complete ---------------------------------------------------------------------


def test_every_api_route_and_method_has_an_isolation_rule():
    found = {endpoint.key for endpoint in ENDPOINTS}

    without_rule = sorted(f"{method} {name}" for name, method in found - set(RULES))
    stale = sorted(f"{method} {name}" for name, method in set(RULES) - found)

    assert not without_rule, f"API routes without an isolation rule (add them to RULES): {without_rule}"
    assert not stale, f"Rules for routes that no longer exist (remove them from RULES): {stale}"


def test_the_route_walk_finds_every_kind_of_api_route():
    names = {endpoint.name for endpoint in ENDPOINTS}

    assert {
        "api:conversation-list",
        "api:conversation-detail",
        "api:conversation-memory",
        "api:message-list",
        "api:message-detail",
        "api:conversation-window",
        "api:conversation-context",
        "api:user-detail",
        "api:status",
        "checkpoints:checkpoint-list",
        "checkpoints:checkpoint-latest",
        "checkpoints:checkpoint-detail",
        "checkpoints:checkpoint-writes",
        "search:conversation-search",
        "search:user-search",
        "summaries:summary-list",
        "facts:fact-list",
        "facts:fact-history-all",
        "facts:fact-detail",
        "facts:fact-history",
    } <= names
    assert ("facts:fact-detail", "PUT") in {endpoint.key for endpoint in ENDPOINTS}


def test_every_api_view_takes_its_tenant_from_the_api_key():
    """Class-based API views only, and all but the public index are TenantAPIViews."""
    not_api_views = sorted(
        {str(endpoint) for endpoint in ENDPOINTS if not (endpoint.view_class and issubclass(endpoint.view_class, APIView))}
    )
    untenanted = sorted(
        {
            endpoint.name
            for endpoint in ENDPOINTS
            if endpoint.name not in PUBLIC_ROUTES and not issubclass(endpoint.view_class or object, TenantAPIView)
        }
    )

    assert not not_api_views, f"API routes whose methods cannot be listed (not an APIView class): {not_api_views}"
    assert not untenanted, f"API views that are not TenantAPIViews: {untenanted}"


# --- acme's key on globex's ids ----------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=str)
def test_acmes_key_on_globexs_ids_reaches_nothing_of_globex(endpoint, api, tenant, other_tenant, globex_world):
    rule = RULES.get(endpoint.key)
    assert rule is not None, f"{endpoint} has no isolation rule: add one to RULES"
    call = call_for(endpoint, rule, globex_world)
    before = tenant_snapshot(other_tenant)

    answer = send(api, endpoint, call)
    run_queued_tasks()  # whatever the call queued is persisted, so a write that reached globex would show

    assert answer.status_code == rule.status, f"{endpoint} {call.path}: {answer.status_code} {answer.content[:300]!r}"
    found = leaks(answer.content, globex_world.forbidden(call.text))
    assert not found, f"{endpoint} answered acme with globex's {found}"
    assert_unchanged(before, tenant_snapshot(other_tenant), what=str(endpoint))
    if rule.answer is not None:
        assert rule.answer(answer.json(), globex_world), f"{endpoint}: {answer.json()}"
    if rule.creates is not None:
        assert rule.creates(tenant, globex_world), f"{endpoint} did not create acme's own row of globex's id"


def test_writes_to_globexs_conversation_id_make_acmes_own_conversation_and_globex_reads_its_own(
    api, other_api, tenant, other_tenant, globex_world
):
    conversation = f"/api/v1/conversations/{globex_world.conversation_id}/"
    before = tenant_snapshot(other_tenant)

    message = api.post(
        f"{conversation}messages/", {"id": globex_world.message_id, "role": "user", "content": OWN_TEXT}, format="json"
    )
    memory = api.put(f"{conversation}memory/", {"messages": [{"role": "user", "content": OWN_TEXT}]}, format="json")
    checkpoint = api.post(
        f"{conversation}checkpoints/", {"checkpoint_id": globex_world.checkpoint_id, "state": {"step": 1}}, format="json"
    )
    run_queued_tasks()

    assert (message.status_code, memory.status_code, checkpoint.status_code) == (201, 200, 201)
    assert_unchanged(before, tenant_snapshot(other_tenant), what="acme's writes")
    assert Conversation.objects.for_tenant(tenant).filter(conversation_id=globex_world.conversation_id).count() == 1
    assert _acme_message_saved(tenant, globex_world)
    assert _acme_memory_saved(tenant, globex_world)
    assert _acme_checkpoint_saved(tenant, globex_world)
    # Each tenant reads its own conversation of that id.
    acme_window = api.get(f"{conversation}messages/").json()["messages"]
    globex_window = other_api.get(f"{conversation}messages/").json()["messages"]
    assert [message["content"] for message in acme_window] == [OWN_TEXT]
    assert len(globex_window) == len(globex_world.message_ids)
    assert OWN_TEXT not in str(globex_window)
    assert other_api.get(f"{conversation}memory/").json()["messages"] == [
        {"role": "user", "content": globex_world.markers["memory"]}
    ]
    assert [c["checkpoint_id"] for c in other_api.get(f"{conversation}checkpoints/").json()["checkpoints"]] == [
        globex_world.checkpoint_id
    ]
    assert other_api.get(f"{conversation}checkpoints/latest/").json()["state"] != {"step": 1}


# --- The same ids in both tenants ----------------------------------------------------------------------

# Reads: every GET, and the context (a POST that only reads).
READS = [
    endpoint
    for endpoint in ENDPOINTS
    if (endpoint.method == "GET" or endpoint.key == ("api:conversation-context", "POST")) and endpoint.name != SLASHED_ID
]
# Reads that answer no tenant content at all (the search status and the usage only count: that the
# counts are the caller's own is tests/search/test_coverage.py's and tests/tenants/test_usage.py's).
NO_TENANT_CONTENT = {"api:root", "api:status", "search:user-search-status", "usage:usage"}


def test_with_the_same_ids_in_both_tenants_every_read_answers_acmes_own_and_nothing_of_globex(
    api, tenant, other_tenant, globex_world, acme_twin_world
):
    before = tenant_snapshot(other_tenant)
    wrong = []

    for endpoint in READS:
        call = call_for(endpoint, RULES.get(endpoint.key, Rule(200)), acme_twin_world)
        answer = send(api, endpoint, call)
        if answer.status_code != 200:
            wrong.append(f"{endpoint}: {answer.status_code} {answer.content[:200]!r}")
        if found := leaks(answer.content, globex_world.forbidden(ids=False)):
            wrong.append(f"{endpoint} answered acme with globex's {found}")
        own = [name for name, marker in acme_twin_world.markers.items() if marker.encode() in answer.content]
        if endpoint.name not in NO_TENANT_CONTENT and not own:
            wrong.append(f"{endpoint} answered none of acme's own content: {answer.content[:200]!r}")

    assert not wrong, wrong
    assert_unchanged(before, tenant_snapshot(other_tenant), what="acme's reads")


# --- Outside the API and the admin -------------------------------------------------------------------

# Routes outside /api/v1/ and the admin that anyone may call (schema, docs, metrics), found from the
# URL configuration like the API's.
OPEN_ROUTES = sorted(
    route
    for route, _, pattern in url_patterns()
    if not route.startswith((API_PREFIX, settings.ADMIN_PATH)) and not getattr(pattern.pattern, "converters", None)
)
# Known leaks, each a strict xfail: the day it is fixed, the xfail fails and is removed.
KNOWN_LEAKS: dict[str, str] = {}
# Open routes that answer only a caller holding a token (the metrics scraper): refused to anyone else.
TOKEN_ROUTES = {"metrics"}


@pytest.mark.parametrize(
    "route",
    [
        pytest.param(route, marks=pytest.mark.xfail(strict=True, reason=KNOWN_LEAKS[route])) if route in KNOWN_LEAKS else route
        for route in OPEN_ROUTES
    ],
)
def test_an_anonymous_caller_of_an_open_route_learns_nothing_of_any_tenant(route, client, globex_world):
    answer = client.get(f"/{route}", follow=True)

    found = leaks(answer.content, globex_world.forbidden())
    assert answer.status_code == (401 if route in TOKEN_ROUTES else 200)
    assert not found, f"/{route} tells an anonymous caller globex's {found}"


# --- No valid key -------------------------------------------------------------------------------------


def _revoked_key(tenant: Tenant) -> str:
    api_key, key = tenant_services.api_key_create(tenant=tenant, name="revoked")
    tenant_services.api_key_revoke(api_key=api_key)
    return key


def _expired_key(tenant: Tenant) -> str:
    _, key = tenant_services.api_key_create(tenant=tenant, name="expired", expiry_date=timezone.now() - timedelta(minutes=1))
    return key


def _prefix_with_another_secret(tenant: Tenant) -> str:
    prefix = TenantApiKey.objects.filter(tenant=tenant).values_list("prefix", flat=True).first()
    return f"{prefix}.notTheSecretOfThisKeyAtAll0123"


CREDENTIALS: dict[str, Callable[[Tenant], str | None]] = {
    "no key": lambda tenant: None,
    "an unknown key": lambda tenant: "AbCdEfGh.notAKeyOfAnyTenant0123456789",
    "globex's prefix with another secret": _prefix_with_another_secret,
    "globex's revoked key": _revoked_key,
    "globex's expired key": _expired_key,
}


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_without_a_valid_key_every_route_but_the_public_index_is_a_401_and_changes_nothing(
    credential, other_tenant, globex_world
):
    key = CREDENTIALS[credential](other_tenant)
    client = APIClient()
    if key is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    before = tenant_snapshot(other_tenant)
    wrong = []

    for endpoint in ENDPOINTS:
        rule = RULES.get(endpoint.key, NOT_FOUND)
        call = call_for(endpoint, rule, globex_world)
        answer = send(client, endpoint, call)
        expected = 200 if endpoint.name in PUBLIC_ROUTES else 401
        found = leaks(answer.content, globex_world.forbidden(call.text))
        if answer.status_code != expected or found:
            wrong.append(f"{endpoint}: {answer.status_code} (expected {expected}){f', leaks {found}' if found else ''}")
    run_queued_tasks()

    assert not wrong, f"With {credential}: {wrong}"
    assert_unchanged(before, tenant_snapshot(other_tenant), what=f"requests with {credential}")
    assert not Conversation.unscoped.exclude(tenant=other_tenant).exists()  # nothing written for anyone: every tenant
