"""docs/api.md: the API guide, every answer in it recorded from the real API.

A scripted scenario (``scenario``) runs through the whole API the way a client would: a tenant and
its key made on the fly, requests through Django's full request stack (middleware, authentication,
throttling, the JSON error document), a real Celery worker persisting the writes and embedding them,
so that search, summaries and coverage answer as they would in a deployment. The chat model is the
stand-in the tests use (``tests/chat/fakes.py``, ``MEMORY_CHAT_MODEL=fake:echo``), which echoes.

Each request and its answer is recorded, then values that change from run to run are made stable
(ids the service generated, timestamps, seqs, timings) and the page is written, grouped by the
OpenAPI tags. ``PURPOSES`` holds one line per operation of the schema: an operation without one, or
without an example in the scenario, stops the generator (and ``tests/docs/test_api_guide.py`` fails
when the schema has an operation docs/api.md does not show).

Run ``python -m docs.generate api_guide`` from the repository root with the test settings' services
(PostgreSQL, Redis and RabbitMQ on 127.0.0.1, or ``DATABASE_URL``, ``REDIS_URL``, ``MEMORY_QUEUE``...):
it creates and drops a database of its own, and empties the Redis database and the queues it is
given, as the test suite does.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "docs" / "api.md"
BASE_URL = "http://127.0.0.1:8000"
PREFIX = "/api/v1"

# One line per operation of the OpenAPI schema: what it is for.
PURPOSES: dict[tuple[str, str], str] = {
    ("GET", "/api/v1/conversations/"): "List the tenant's conversations, newest first, filtered by user, agent or archived.",
    ("POST", "/api/v1/conversations/"): "Create a conversation ahead of its first message (an append also creates it).",
    ("GET", "/api/v1/conversations/{conversation_id}/"): "One conversation, with how much of it search covers.",
    ("PATCH", "/api/v1/conversations/{conversation_id}/"): "Change a conversation's user, agent, metadata or archived flag.",
    (
        "DELETE",
        "/api/v1/conversations/{conversation_id}/",
    ): "Erase a conversation everywhere: rows, vectors, cache keys, queued writes.",
    ("POST", "/api/v1/conversations/{conversation_id}/messages/"): "Append one message or a batch; 201 means durable.",
    ("GET", "/api/v1/conversations/{conversation_id}/messages/"): "The window: the newest messages, oldest first.",
    ("GET", "/api/v1/conversations/{conversation_id}/messages/{message_id}/"): "One message by its id.",
    (
        "DELETE",
        "/api/v1/conversations/{conversation_id}/messages/",
    ): "Clear the messages; the conversation, memory document and checkpoints stay.",
    (
        "POST",
        "/api/v1/conversations/{conversation_id}/context/",
    ): "The messages to send the model before its call, within a token budget.",
    ("GET", "/api/v1/conversations/{conversation_id}/window/"): "The newest messages in an LLM format, starting at a turn.",
    (
        "PUT",
        "/api/v1/conversations/{conversation_id}/memory/",
    ): "Save the conversation's memory document (messages and metadata).",
    ("GET", "/api/v1/conversations/{conversation_id}/memory/"): "Read the memory document.",
    (
        "POST",
        "/api/v1/conversations/{conversation_id}/checkpoints/",
    ): "Save a LangGraph checkpoint (or replace the one with this id).",
    (
        "GET",
        "/api/v1/conversations/{conversation_id}/checkpoints/",
    ): "The conversation's checkpoints, newest first, with their pending writes.",
    ("GET", "/api/v1/conversations/{conversation_id}/checkpoints/latest/"): "The newest checkpoint of a namespace.",
    ("GET", "/api/v1/conversations/{conversation_id}/checkpoints/{checkpoint_id}/"): "One checkpoint by its id.",
    ("POST", "/api/v1/conversations/{conversation_id}/checkpoints/{checkpoint_id}/writes/"): (
        "Store a task's pending writes against a checkpoint (idempotent per task and index)."
    ),
    ("DELETE", "/api/v1/conversations/{conversation_id}/checkpoints/"): "Delete the checkpoints of every namespace, or of one.",
    ("GET", "/api/v1/conversations/{conversation_id}/search/"): "Search a conversation's past (and its user's, by scope).",
    (
        "POST",
        "/api/v1/conversations/{conversation_id}/search/",
    ): "The same search with its parameters and filters in a JSON body.",
    ("GET", "/api/v1/users/{user_id}/search/"): "Search every conversation of one user.",
    ("POST", "/api/v1/users/{user_id}/search/"): "The same search with its parameters and filters in a JSON body.",
    ("GET", "/api/v1/users/{user_id}/search/status/"): "How much of a user's history search covers now.",
    ("POST", "/api/v1/conversations/{conversation_id}/summaries/"): "Summarise the conversation now.",
    ("GET", "/api/v1/conversations/{conversation_id}/summaries/"): "The conversation's summaries, newest first.",
    ("POST", "/api/v1/users/{user_id}/facts/"): "Set one fact about a user, or a batch (all or nothing).",
    ("GET", "/api/v1/users/{user_id}/facts/"): "The user's facts, most recently updated first.",
    ("GET", "/api/v1/users/{user_id}/facts/{key}/"): "One fact.",
    ("PUT", "/api/v1/users/{user_id}/facts/{key}/"): "Set one fact by its key.",
    ("DELETE", "/api/v1/users/{user_id}/facts/{key}/"): "Delete a fact; its history keeps the value.",
    ("GET", "/api/v1/users/{user_id}/facts/{key}/history/"): "The changes of one fact, newest first.",
    ("GET", "/api/v1/users/{user_id}/facts/history/"): "Every change of the user's facts, newest first.",
    ("GET", "/api/v1/users/{user_id}/memories/"): (
        "The memories extracted from the user's conversations, newest first or searched, and whether extraction runs."
    ),
    ("GET", "/api/v1/users/{user_id}/memories/{memory_id}/"): "One memory with its history.",
    (
        "PATCH",
        "/api/v1/users/{user_id}/memories/{memory_id}/",
    ): "Correct a memory by hand; the version replaced stays in its history.",
    ("DELETE", "/api/v1/users/{user_id}/memories/{memory_id}/"): "Take a memory back: no longer current, its history kept.",
    ("POST", "/api/v1/conversations/{conversation_id}/chat/"): (
        "The agent loop in one request: store the message, build the context, ask the model, store its answer."
    ),
    ("PUT", "/api/v1/store/items/"): "Create or replace a store item (an upsert by namespace and key).",
    ("GET", "/api/v1/store/items/"): "One store item.",
    ("DELETE", "/api/v1/store/items/"): "Delete a store item.",
    ("POST", "/api/v1/store/search/"): "Items under a namespace prefix, ranked by a query and filtered.",
    ("GET", "/api/v1/store/namespaces/"): "The namespaces holding items.",
    ("POST", "/api/v1/store/batch/"): "What LangGraph's BaseStore.batch sends: operations in order, in one transaction.",
    ("DELETE", "/api/v1/users/{user_id}/"): "Erase one user everywhere: conversations, messages, vectors, summaries, facts...",
    ("GET", "/api/v1/status/"): "Whether the backends answer, and the tenant's own figures.",
    ("GET", "/api/v1/usage/"): "The tenant's usage per UTC day: messages, searches, chat runs, model tokens, storage.",
}
# Operations the schema leaves out (no OpenAPI description), shown at the end of the guide.
UNDESCRIBED = ("/api/v1/", "/api/v1/mcp/")

USER = "ada"
TRIP = "trip-lisbon"
OTHER_TRIP = "trip-porto"
SCRATCH = "scratch-1"
CHECKPOINT = "1f0a6b2e-7c1d-6d3e-8001-5b1c2d3e4f50"
NEXT_CHECKPOINT = "1f0a6b2e-7c1d-6d3e-8002-5b1c2d3e4f50"
IDS = {name: str(uuid.uuid5(uuid.NAMESPACE_URL, f"api-guide/{name}")) for name in ("q1", "a1", "q2", "a2", "q3", "chat")}


@dataclass
class Example:
    method: str
    template: str  # the schema's path
    path: str  # the path sent, query string apart
    title: str
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    note: str = ""
    status: int = 0
    reason: str = ""
    answer: Any = None  # parsed JSON, or text (an event stream), or None (no body)
    content_type: str = ""


class Recorder:
    """Sends each request through the Django test client with the tenant's key, and keeps it."""

    def __init__(self, key: str) -> None:
        from django.test import Client

        self.client = Client()
        self.key = key
        self.examples: list[Example] = []

    def call(
        self,
        method: str,
        template: str,
        title: str,
        *,
        expect: int,
        path: str | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        note: str = "",
        authenticated: bool = True,
        record: bool = True,
    ) -> Any:
        from http import HTTPStatus

        path = path or template
        headers = dict(headers or {})
        if authenticated and "Authorization" not in headers:
            headers["Authorization"] = f"Api-Key {self.key}"
        url = path + ("?" + urlencode(query, doseq=True, quote_via=quote) if query else "")
        extra = {"headers": headers}
        if body is not None:
            response = self.client.generic(method, url, data=json.dumps(body), content_type="application/json", **extra)
        else:
            response = self.client.generic(method, url, **extra)
        content = b"".join(response.streaming_content) if response.streaming else response.content
        content_type = response.get("Content-Type", "")
        answer: Any = None
        if content:
            answer = json.loads(content) if "json" in content_type else content.decode()
        if response.status_code != expect:
            raise SystemExit(f"{method} {url}: expected {expect}, got {response.status_code}: {content[:500]!r}")
        if record:
            shown = {name: value for name, value in headers.items() if name != "Authorization" or "Bearer" in value}
            self.examples.append(
                Example(
                    method=method,
                    template=template,
                    path=path,
                    title=title,
                    query=query or {},
                    body=body,
                    headers=shown,
                    note=note,
                    status=response.status_code,
                    reason=HTTPStatus(response.status_code).phrase,
                    answer=answer,
                    content_type=content_type,
                )
            )
        return answer

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.2)
        raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what} (is the worker running? see its log)")

    def settled(self, user_id: str) -> None:
        """Wait until every write of the user is persisted and embedded, as the worker does it."""

        def done() -> bool:
            found = self.call(
                "GET",
                "/api/v1/users/{user_id}/search/status/",
                "",
                path=f"{PREFIX}/users/{user_id}/search/status/",
                expect=200,
                record=False,
            )
            return found["pending_persist"] == 0 and found["not_embedded"] == 0 and found["messages"] > 0

        self.wait_for(done, f"the writes of {user_id} to be persisted and embedded")


