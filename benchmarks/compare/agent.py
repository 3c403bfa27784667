"""The agent's other hot operations over HTTP: the context with long-term memory on a user of 6,000
messages, and the LangGraph store's put, get and search, through gunicorn at 1 and 8 concurrent clients.

``agent_user_ensure`` gives the tenant ``bench-agent`` one user (``agent-user-<messages>``) whose
conversations hold ``messages`` messages, 200 a conversation (``benchmarks/compare/workload.py``'s
content, a conversation a day), appended through the service and persisted by a Celery worker, then
every message embedded with the real embedding model (``MODEL``, MEMORY_EMBEDDING_MODEL's default:
all-MiniLM-L6-v2 on onnxruntime) as the derived worker would, two conversations at a time in this
process. Like ``cold.py``'s store, the user is reused: a second call finds the persisted conversations
and their vectors and only does what is missing (a conversation an interrupted fill left short is
erased and filled again). ``agent_store_ensure`` puts ``STORE_ITEMS`` items in each of ``STORE_USERS``
namespaces of the store (embedded as a put embeds them), also reused.

``agent_figures`` starts gunicorn with the model on (the rest of ``python -m benchmarks.compare``
runs without one), drives it with ``http.drive`` and measures, at each client count:

* ``context, use_memory``: ``POST /api/v1/conversations/<user>-asking/context/`` with
  ``{"use_memory": true, "query": <question>, "max_tokens": 4000}`` from a new, empty conversation of
  the user (the first turn of a session), so the search behind the memory bundle covers all the
  user's conversations (``search.selectors``: the ``auto`` scope takes the user's while the
  conversation holds fewer than 50 messages). The query is embedded, BM25 and the vectors rank the
  user's messages, the facts, summaries and extracted memories are read, and the context is built;
  such a context is never served from the context cache. The size column is the user's messages.
* ``store put``: ``PUT /api/v1/store/items/``, an upsert of one of a namespace's items with a new value
  (``{"text": <one to three sentences>, "kind": ...}``, indexed on ``text``): the text is embedded
  within the request. Puts replace existing items, so the store keeps its size from run to run.
* ``store get``: ``GET /api/v1/store/items/?namespace=...&key=...`` of an existing item.
* ``store search``: ``POST /api/v1/store/search/`` under one namespace with a query (embedded within
  the request) and ``limit`` 10, ranked by BM25 and the vectors. The size column of the store rows is
  the items of the namespace.

Every query (context and store search alike) is a different question (``questions``): the server
keeps the vectors of queries it has seen, so a repeated one would measure that memo, not the model.
Each row holds p50, p95, p99 and requests per second; Redis round trips and SQL statements per
request are counted in process (``http.in_process_counts``, the model on there too), and the notes
hold the CPU ms per request of gunicorn and of the load generator. The targets (``agent_targets``):
the context's p95 under 50 ms at 8 clients, store put p50 under 10 ms and store search p50 under 20 ms
at 1 client.

``python -m benchmarks.compare.agent`` makes the user and the store (or finds them), runs the figures,
prints them with a profile of the in-process requests and the targets, and empties the derived queue
(the fill queues derived work that nothing here consumes). It needs the benchmark's own resources:

    DATABASE_URL=postgres://.../<bench db> REDIS_URL=redis://127.0.0.1:6379/<n> MEMORY_QUEUE=<bench queue> \\
    MEMORY_DERIVED_QUEUE=<bench derived queue> .venv/bin/python -m benchmarks.compare.agent [--messages 6000] \\
        [--context-requests 400] [--store-requests 1000] [--clients 1 8] [--workers 2] [--threads 4] \\
        [--profile 50] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import json
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from django.conf import settings
from tqdm import tqdm

from benchmarks.compare import http
from benchmarks.compare.http import Load, Request
from benchmarks.compare.measure import Figures, summarise
from benchmarks.compare.workload import SENTENCES, messages
from torture.processes import CeleryWorker, wait_until

SYSTEM = http.SYSTEM
TENANT_SLUG = "bench-agent"
MODEL = "all-MiniLM-L6-v2"  # search.embeddings.LOCAL_MODEL, MEMORY_EMBEDDING_MODEL's default
USER_MESSAGES = 6_000
PER_CONVERSATION = 200
CLIENTS = 8  # the concurrent clients of the context's target
MAX_TOKENS = 4_000
EMBEDDING_THREADS = 2  # conversations embedded at once while filling: onnxruntime releases the GIL while it works
STORE_ROOT = "bench-agent"
STORE_USERS = 20
STORE_ITEMS = 50  # items of each user's namespace
STORE_KINDS = ("preference", "fact", "plan")
SEARCH_LIMIT = 10
CONTEXT_WARM_UP = 40  # requests before each timed context phase: every gunicorn worker loads the model and the user's vectors
STORE_WARM_UP = 100
PROFILE_WARM_UP = 10

CONTEXT = "context, use_memory"
STORE_PUT = "store put"
STORE_GET = "store get"
STORE_SEARCH = "store search"
CONTEXT_PATH = "/api/v1/conversations/{conversation_id}/context/"
STORE_ITEMS_PATH = "/api/v1/store/items/"
STORE_SEARCH_PATH = "/api/v1/store/search/"

# The targets: the context's p95 at CLIENTS clients, store put and search p50 at 1 client (ms).
CONTEXT_P95_MS = 50
STORE_PUT_P50_MS = 10
STORE_SEARCH_P50_MS = 20

# The questions asked: every combination once (3,600) before any is asked again.
QUESTION_OPENERS = (
    "What did we say about",
    "Remind me what we decided about",
    "When did I last ask about",
    "Did you find anything new on",
    "What is still open about",
    "Can you summarise what you know about",
    "Who was involved in",
    "What changed with",
    "Was there any news on",
    "What did the customer want regarding",
)
QUESTION_SUBJECTS = (
    "the delivery status of my order",
    "the refund for the cancelled booking",
    "the budget for the second quarter",
    "the marketing spend for the launch",
    "my flight to Lisbon",
    "the hotel reservation",
    "the hotels near the old town",
    "the meeting with the support team",
    "the ticket history",
    "how the customer likes to be contacted",
    "the subscription plans",
    "the duplicated charge on the invoice",
)
QUESTION_TIMES = (
    "",
    " last week",
    " in May",
    " on Thursday",
    " yesterday",
    " this month",
    " before the renewal",
    " after the launch",
    " in the spring",
    " at the start of the year",
)
QUESTION_ENDS = ("?", ", please?", " and what is left to do?")


@dataclass(frozen=True)
class AgentUser:
    """The user the context is asked for: ``messages`` persisted and ``embedded`` of them with ``model``."""

    tenant: Any  # tenants.models.Tenant
    user_id: str
    conversations: list[str]
    asking: str  # a conversation of the user without messages, where the context is asked
    messages: int
    embedded: int
    model: str
    seconds: dict[str, float]  # what this call did and how long it took: fill, embed, analyze


@dataclass(frozen=True)
class AgentStore:
    namespaces: list[tuple[str, ...]]
    keys: list[str]  # the keys of every namespace
    items: int
    seconds: dict[str, float]


@dataclass
class AgentResults:
    """What ``agent_figures`` measured: one row per operation and client count."""

    figures: list[Figures]
    rss_mb: dict[str, float]
    errors: int = 0  # answers that were not 200, over every timed phase
    server: str = ""
    profile: str = ""
    notes: dict[str, Any] = field(default_factory=dict)


# --- The workload -------------------------------------------------------------------------------


def questions(rng: random.Random) -> Iterator[str]:
    """Questions of the kind the workload's conversations answer, each once in an order of ``rng``
    (3,600 of them), then round again."""
    asked = [
        f"{opener} {subject}{when}{end}"
        for opener, subject, when, end in itertools.product(QUESTION_OPENERS, QUESTION_SUBJECTS, QUESTION_TIMES, QUESTION_ENDS)
    ]
    rng.shuffle(asked)
    return itertools.cycle(asked)


def memory_value(rng: random.Random) -> dict[str, str]:
    """A store item's value as an agent keeps a memory: one to three sentences, and a kind."""
    return {"text": " ".join(rng.sample(SENTENCES, rng.randint(1, 3))), "kind": rng.choice(STORE_KINDS)}


# --- The user -----------------------------------------------------------------------------------


def agent_user_ensure(*, messages: int = USER_MESSAGES, model: str = MODEL) -> AgentUser:
    """The user ``agent-user-<messages>`` of the tenant bench-agent with ``messages`` messages (whole
    conversations of ``PER_CONVERSATION``) persisted and embedded with ``model``; fills and embeds only
    what is missing."""
    from django.db import connection

    from conversations import services
    from conversations.models import Conversation, Message
    from search.filters import SEARCHED_ROLES
    from search.models import MessageEmbedding
    from tenants import services as tenant_services
    from tenants.models import Tenant

    tenant = Tenant.objects.filter(slug=TENANT_SLUG).first() or tenant_services.tenant_create(
        slug=TENANT_SLUG, name="Agent benchmark"
    )
    user_id = f"agent-user-{messages}"
    asking = f"{user_id}-asking"
    wanted = max(1, round(messages / PER_CONVERSATION))
    seconds: dict[str, float] = {}
    stored = Conversation.objects.for_tenant(tenant).filter(user_id=user_id).exclude(conversation_id=asking)
    for conversation_id in stored.exclude(message_count=PER_CONVERSATION).values_list("conversation_id", flat=True):
        services.conversation_erase(tenant=tenant, conversation_id=conversation_id)  # left short by an interrupted fill
    complete = stored.filter(message_count=PER_CONVERSATION).count()
    if complete < wanted:
        started = time.perf_counter()
        _fill(tenant=tenant, user_id=user_id, first=complete, count=wanted - complete, days=wanted)
        seconds["fill"] = round(time.perf_counter() - started, 1)
    conversations = list(
        stored.filter(message_count=PER_CONVERSATION).order_by("created_at").values_list("conversation_id", flat=True)
    )
    services.conversation_ensure(tenant=tenant, conversation_id=asking, user_id=user_id)

    searched = (
        Message.objects.for_tenant(tenant).filter(conversation__user_id=user_id, role__in=SEARCHED_ROLES).exclude(content="")
    )
    vectors = MessageEmbedding.objects.for_tenant(tenant).filter(conversation__user_id=user_id, model=model)
    missing = searched.count() - vectors.count()
    if missing > 0:
        started = time.perf_counter()
        _embed(tenant=tenant, conversation_ids=conversations, model=model, missing=missing)
        seconds["embed"] = round(time.perf_counter() - started, 1)
    if seconds:
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE conversation_memories, conversation_messages, message_embeddings")
        seconds["vacuum analyze"] = round(time.perf_counter() - started, 1)
    return AgentUser(
        tenant=tenant,
        user_id=user_id,
        conversations=conversations,
        asking=asking,
        messages=Message.objects.for_tenant(tenant).filter(conversation__user_id=user_id).count(),
        embedded=vectors.count(),
        model=model,
        seconds=seconds,
    )