def scenario(r: Recorder) -> None:
    """A travel agent's conversations with Ada, through every operation of the API."""
    conversations = f"{PREFIX}/conversations"
    trip = f"{conversations}/{TRIP}"

    # The API root and the refusals every client meets first.
    r.call("GET", "/api/v1/", "The API root: what it offers (no key needed)", expect=200, authenticated=False)
    r.call("GET", "/api/v1/status/", "Without a key", expect=401, authenticated=False)

    # Conversations and messages.
    r.call(
        "POST",
        "/api/v1/conversations/",
        "Create a conversation",
        path=f"{conversations}/",
        body={"conversation_id": TRIP, "user_id": USER, "agent_id": "travel", "metadata": {"channel": "web"}},
        expect=201,
    )
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/messages/",
        "Append one message",
        path=f"{trip}/messages/",
        body={
            "id": IDS["q1"],
            "role": "user",
            "content": "Find me a quiet restaurant in Alfama for tonight",
            "metadata": {"topic": "food"},
            "user_id": USER,
            "agent_id": "travel",
        },
        expect=201,
    )
    batch = {
        "messages": [
            {
                "id": IDS["a1"],
                "role": "assistant",
                "content": "Try Taberna Sal Grosso: twelve tables, fado next door, book before 19:00.",
                "metadata": {"topic": "food"},
            },
            {"id": IDS["q2"], "role": "user", "content": "And a walk after dinner?", "metadata": {"topic": "walks"}},
            {
                "id": IDS["a2"],
                "role": "assistant",
                "content": "Walk up to the Miradouro de Santa Luzia: ten minutes, the river lit below.",
                "metadata": {"topic": "walks"},
            },
        ]
    }
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/messages/",
        "Append a batch, with your own ids",
        path=f"{trip}/messages/",
        body=batch,
        expect=201,
    )
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/messages/",
        "Resend the same batch (after a timeout, say)",
        path=f"{trip}/messages/",
        body=batch,
        expect=200,
        note="Every id was known: 200, the messages as stored the first time, with their seqs; nothing is stored twice.",
    )
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/messages/",
        "Another conversation of the same user",
        path=f"{conversations}/{OTHER_TRIP}/messages/",
        body={
            "messages": [
                {"role": "user", "content": "Which train goes from Lisbon to Porto?", "metadata": {"topic": "transport"}},
                {
                    "role": "assistant",
                    "content": "The Alfa Pendular from Santa Apolonia: under three hours, book a window seat on the left.",
                    "metadata": {"topic": "transport"},
                },
            ],
            "user_id": USER,
            "agent_id": "travel",
        },
        expect=201,
        note="Without ids the service gives each message one; such a write cannot be resent safely.",
    )
    r.call(
        "GET",
        "/api/v1/conversations/{conversation_id}/messages/",
        "The window",
        path=f"{trip}/messages/",
        query={"limit": 10},
        expect=200,
    )
    r.call(
        "GET",
        "/api/v1/conversations/{conversation_id}/messages/{message_id}/",
        "One message",
        path=f"{trip}/messages/{IDS['a1']}/",
        expect=200,
    )
    # What to send the model.
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/context/",
        "The context for the next call",
        path=f"{trip}/context/",
        body={"query": "Is it far from the restaurant?", "system_prompt": "You are a travel agent.", "max_tokens": 4000},
        expect=200,
    )
    r.call(
        "GET",
        "/api/v1/conversations/{conversation_id}/window/",
        "The window in OpenAI's format",
        path=f"{trip}/window/",
        query={"format": "openai", "limit": 4},
        expect=200,
    )
    r.call(
        "PUT",
        "/api/v1/conversations/{conversation_id}/memory/",
        "Save the memory document",
        path=f"{trip}/memory/",
        body={"messages": [{"role": "user", "content": "Dinner in Alfama"}], "metadata": {"plan": "dinner, then a walk"}},
        expect=200,
    )
    r.call("GET", "/api/v1/conversations/{conversation_id}/memory/", "Read it", path=f"{trip}/memory/", expect=200)

    # LangGraph checkpoints.
    checkpoints = f"{trip}/checkpoints"
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/checkpoints/",
        "Save a checkpoint",
        path=f"{checkpoints}/",
        body={
            "checkpoint_id": CHECKPOINT,
            "namespace": "",
            "parent_id": None,
            "state": {"v": 1, "channel_values": {"step": "dinner"}, "channel_versions": {"step": 1}},
            "metadata": {"source": "loop", "step": 1},
        },
        expect=201,
    )
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/checkpoints/{checkpoint_id}/writes/",
        "Store a task's pending writes",
        path=f"{checkpoints}/{CHECKPOINT}/writes/",
        body={
            "namespace": "",
            "task_id": "task-7",
            "task_path": "~__pregel_pull, plan",
            "writes": [{"idx": 0, "channel": "step", "value": "walk"}],
        },
        expect=200,
    )
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/checkpoints/",
        "Save the next checkpoint",
        path=f"{checkpoints}/",
        body={
            "checkpoint_id": NEXT_CHECKPOINT,
            "parent_id": CHECKPOINT,
            "state": {"v": 1, "channel_values": {"step": "walk"}, "channel_versions": {"step": 2}},
            "metadata": {"source": "loop", "step": 2},
        },
        expect=201,
    )
    r.call("GET", "/api/v1/conversations/{conversation_id}/checkpoints/", "List them", path=f"{checkpoints}/", expect=200)
    r.call(
        "GET",
        "/api/v1/conversations/{conversation_id}/checkpoints/latest/",
        "The newest of the root graph",
        path=f"{checkpoints}/latest/",
        expect=200,
    )
    r.call(
        "GET",
        "/api/v1/conversations/{conversation_id}/checkpoints/{checkpoint_id}/",
        "One by its id",
        path=f"{checkpoints}/{CHECKPOINT}/",
        expect=200,
    )

    # Once the worker has persisted and embedded the messages: the conversation as PostgreSQL has it, search.
    r.settled(USER)
    r.call("GET", "/api/v1/conversations/{conversation_id}/", "One conversation", path=f"{trip}/", expect=200)
    r.call(
        "PATCH",
        "/api/v1/conversations/{conversation_id}/",
        "Update its metadata",
        path=f"{trip}/",
        body={"metadata": {"channel": "web", "trip": "Lisbon, June"}},
        expect=200,
    )
    r.call(
        "GET",
        "/api/v1/conversations/",
        "A user's conversations, one page at a time",
        path=f"{conversations}/",
        query={"user_id": USER, "limit": 1},
        expect=200,
    )

    r.call(
        "GET",
        "/api/v1/users/{user_id}/search/status/",
        "What search covers",
        path=f"{PREFIX}/users/{USER}/search/status/",
        expect=200,
    )
    r.call(
        "GET",
        "/api/v1/conversations/{conversation_id}/search/",
        "Search a conversation",
        path=f"{trip}/search/",
        query={"q": "somewhere to eat", "top_k": 2},
        expect=200,
    )
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/search/",
        "With filters, in a body",
        path=f"{trip}/search/",
        body={"q": "evening walk with a view", "top_k": 3, "role": ["assistant"], "start_date": "2020-01-01T00:00:00Z"},
        expect=200,
    )
    r.call(
        "GET",
        "/api/v1/users/{user_id}/search/",
        "Search all of a user's conversations",
        path=f"{PREFIX}/users/{USER}/search/",
        query={"q": "train to Porto", "top_k": 2},
        expect=200,
    )
    r.call(
        "POST",
        "/api/v1/users/{user_id}/search/",
        "With filters on metadata and conversations",
        path=f"{PREFIX}/users/{USER}/search/",
        body={"q": "dinner", "mode": "hybrid", "metadata": {"topic": {"in": ["food", "walks"]}}, "conversation_id": [TRIP]},
        expect=200,
    )

    # Summaries.
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/summaries/",
        "Summarise now",
        path=f"{trip}/summaries/",
        expect=201,
        note="Without MEMORY_SUMMARY_MODEL the summary is rule-based, as here.",
    )
    r.call("GET", "/api/v1/conversations/{conversation_id}/summaries/", "List them", path=f"{trip}/summaries/", expect=200)

    # Facts.
    facts = f"{PREFIX}/users/{USER}/facts"
    r.call(
        "POST",
        "/api/v1/users/{user_id}/facts/",
        "Set a batch",
        path=f"{facts}/",
        body={"facts": {"home_city": "Madrid", "diet": "vegetarian"}},
        expect=201,
    )
    r.call(
        "POST",
        "/api/v1/users/{user_id}/facts/",
        "Set one",
        path=f"{facts}/",
        body={"key": "seat", "value": "window"},
        expect=201,
    )
    r.call(
        "PUT",
        "/api/v1/users/{user_id}/facts/{key}/",
        "Change one by its key",
        path=f"{facts}/home_city/",
        body={"value": "Lisbon"},
        expect=200,
        note="200: the fact existed; its previous value went to the history.",
    )
    r.call("GET", "/api/v1/users/{user_id}/facts/", "List them", path=f"{facts}/", expect=200)
    r.call("GET", "/api/v1/users/{user_id}/facts/{key}/", "One fact", path=f"{facts}/home_city/", expect=200)
    r.call("DELETE", "/api/v1/users/{user_id}/facts/{key}/", "Delete one", path=f"{facts}/diet/", expect=204)
    r.call(
        "GET",
        "/api/v1/users/{user_id}/facts/{key}/history/",
        "The history of one key",
        path=f"{facts}/home_city/history/",
        expect=200,
    )
    r.call(
        "GET",
        "/api/v1/users/{user_id}/facts/history/",
        "Every change",
        path=f"{facts}/history/",
        query={"limit": 2},
        expect=200,
    )

    # Extracted memories: the tenant's model reads Ada's trip (the tests' scripted stand-in, in-process).
    memories_extracted(TRIP)
    memories = f"{PREFIX}/users/{USER}/memories"
    listed = r.call("GET", "/api/v1/users/{user_id}/memories/", "The user's memories", path=f"{memories}/", expect=200)
    r.call(
        "GET",
        "/api/v1/users/{user_id}/memories/",
        "Search them, with filters",
        path=f"{memories}/",
        query={"query": "where does Ada like to eat", "top_k": 2, "kind": "preference"},
        expect=200,
    )
    quiet = next(memory["memory_id"] for memory in listed["results"] if memory["kind"] == "preference")
    walk = next(memory["memory_id"] for memory in listed["results"] if memory["kind"] == "event")
    r.call(
        "PATCH",
        "/api/v1/users/{user_id}/memories/{memory_id}/",
        "Correct one",
        path=f"{memories}/{quiet}/",
        body={"text": "Ada prefers quiet restaurants with fado nearby.", "confidence": 0.9},
        expect=200,
    )
    r.call(
        "GET",
        "/api/v1/users/{user_id}/memories/{memory_id}/",
        "One memory, with its history",
        path=f"{memories}/{quiet}/",
        expect=200,
    )
    r.call("DELETE", "/api/v1/users/{user_id}/memories/{memory_id}/", "Take one back", path=f"{memories}/{walk}/", expect=204)
    r.call(
        "GET",
        "/api/v1/users/{user_id}/memories/",
        "Those taken back too",
        path=f"{memories}/",
        query={"include_past": "true", "kind": "event"},
        expect=200,
    )

    # The chat endpoint.
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/chat/",
        "One turn",
        path=f"{trip}/chat/",
        body={
            "content": "Remember where I wanted to eat tonight?",
            "system_prompt": "You are a travel agent.",
            "user_id": USER,
            "message_id": IDS["chat"],
        },
        expect=201,
        note="Recorded with the stand-in chat model the tests use (it echoes); a deployment sets MEMORY_CHAT_MODEL.",
    )
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/chat/",
        "A turn, streamed (server-sent events)",
        path=f"{conversations}/{OTHER_TRIP}/chat/",
        body={"content": "Thanks!", "user_id": USER, "use_memory": False},
        headers={"Accept": "text/event-stream"},
        expect=200,
    )

    # The LangGraph store.
    item = {"namespace": ["users", USER], "key": "prefs"}
    r.call(
        "PUT",
        "/api/v1/store/items/",
        "Put an item",
        path=f"{PREFIX}/store/items/",
        body={**item, "value": {"text": "Prefers window seats and quiet restaurants", "seat": "window"}, "ttl": None},
        expect=200,
    )
    r.call(
        "GET",
        "/api/v1/store/items/",
        "Get it",
        path=f"{PREFIX}/store/items/",
        query={"namespace": item["namespace"], "key": "prefs"},
        expect=200,
    )
    r.call(
        "POST",
        "/api/v1/store/batch/",
        "A batch, as BaseStore.batch sends it",
        path=f"{PREFIX}/store/batch/",
        body={
            "operations": [
                {"op": "put", "namespace": ["users", USER, "trips"], "key": "lisbon", "value": {"text": "June, four nights"}},
                {"op": "get", "namespace": ["users", USER, "trips"], "key": "lisbon"},
                {"op": "list_namespaces", "prefix": ["users"], "max_depth": 3},
            ]
        },
        expect=200,
    )
    r.call(
        "POST",
        "/api/v1/store/search/",
        "Search items",
        path=f"{PREFIX}/store/search/",
        body={"namespace_prefix": ["users", USER], "query": "where to sit", "filter": {"seat": "window"}, "limit": 5},
        expect=200,
    )
    r.call(
        "POST",
        "/api/v1/store/search/",
        "The user's extracted memories, as items",
        path=f"{PREFIX}/store/search/",
        body={"namespace_prefix": ["extracted_memories", USER], "query": "restaurants", "limit": 2},
        expect=200,
        note='Read-only: ["extracted_memories", <user_id>] answers the user\'s current memories, keyed by memory_id; '
        "a put or delete there is a 400.",
    )
    r.call(
        "GET",
        "/api/v1/store/namespaces/",
        "List namespaces",
        path=f"{PREFIX}/store/namespaces/",
        query={"prefix": ["users"], "max_depth": 2},
        expect=200,
    )
    r.call(
        "DELETE",
        "/api/v1/store/items/",
        "Delete an item",
        path=f"{PREFIX}/store/items/",
        query={"namespace": item["namespace"], "key": "prefs"},
        expect=204,
    )

    # Erasure, on data of its own.
    scratch = f"{conversations}/{SCRATCH}"
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/messages/",
        "",
        path=f"{scratch}/messages/",
        body={"role": "user", "content": "Just testing", "user_id": "bob"},
        expect=201,
        record=False,
    )
    r.call(
        "POST",
        "/api/v1/users/{user_id}/facts/",
        "",
        path=f"{PREFIX}/users/bob/facts/",
        body={"key": "home_city", "value": "Porto"},
        expect=201,
        record=False,
    )
    r.call("DELETE", "/api/v1/conversations/{conversation_id}/messages/", "Clear", path=f"{scratch}/messages/", expect=200)
    r.call("DELETE", "/api/v1/conversations/{conversation_id}/checkpoints/", "Delete them", path=f"{checkpoints}/", expect=200)
    r.call("DELETE", "/api/v1/conversations/{conversation_id}/", "Erase a conversation", path=f"{scratch}/", expect=200)
    r.call("DELETE", "/api/v1/users/{user_id}/", "Erase a user", path=f"{PREFIX}/users/bob/", expect=200)

    # Status.
    r.call("GET", "/api/v1/status/", "The tenant's view", path=f"{PREFIX}/status/", expect=200)
    r.call("GET", "/api/v1/usage/", "The last three days", path=f"{PREFIX}/usage/", query={"days": 3}, expect=200)

    # Errors.
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/messages/",
        "A validation error",
        path=f"{trip}/messages/",
        body={"role": "robot", "content": "Hello"},
        expect=400,
    )
    r.call(
        "GET",
        "/api/v1/conversations/{conversation_id}/search/",
        "A limit",
        path=f"{trip}/search/",
        query={"q": "dinner", "top_k": 5000},
        expect=400,
    )
    r.call("GET", "/api/v1/conversations/{conversation_id}/", "Not found", path=f"{conversations}/no-such-trip/", expect=404)
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/messages/",
        "The same id with other content",
        path=f"{trip}/messages/",
        body={"id": IDS["q1"], "role": "user", "content": "Something else"},
        expect=409,
    )
    r.call(
        "POST",
        "/api/v1/conversations/{conversation_id}/messages/",
        "Another user's id",
        path=f"{trip}/messages/",
        body={"role": "user", "content": "Book it for me", "user_id": "grace"},
        expect=409,
        note="A conversation belongs to one user: nothing was stored. agent_id is not checked (several agents may "
        "write to one conversation).",
    )

    # MCP.
    mcp_headers = {"Authorization": "Bearer $KEY", "Accept": "application/json, text/event-stream"}
    real = {**mcp_headers, "Authorization": f"Bearer {r.key}"}
    for title, message in (
        (
            "Initialize",
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}},
            },
        ),
        ("List the tools", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        (
            "Call a tool",
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_facts", "arguments": {"user_id": USER}}},
        ),
    ):
        r.call("POST", "/api/v1/mcp/", title, path=f"{PREFIX}/mcp/", body=message, headers=real, expect=200)
        r.examples[-1].headers = mcp_headers