def _fill(*, tenant: Any, user_id: str, first: int, count: int, days: int) -> None:
    """``count`` conversations of ``PER_CONVERSATION`` messages, the conversation ``first + n`` begun
    ``days - first - n`` days ago, appended through the service and persisted by a worker of our own."""
    from conversations import services
    from conversations.models import Message

    worker = CeleryWorker(env=http.service_env(log_level="WARNING"), name="bench-agent-fill", **http.WRITE_WORKER)
    worker.start()
    try:
        expected = Message.objects.for_tenant(tenant).filter(conversation__user_id=user_id).count()
        today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
        with tqdm(total=count * PER_CONVERSATION, desc=f"filling {user_id}", unit="message") as progress:
            for index in range(first, first + count):
                conversation_id = f"{user_id}-{uuid.uuid4().hex[:8]}"
                began = today - timedelta(days=days - index)
                generated = [
                    item | {"created_at": began + timedelta(seconds=45 * position)}
                    for position, item in enumerate(messages(random.Random(conversation_id), PER_CONVERSATION))
                ]
                for start in range(0, PER_CONVERSATION, settings.MEMORY_MAX_BATCH):
                    batch = generated[start : start + settings.MEMORY_MAX_BATCH]
                    services.message_append(tenant=tenant, conversation_id=conversation_id, messages=batch, user_id=user_id)
                    progress.update(len(batch))
        expected += count * PER_CONVERSATION
        wait_until(
            lambda: Message.objects.for_tenant(tenant).filter(conversation__user_id=user_id).count() >= expected,
            timeout=http.PERSIST_TIMEOUT,
            message=f"the {expected:,} messages of {user_id} to be persisted",
        )
    finally:
        worker.stop()


def _embed(*, tenant: Any, conversation_ids: list[str], model: str, missing: int) -> None:
    """Embed what the conversations lack, as the derived worker does (``search.services.conversation_embed``),
    ``EMBEDDING_THREADS`` conversations at a time."""
    from django.db import connections
    from django.test import override_settings

    from search.services import conversation_embed

    def embed(conversation_id: str) -> int:
        try:
            return conversation_embed(tenant=tenant, conversation_id=conversation_id, model=model)
        finally:
            connections.close_all()  # this thread's connection

    with (
        override_settings(MEMORY_EMBEDDING_MODEL=model),
        ThreadPoolExecutor(max_workers=EMBEDDING_THREADS) as pool,
        tqdm(total=missing, desc=f"embedding with {model}", unit="message") as progress,
    ):
        for done in as_completed([pool.submit(embed, conversation_id) for conversation_id in conversation_ids]):
            progress.update(done.result())


# --- The store ----------------------------------------------------------------------------------


def agent_store_ensure(*, tenant: Any, model: str = MODEL, rng: random.Random | None = None) -> AgentStore:
    """``STORE_ITEMS`` items in each of ``STORE_USERS`` namespaces ``(bench-agent, user-NN, memories)``,
    each embedded with ``model``; puts only those missing."""
    from django.test import override_settings

    from store import services
    from store.models import StoreItem

    rng = rng or random.Random(1)
    namespaces = [(STORE_ROOT, f"user-{number:02d}", "memories") for number in range(STORE_USERS)]
    keys = [f"memory-{number:03d}" for number in range(STORE_ITEMS)]
    stored = StoreItem.objects.for_tenant(tenant).filter(namespace__0=STORE_ROOT, embedding_model=model)
    present = {(tuple(namespace), key) for namespace, key in stored.values_list("namespace", "key")}
    missing = [(namespace, key) for namespace in namespaces for key in keys if (namespace, key) not in present]
    seconds: dict[str, float] = {}
    if missing:
        started = time.perf_counter()
        with (
            override_settings(MEMORY_EMBEDDING_MODEL=model),
            tqdm(total=len(missing), desc="store items", unit="item") as progress,
        ):
            for start in range(0, len(missing), settings.MEMORY_MAX_BATCH):
                batch = missing[start : start + settings.MEMORY_MAX_BATCH]
                operations = [
                    services.PutOperation(namespace=namespace, key=key, value=memory_value(rng), index=["text"])
                    for namespace, key in batch
                ]
                services.store_batch(tenant=tenant, operations=operations)
                progress.update(len(batch))
        seconds["fill"] = round(time.perf_counter() - started, 1)
    return AgentStore(namespaces=namespaces, keys=keys, items=stored.count(), seconds=seconds)


# --- The requests -------------------------------------------------------------------------------


def context_requests(user: AgentUser, *, count: int, asked: Iterator[str]) -> list[Request]:
    path = CONTEXT_PATH.format(conversation_id=user.asking)
    return [
        ("POST", path, json.dumps({"use_memory": True, "query": next(asked), "max_tokens": MAX_TOKENS}).encode())
        for _ in range(count)
    ]


def put_requests(store: AgentStore, *, count: int, rng: random.Random) -> list[Request]:
    return [
        (
            "PUT",
            STORE_ITEMS_PATH,
            json.dumps(
                {
                    "namespace": list(rng.choice(store.namespaces)),
                    "key": rng.choice(store.keys),
                    "value": memory_value(rng),
                    "index": ["text"],
                }
            ).encode(),
        )
        for _ in range(count)
    ]


def item_path(namespace: tuple[str, ...], key: str) -> str:
    return STORE_ITEMS_PATH + "?" + urlencode([("namespace", label) for label in namespace] + [("key", key)])


def get_requests(store: AgentStore, *, count: int, rng: random.Random) -> list[Request]:
    return [("GET", item_path(rng.choice(store.namespaces), rng.choice(store.keys)), None) for _ in range(count)]