def memories_extracted(conversation_id: str) -> None:
    """Extraction on for the tenant, with the tests' ``scripted-model`` as its model (a deployment names
    its chat model), and the conversation read now, as the derived workers read it once it is due."""
    from extraction import runs
    from tenants import services as tenant_services
    from tenants.models import Tenant
    from tests.chat import fakes

    tenant = Tenant.objects.get(slug="acme")
    extracting = {"MEMORY_EXTRACTION_ENABLED": True, "MEMORY_EXTRACTION_MODEL": "scripted-model"}
    operations = [
        {"op": "add", "kind": "fact", "subject": "Ada", "text": "Ada is visiting Lisbon.", "sources": [IDS["q1"]]},
        {"op": "add", "kind": "preference", "subject": "Ada", "text": "Ada prefers quiet restaurants.", "sources": [IDS["q1"]]},
        {
            "op": "add",
            "kind": "event",
            "subject": "Ada",
            "text": "Ada plans an evening walk to the Miradouro de Santa Luzia.",
            "valid_from": "2025-06-02",
            "sources": [IDS["q2"], IDS["a2"]],
        },
    ]
    # The answer first: the derived worker may read the tenant's conversations as soon as extraction is on.
    fakes.script(json.dumps({"operations": operations}))
    tenant_services.tenant_update(tenant=tenant, settings={**tenant.settings, **extracting})
    result = runs.conversation_extract(tenant=tenant, conversation_id=conversation_id, quiet=True)
    if result.added != len(operations):
        raise SystemExit(f"the scripted extraction of {conversation_id} added {result.added} memories: {result}")