def search_requests(store: AgentStore, *, count: int, rng: random.Random, asked: Iterator[str]) -> list[Request]:
    return [
        (
            "POST",
            STORE_SEARCH_PATH,
            json.dumps(
                {"namespace_prefix": list(rng.choice(store.namespaces)), "query": next(asked), "limit": SEARCH_LIMIT}
            ).encode(),
        )
        for _ in range(count)
    ]


# --- The figures --------------------------------------------------------------------------------


def agent_figures(
    *,
    user: AgentUser,
    store: AgentStore,
    context_count: int,
    store_count: int,
    rng: random.Random,
    clients: tuple[int, ...] = (1, CLIENTS),
    web_workers: int = 2,
    web_threads: int = 4,
    profile: int = 0,
) -> AgentResults:
    """The context with use_memory (``context_count`` requests) and store put, get and search
    (``store_count`` each) over HTTP at each client count, through gunicorn with ``user.model`` on.
    With ``profile`` > 0, ``results.profile`` holds a cProfile of that many in-process requests of each kind."""
    from django.test import override_settings

    from tenants import services as tenant_services

    api_key, key = http.api_key_for(slug=TENANT_SLUG)
    web = http.BenchWebServer(
        env=http.service_env(log_level="WARNING") | {"MEMORY_EMBEDDING_MODEL": user.model},
        name="bench-agent",
        workers=web_workers,
        threads=web_threads,
    )
    asked = questions(rng)
    try:
        web.start()
        results = asyncio.run(
            _load_phases(
                web=web,
                key=key,
                user=user,
                store=store,
                context_count=context_count,
                store_count=store_count,
                rng=rng,
                asked=asked,
                clients=clients,
            )
        )
        rss, pss = http.resident_mb(web.process.pid)
        results.rss_mb = {"gunicorn": rss, "gunicorn pss": pss}
        results.server = web.description + f", MEMORY_EMBEDDING_MODEL={user.model}"
        with override_settings(MEMORY_EMBEDDING_MODEL=user.model):
            _add_counts(results.figures, key=key, user=user, store=store, rng=rng, asked=asked)
            if profile:
                results.profile = request_profile(key=key, user=user, store=store, count=profile, rng=rng, asked=asked)
        return results
    finally:
        web.stop()
        tenant_services.api_key_revoke(api_key=api_key)


async def _load_phases(
    *,
    web: http.BenchWebServer,
    key: str,
    user: AgentUser,
    store: AgentStore,
    context_count: int,
    store_count: int,
    rng: random.Random,
    asked: Iterator[str],
    clients: tuple[int, ...],
) -> AgentResults:
    # Idle connections are dropped before gunicorn's keep-alive closes them (see http._load_phases).
    connector = aiohttp.TCPConnector(limit=max(clients) * 2, limit_per_host=max(clients) * 2, keepalive_timeout=1.0)
    headers = {"Authorization": f"Api-Key {key}", "Content-Type": "application/json"}
    figures: list[Figures] = []
    async with aiohttp.ClientSession(
        web.url, connector=connector, headers=headers, timeout=aiohttp.ClientTimeout(total=60)
    ) as session:

        async def phase(
            operation: str, *, size: int, count: int, requests: int, warm_up: int, make: Callable[[int], list[Request]]
        ) -> Figures:
            label = f"HTTP {operation} x{count}"
            await http.drive(session, requests=make(warm_up), clients=count, expected=200, label="warm-up")
            cpu_before = http.cpu_seconds(web=web, worker=None)
            load = await http.drive(session, requests=make(requests), clients=count, expected=200, label=label)
            cpu_after = http.cpu_seconds(web=web, worker=None)
            http.report_failures(load, label=label)
            row = _figures(operation, size=size, clients=count, load=load)
            row.notes["cpu_ms_per_request"] = {
                name: round((cpu_after[name] - cpu_before[name]) * 1000 / len(load.samples), 3) for name in cpu_after
            }
            return row

        for count in clients:
            figures.append(
                await phase(
                    CONTEXT,
                    size=user.messages,
                    count=count,
                    requests=context_count,
                    warm_up=CONTEXT_WARM_UP,
                    make=lambda n: context_requests(user, count=n, asked=asked),
                )
            )
        makers: list[tuple[str, Callable[[int], list[Request]]]] = [
            (STORE_PUT, lambda n: put_requests(store, count=n, rng=rng)),
            (STORE_GET, lambda n: get_requests(store, count=n, rng=rng)),
            (STORE_SEARCH, lambda n: search_requests(store, count=n, rng=rng, asked=asked)),
        ]
        for operation, make in makers:
            for count in clients:
                figures.append(
                    await phase(
                        operation, size=len(store.keys), count=count, requests=store_count, warm_up=STORE_WARM_UP, make=make
                    )
                )
    return AgentResults(
        figures=figures,
        rss_mb={},
        errors=sum(row.notes["non_2xx"] for row in figures),
        notes={
            "user": {
                "user_id": user.user_id,
                "conversations": len(user.conversations),
                "messages": user.messages,
                "embedded": user.embedded,
                "model": user.model,
            },
            "store": {"namespaces": len(store.namespaces), "items": store.items},
        },
    )