# --- Making the answers stable --------------------------------------------------------------------

UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})")
TOKEN_EVENTS_SHOWN = 3
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
SEQ = re.compile(r"\b\d{13,}\b")  # a seq in a text (a message naming one): microseconds since 1970
TIMINGS = {"execution_time": 0.418, "latency_ms": 1.2}
GUIDE_DAY = date(2025, 6, 2)  # the day of the stand-in times: a usage day is shown as so many days before it


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _seqs(value: Any) -> Iterator[int]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key.endswith("seq") and isinstance(item, int) and not isinstance(item, bool):
                yield item
            else:
                yield from _seqs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _seqs(item)


def stabilise(examples: list[Example]) -> None:
    """Replace what differs from run to run by stable stand-ins, keeping order and identity: the same id
    is the same stand-in everywhere, and later timestamps and seqs stay later."""
    streams = [example for example in examples if isinstance(example.answer, str) and "event-stream" in example.content_type]
    for example in streams:
        example.answer = _stream_events(example.answer)
    # What a request sends is shown as sent, unless an earlier answer gave it (an id the service drew).
    sent: set[str] = set()
    answered: set[str] = set()
    for example in examples:
        request = example.path + json.dumps(example.body) + json.dumps(example.query)
        sent.update(found for found in UUID.findall(request) if found not in answered)
        sent.update(TIMESTAMP.findall(json.dumps(example.body)))
        answered.update(found for text in _strings(example.answer) for found in UUID.findall(text))
    answers = [example.answer for example in examples]
    found_ids = [found for text in _strings(answers) for found in UUID.findall(text) if found not in sent]
    ids = {
        found: str(uuid.uuid5(uuid.NAMESPACE_URL, f"api-guide/generated/{n}")) for n, found in enumerate(dict.fromkeys(found_ids))
    }
    # By instant: the same moment is one stand-in whether written with Z or +00:00.
    instants = sorted({_instant(found) for text in _strings(answers) for found in TIMESTAMP.findall(text) if found not in sent})
    stand_ins = {instant: n for n, instant in enumerate(instants)}
    real_seqs = sorted({seq for seq in _seqs(answers) if seq > 0})
    seqs = {seq: 1_748_854_800_000_000 + 1_000 * (n + 1) for n, seq in enumerate(real_seqs)}

    def text(value: str) -> str:
        value = UUID.sub(lambda match: ids.get(match.group(), match.group()), value)
        value = TIMESTAMP.sub(lambda match: _stand_in_time(match.group(), stand_ins.get(_instant(match.group()))), value)
        value = SEQ.sub(lambda match: str(seqs.get(int(match.group()), match.group())), value)
        return value.replace("http://testserver", BASE_URL)

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, str) and key == "day" and DAY.fullmatch(value):
            return (GUIDE_DAY - (datetime.now(UTC).date() - date.fromisoformat(value))).isoformat()
        if isinstance(value, str):
            return text(value)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int) and key.endswith("seq"):
            return seqs.get(value, value)
        if isinstance(value, int | float) and key in TIMINGS:
            return TIMINGS[key]
        if isinstance(value, dict):
            return {text(name): walk(item, name) for name, item in value.items()}
        if isinstance(value, list):
            return [walk(item, key) for item in value]
        return value

    for example in examples:
        example.answer = walk(example.answer)
        example.path = UUID.sub(lambda match: ids.get(match.group(), match.group()), example.path)
    for example in streams:
        example.answer = _stream_text(example.answer)