def _figures(operation: str, *, size: int, clients: int, load: Load) -> Figures:
    row = summarise(SYSTEM, operation, size=size, clients=clients, samples=load.samples, elapsed=load.elapsed)
    row.notes = {"non_2xx": load.failures} | ({"statuses": dict(load.statuses)} if load.failures else {})
    return row


def _add_counts(
    figures: list[Figures], *, key: str, user: AgentUser, store: AgentStore, rng: random.Random, asked: Iterator[str]
) -> None:
    """Fill each row's Redis and SQL statements per request from in-process requests of the same kind."""
    (_, context_path, context_body), *_ = context_requests(user, count=1, asked=asked)
    (_, put_path, put_body), *_ = put_requests(store, count=1, rng=rng)
    (_, search_path, search_body), *_ = search_requests(store, count=1, rng=rng, asked=asked)
    measured = {
        CONTEXT: http.in_process_counts(key=key, path=context_path, body=context_body),
        STORE_PUT: http.in_process_counts(key=key, path=put_path, body=put_body, method="PUT"),
        STORE_GET: http.in_process_counts(key=key, path=item_path(store.namespaces[0], store.keys[0]), body=None),
        STORE_SEARCH: http.in_process_counts(key=key, path=search_path, body=search_body),
    }
    for row in figures:
        row.redis_calls, row.sql_queries = measured[row.operation]


def request_profile(
    *, key: str, user: AgentUser, store: AgentStore, count: int, rng: random.Random, asked: Iterator[str], top: int = 25
) -> str:
    """Where each kind of request spends its time: ``count`` of them through ``django.test.Client``
    (gunicorn's request path minus the HTTP parsing), timed, then again under cProfile; every query new."""
    from django.test import Client, override_settings

    client = Client(HTTP_AUTHORIZATION=f"Api-Key {key}")

    def send(request: Request) -> int:
        method, path, body = request
        if body is None:
            return client.get(path).status_code
        return client.generic(method, path, data=body, content_type="application/json").status_code

    kinds: list[tuple[str, Callable[[int], list[Request]]]] = [
        (f"{CONTEXT} ({user.messages:,} messages of the user)", lambda n: context_requests(user, count=n, asked=asked)),
        (STORE_PUT, lambda n: put_requests(store, count=n, rng=rng)),
        (STORE_GET, lambda n: get_requests(store, count=n, rng=rng)),
        (STORE_SEARCH, lambda n: search_requests(store, count=n, rng=rng, asked=asked)),
    ]
    sections = []
    with override_settings(MEMORY_RATE_LIMIT=http.RATE_LIMIT):
        for label, make in kinds:
            statuses = Counter(send(request) for request in make(PROFILE_WARM_UP))
            timed = make(count)
            started_cpu, started = time.process_time(), time.perf_counter()
            statuses.update(send(request) for request in timed)
            cpu_ms = (time.process_time() - started_cpu) * 1000 / count
            wall_ms = (time.perf_counter() - started) * 1000 / count
            profiled = make(count)
            profiler = cProfile.Profile()
            profiler.enable()
            statuses.update(send(request) for request in profiled)
            profiler.disable()
            sections.append(
                f"{label}: {wall_ms:.2f} ms wall, {cpu_ms:.2f} ms CPU per request without the profiler; statuses {dict(statuses)}\n"
                + http.profile_table(profiler, requests=count, top=top)
            )
    return "\n".join(sections)


# --- The targets --------------------------------------------------------------------------------


def _row(rows: list[Figures], operation: str, *, clients: int) -> Figures | None:
    return next((row for row in rows if row.system == SYSTEM and row.operation == operation and row.clients == clients), None)


def agent_targets(rows: list[Figures]) -> list[tuple[str, str, bool | None]]:
    """The targets of the agent's rows that were measured, each with its figure and whether it is met."""
    checks: list[tuple[str, str, bool | None]] = []
    context = _row(rows, CONTEXT, clients=CLIENTS)
    if context is not None:
        checks.append(
            (
                f"context with use_memory on a {context.size:,}-message user: p95 < {CONTEXT_P95_MS} ms at {CLIENTS} clients over HTTP",
                f"p95 {context.p95_ms} ms ({context.per_second:,.0f}/s)",
                context.p95_ms < CONTEXT_P95_MS,
            )
        )
    put = _row(rows, STORE_PUT, clients=1)
    if put is not None:
        checks.append(
            (f"store put p50 < {STORE_PUT_P50_MS} ms over HTTP (1 client)", f"{put.p50_ms} ms", put.p50_ms < STORE_PUT_P50_MS)
        )
    search = _row(rows, STORE_SEARCH, clients=1)
    if search is not None:
        checks.append(
            (
                f"store search p50 < {STORE_SEARCH_P50_MS} ms over HTTP (1 client)",
                f"{search.p50_ms} ms",
                search.p50_ms < STORE_SEARCH_P50_MS,
            )
        )
    return checks


# --- python -m benchmarks.compare.agent ----------------------------------------------------------


def print_results(results: AgentResults, *, user: AgentUser, store: AgentStore) -> None:
    done = ", ".join(f"{step} {seconds:,.1f} s" for step, seconds in (user.seconds | store.seconds).items()) or "reused"
    print(
        f"\nuser {user.user_id}: {user.messages:,} messages in {len(user.conversations)} conversations, {user.embedded:,} "
        f"embedded with {user.model}; store: {store.items:,} items in {len(store.namespaces)} namespaces ({done})"
    )
    print(results.server)
    http.print_rows(results.figures, size="size", processes="gunicorn, load generator")
    print("size: the context's, messages of the user; the store's, items of the namespace.")
    print(f"resident memory (MB): {results.rss_mb}")
    print("\n| target | measured | met |\n|---|---|---|")
    for description, figure, met in agent_targets(results.figures):
        print(f"| {description} | {figure} | {'yes' if met else ('no' if met is False else '')} |")
    if results.errors:
        print(f"\nERROR: {results.errors} requests did not answer 200; the figures above are not valid.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare.agent", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=USER_MESSAGES, help="messages of the user (whole conversations of 200)")
    parser.add_argument("--context-requests", type=int, default=400, help="timed context requests per client count")
    parser.add_argument("--store-requests", type=int, default=1_000, help="timed store requests per operation and client count")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, CLIENTS], help="concurrent clients")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker (above 1: gthread)")
    parser.add_argument("--profile", type=int, default=50, help="in-process requests of each kind to profile (0: none)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from benchmarks.database import standalone_setup

    standalone_setup(embedding_model=None)
    rng = random.Random(1)
    user = agent_user_ensure(messages=options.messages)
    store = agent_store_ensure(tenant=user.tenant)
    results = agent_figures(
        user=user,
        store=store,
        context_count=options.context_requests,
        store_count=options.store_requests,
        rng=rng,
        clients=tuple(options.clients),
        web_workers=options.workers,
        web_threads=options.threads,
        profile=options.profile,
    )
    print_results(results, user=user, store=store)
    if results.profile:
        print("\n" + results.profile)
    http.purge_derived_queue()
    if options.json:
        report = asdict(results) | {"targets": agent_targets(results.figures)}
        options.json.write_text(json.dumps(report, indent=2, default=str))
    return 1 if results.errors else 0


if __name__ == "__main__":
    sys.exit(main())