def _stream_events(text: str) -> list[Any]:
    """A server-sent event stream as its lines, each data line's JSON parsed (so it is made stable too)."""
    return [{"data": json.loads(line[6:])} if line.startswith("data: ") else line for line in text.split("\n")]


def _stream_text(lines: list[Any]) -> str:
    """The stream again, as text; its token events after the first few shortened to one comment."""
    text = "\n".join(
        "data: " + json.dumps(line["data"], ensure_ascii=False) if isinstance(line, dict) else line for line in lines
    )
    events = text.strip("\n").split("\n\n")
    tokens = [event for event in events if event.startswith("event: token")]
    if len(tokens) <= TOKEN_EVENTS_SHOWN:
        return text
    left_out = tokens[TOKEN_EVENTS_SHOWN:]
    first = events.index(left_out[0])
    kept = events[:first] + [f": ... {len(left_out)} more token events, one piece of the answer each"]
    kept += [event for event in events[first:] if not event.startswith("event: token")]
    return "\n\n".join(kept) + "\n"


def _instant(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _stand_in_time(stamp: str, n: int | None) -> str:
    if n is None:  # a time the request sent
        return stamp
    fraction = f".{(n * 104_729 + 271_828) % 1_000_000:06d}" if "." in stamp else ""
    zone = "Z" if stamp.endswith("Z") else stamp[-6:]
    return f"2025-06-02T09:{n // 60:02d}:{n % 60:02d}{fraction}{zone}"


# --- The page --------------------------------------------------------------------------------------


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def curl(example: Example) -> str:
    """The request as a curl command, with $API and $KEY as the guide's introduction sets them."""
    parts = ["curl -s"]
    if example.headers.get("Accept") == "text/event-stream":
        parts[0] = "curl -sN"
    if example.method != "GET" or (example.query and _needs_encoding(example.query)):
        parts.append(f"-X {example.method}" if example.method != "GET" else "-G")
    url = "$API" + example.path.removeprefix(PREFIX)
    plain_query = example.query and not _needs_encoding(example.query)
    if plain_query:
        url += "?" + urlencode(example.query, doseq=True)
    lines = [" ".join(parts) + f' "{url}"']
    if "Authorization" not in example.headers and example.template not in ("/api/v1/",) and example.status != 401:
        lines.append('-H "Authorization: Api-Key $KEY"')
    for name, value in example.headers.items():
        lines.append(f'-H "{name}: {value}"')
    if example.query and not plain_query:
        for name, value in example.query.items():
            for item in value if isinstance(value, list) else [value]:
                lines.append(f"--data-urlencode {_quoted(f'{name}={item}')}")
    if example.body is not None:
        lines.append('-H "Content-Type: application/json"')
        compact = json.dumps(example.body, ensure_ascii=False)
        body = compact if len(compact) <= 100 else json.dumps(example.body, ensure_ascii=False, indent=2)
        lines.append(f"-d {_quoted(body)}")
    return " \\\n  ".join(lines)


def _needs_encoding(query: dict[str, Any]) -> bool:
    values = [str(item) for value in query.values() for item in (value if isinstance(value, list) else [value])]
    return any(quote(value, safe="") != value for value in values)


def answer_block(example: Example) -> list[str]:
    out = [f"Answer: `{example.status} {example.reason}`", ""]
    if example.answer is None:
        return out
    if isinstance(example.answer, str):
        return [*out, "```text", example.answer.rstrip("\n"), "```", ""]
    answer = example.answer
    if example.template == "/api/v1/mcp/" and "tools" in answer.get("result", {}):
        answer = {
            **answer,
            "result": {
                "tools": [{"name": tool["name"], "description": tool["description"]} for tool in answer["result"]["tools"]]
            },
        }
        out[0] += " (each tool's `inputSchema` and annotations are left out here)"
    return [*out, "```json", json.dumps(answer, ensure_ascii=False, indent=2), "```", ""]


def example_block(example: Example, *, heading: str = "####") -> list[str]:
    out = [f"{heading} {example.title}", ""] if example.title else []
    if example.note:
        out += [example.note, ""]
    out += ["```bash", curl(example), "```", ""]
    return out + answer_block(example)


INTRODUCTION = """\
<!-- Generated by `python -m docs.generate api_guide` (docs/generate/api_guide.py) from a scripted run
     of the API: edit the generator, not this page. -->

# API guide

Every operation of the API, each with a request and the answer it got. The answers are real: the
page is generated by running these requests against the service (ids, timestamps and seqs are then
replaced by stable stand-ins). The OpenAPI schema of a running service is at `/api/schema/`, its
interactive form at `/api/docs/`.

The examples use two shell variables:

```bash
API=http://127.0.0.1:8000/api/v1
KEY=$(cat var/demo-api-key.txt)   # the key `make run` created; or `python manage.py create_api_key --tenant <slug>`
```

## Authentication

Every request but the API root carries a tenant's API key: `Authorization: Api-Key <key>`. The key
names the tenant; nothing in a path or a body does, so one tenant never sees another's data (its ids
answer 404). Keys are created by an operator (`python manage.py create_tenant <slug>` prints the
first one, `create_api_key --tenant <slug>` another, or the admin), stored hashed, shown once. A
revoked key is refused on every process within `MEMORY_AUTH_REVALIDATE` seconds. The MCP endpoint
also takes `Authorization: Bearer <key>`.

"""

ERRORS = """\
## Errors

Every error answer is one JSON document, `{"error": {"code", "message", "details"}}`: `code` is
stable, for programs; `message` is for people and names the field, and for a limit the setting and its
value; `details` holds the per-field errors of a validation error, or a limit's `field`, `size` and
`limit`. A `429` or `503` carries `Retry-After`.

| Status | Codes |
|---|---|
| 400 | `validation_error`, `parse_error`, `limit_exceeded`, `clock_skew` (a UUIDv7 message id stamped ahead of the service's clock), `bad_request` (bytes that are not HTTP/1.1) |
| 401 | `not_authenticated`, `authentication_failed` |
| 404 | `not_found` (also another tenant's ids, and paths that do not exist) |
| 405 | `method_not_allowed` (the `Allow` header lists the methods) |
| 409 | `conflict` (an id already holds other content), `user_mismatch` (a write naming another user than the conversation's), `run_active`, `chat_in_progress` |
| 413, 414, 415 | `payload_too_large`, `uri_too_long` (past `MEMORY_MAX_URL_LENGTH`, or a request line past 8,190 bytes), `unsupported_media_type` (send `Content-Type: application/json`) |
| 431 | `request_header_fields_too_large` (more than 100 headers, or one past 8,190 bytes) |
| 429 | `throttled` (the tenant's `MEMORY_RATE_LIMIT`, or too many requests without a valid key), `chat_limit_reached` |
| 502, 504 | `model_error`, `egress_refused`, `model_timeout` (the chat endpoint's model) |
| 503 | `broker_unavailable`, `write_indeterminate`, `idempotency_unknown`, `conversation_busy`, `backends_unavailable`, `service_unavailable`, and the chat endpoint's `chat_capacity`, `chat_model_not_configured`, `chat_model_unavailable`, `provider_credential_missing` |

"""

CONVENTIONS = """\
## Pagination

Lists that can grow without bound (conversations, fact histories) are pages: `limit` (default 50, at
most `MEMORY_MAX_PAGE_SIZE`) and `offset`, answered with `count`, `next` and `previous` (the URLs of
the neighbouring pages, or null) and `results`. The other lists take a `limit` alone. A `limit` or
`offset` that is not a number, negative or past its bound is a 400 naming it, never a silent default.
See [Conversations](#conversations) for a page.

## Appending safely: send your own ids

An append answers `201` once the write is durable (confirmed by the broker) and already in the
window; a worker then persists it to PostgreSQL. Give every message your own UUID (`id`), chosen
before the first attempt (a UUIDv7: see [Conversations](conversations.md#message-ids-uuidv7)), and
after any failure or timeout resend exactly the same body: a message
the service already knows is answered with the seq it got the first time and never stored twice
(`200` when every message was known). The same id with other content is a `409`, and so is a
`user_id` other than the conversation's (`user_mismatch`, nothing stored). A `503` always
carries `Retry-After` and one of `broker_unavailable` (nothing stored), `write_indeterminate` (the
write may be stored: resend with the ids in `error.details.messages`), `idempotency_unknown` (nothing
written; resend the same ids later), `conversation_busy` or `backends_unavailable` (nothing stored).
The Python client (`memory_client.MemoryClient`) does all of this by itself.

## Limits

Every input is bounded, and a request past a bound is a `400 limit_exceeded` naming the field, the
size and the setting (or `413`/`414` for a whole body or URI): message content, metadata, batch
sizes, ids, page sizes, search parameters, facts, checkpoints and store values. The bounds and their
defaults are in [Configuration](configuration.md); a tenant's requests are also throttled
(`MEMORY_RATE_LIMIT` per `MEMORY_RATE_WINDOW`).

"""

MCP = """\
## MCP

`POST /api/v1/mcp/` is a Model Context Protocol server (streamable HTTP, stateless, JSON answers): an
MCP client configured with the URL and the key gets the memory as tools. Each POST is one JSON-RPC
message. It is not in the OpenAPI schema, which describes the REST operations.

"""


def render(examples: list[Example], schema: dict[str, Any]) -> str:
    from django.conf import settings

    by_operation: dict[tuple[str, str], list[Example]] = {}
    for example in examples:
        by_operation.setdefault((example.method, example.template), []).append(example)
    operations: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            operations.setdefault(operation["tags"][0], []).append((method.upper(), path, operation))
    missing = [
        f"{m} {p}" for ops in operations.values() for m, p, _ in ops if (m, p) not in PURPOSES or (m, p) not in by_operation
    ]
    if missing:
        raise SystemExit(f"No purpose line or no example in the scenario for: {', '.join(missing)}")

    order = list(PURPOSES)
    for listed in operations.values():
        listed.sort(key=lambda operation: order.index((operation[0], operation[1])))
    out = [INTRODUCTION]
    for example in by_operation[("GET", "/api/v1/")]:
        out += example_block(example, heading="###")
    out.append(ERRORS)
    errors = [example for example in examples if example.status >= 400]
    for example in errors:
        out += example_block(example, heading="###")
    out.append(CONVENTIONS)
    described = {tag["name"]: tag["description"] for tag in settings.SPECTACULAR_SETTINGS["TAGS"]}
    # Every tag of the schema, in the order of its first purpose line (a tag the settings do not
    # describe is shown too, without a description).
    tags = sorted(operations, key=lambda tag: min(order.index((method, path)) for method, path, _ in operations[tag]))
    for tag in tags:
        out += [f"## {tag[0].upper()}{tag[1:]}", ""]
        if described.get(tag):
            out += [described[tag], ""]
        for method, path, operation in operations.get(tag, []):
            out += [f"### `{method} {path}`", "", PURPOSES[(method, path)], ""]
            description = operation.get("description", "")
            if len(description) > 2 * len(PURPOSES[(method, path)]):  # the schema says more
                out += [description, ""]
            for example in by_operation[(method, path)]:
                if example.status < 400:
                    out += example_block(example)
    out.append(MCP)
    for example in by_operation[("POST", "/api/v1/mcp/")]:
        out += example_block(example, heading="###")
    return "\n".join(out).rstrip("\n") + "\n"


# --- Running it ------------------------------------------------------------------------------------


def _worker(environment: dict[str, str], queues: str, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "celery", "-A", "memoryproject", "worker", "--pool", "threads", "--concurrency", "2"]
    command += [
        "-Q",
        queues,
        "-n",
        f"api-guide-{os.getpid()}@%h",
        "--without-gossip",
        "--without-mingle",
        "--loglevel",
        "WARNING",
    ]
    return subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )


def record() -> tuple[list[Example], dict[str, Any]]:
    """Run the scenario on a database of its own, with a worker; the examples and the schema."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
    os.environ.setdefault("DJANGO_LOG_LEVEL", "ERROR")  # the refusals the scenario asks for are not news
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_databases, setup_test_environment, teardown_databases
    from django_redis import get_redis_connection
    from drf_spectacular.generators import SchemaGenerator

    from conversations import cache
    from memoryproject.celery import app as celery_app
    from tenants import services as tenant_services

    database = settings.DATABASES["default"]
    database["TEST"]["NAME"] = f"test_{database['NAME']}_api_guide"
    setup_test_environment()
    databases = setup_databases(verbosity=0, interactive=False)
    worker = None
    try:
        redis = get_redis_connection("default")
        redis.flushdb()
        redis.hset(cache.LEDGER_KEY, mapping={"since": 1, "whole_at": 1})  # a fresh Redis that lost nothing
        queues = (settings.MEMORY_QUEUE, settings.MEMORY_DERIVED_QUEUE)
        with celery_app.connection_for_write() as broker:
            for queue in queues:
                celery_app.amqp.queues[queue](broker.default_channel).declare()
                broker.default_channel.queue_purge(queue)
        db = connection.settings_dict
        environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "memoryproject.settings.test",
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
            "REDIS_URL": settings.REDIS_URL,
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "MEMORY_QUEUE": settings.MEMORY_QUEUE,
            "MEMORY_DERIVED_QUEUE": settings.MEMORY_DERIVED_QUEUE,
        }
        log = Path(tempfile.gettempdir()) / "api-guide-worker.log"
        worker = _worker(environment, ",".join(queues), log)
        tenant = tenant_services.tenant_create(slug="acme", name="Acme Travel")
        _, key = tenant_services.api_key_create(tenant=tenant, name="api guide")
        recorder = Recorder(key)
        scenario(recorder)
        schema = SchemaGenerator().get_schema(request=None, public=True)
        return recorder.examples, schema
    finally:
        if worker is not None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
        connection.close()
        teardown_databases(databases, verbosity=0)


def main() -> int:
    examples, schema = record()
    stabilise(examples)
    OUTPUT.write_text(render(examples, schema))
    operations = sum(len(methods) for methods in schema["paths"].values())
    print(f"wrote {OUTPUT.relative_to(ROOT)}: {len(examples)} requests, {operations} operations of the schema")
    return 0
