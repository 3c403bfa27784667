"""Search recall and context recall on LoCoMo-style data through the REST API only, as an outside
evaluator measures them on a fresh checkout.

Contract
--------
``evaluation_run(api=, dataset=, questions_per_user=, context_tokens=)`` talks to the service through
``Api`` (a keep-alive HTTP client of ``/api/v1`` with one tenant's API key) and nothing else:

1. Ingest, as ``evaluate.user_ingest`` stores a user, through the append endpoint: each session the
   conversation ``<user>-s<n>`` of ``user_id`` = the user (agent ``retrieval-eval``), created first
   (``POST /conversations/``, ``metadata.fingerprint`` = the session's content hash), then its turns
   appended in batches (``POST /conversations/<id>/messages/``, ``{"messages": [...], "user_id",
   "agent_id"}``): the first speaker's turns with role ``user``, the second's ``assistant``, the
   speaker as the top-level ``name`` (the API keeps it in ``metadata``), ``created_at`` = the
   session's date + 30 s per turn, and each a deterministic client ``id`` (a UUID of the conversation,
   the fingerprint and the dialog id), so a resend is answered with the stored message (200), never
   stored twice. A user whose sessions are all stored with their fingerprint and message count is
   skipped; a session stored from other content is erased and stored again; other conversations of
   the user (but ``<user>-asking``) are erased, as ``user_ingest`` does.
2. Wait until ``GET /users/<user>/search/status/`` answers ``searchable: true`` for every user
   (persisted and embedded by the workers), or fail after ``searchable_timeout`` seconds naming what
   is missing.
3. Search: ``GET /users/<user>/search/?q=<question>&top_k=20`` once per question, timed around the
   request (``time.perf_counter``); each hit's ``message_id`` maps back to its dialog id through the
   ids the client gave. Recall@k: the mean over questions of the share of a question's evidence turns
   in the top k; also per category, the share of questions with none in the top 20, median and p95 ms.
4. Context (unless ``context_tokens`` is 0): each user gets the new, empty conversation
   ``<user>-asking`` (``POST /conversations/`` with its ``user_id`` and no message), and each question
   is asked ``POST /conversations/<user>-asking/context/`` with ``{"use_memory": true, "query":
   <question>, "max_tokens": <context_tokens>}``. A question's context holds an evidence turn when the
   turn's text, whitespace folded, is a substring of the answer's messages' ``content`` joined
   (whitespace folded). Figures: the share of questions with every evidence turn held, with at least
   one, both per category; median ``estimated_tokens``; median and p95 ms.

It returns a ``Report``; ``report_markdown`` prints it, ``report_json`` is what ``--json`` writes.
Questions are ``evaluate._questions``'s (those whose evidence turns all exist; ``--questions-per-user``
a fixed sample). A 429 or 503 is retried after its ``Retry-After`` (counted in the report); any
other unexpected answer stops the run with the request and the answer. Timings are the service
as a client meets it: the first requests of each web worker load the embedding model, and every
search embeds its question (the context's query was embedded by that search, if the same worker
answers).

The service
-----------
With ``--base-url URL --api-key KEY`` it measures a running service (``make run`` prints its URL and
keeps its key in ``var/demo-api-key.txt``; ``python manage.py create_tenant <slug>`` prints a new
tenant's key). Without, it starts its own on a benchmark database, as deployed (Procfile): gunicorn
(2 gthread workers of 8 threads, as ``search_latency --http``), the write path's Celery worker
(``MEMORY_QUEUE``, a pool of 8 threads) and the derived worker (``MEMORY_DERIVED_QUEUE``, 2
processes), after creating the database (``ensure_database``; its name must contain ``bench``),
migrating it and making the tenant ``retrieval-http`` and a key, revoked at the end. Every process
it started is stopped on exit, Ctrl-C and SIGTERM included; their logs are in ``test-artifacts/``.
The database is kept, so a second run skips the ingest.

    DJANGO_SETTINGS_MODULE=memoryproject.settings.test \\
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/membench_http REDIS_URL=redis://127.0.0.1:6379/12 \\
    MEMORY_QUEUE=memory-bench-http .venv/bin/python -m benchmarks.retrieval.http \\
    [--base-url URL --api-key KEY] [--locomo-path PATH] [--users N] [--questions-per-user N] \\
    [--context-tokens 4000] [--searchable-timeout 1800] [--json PATH]

(the environment shown is the default; it matters only without ``--base-url``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

if __name__ == "__main__":  # the command; imported (the tests), Django is set up already
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/membench_http")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/12")
    os.environ.setdefault("MEMORY_QUEUE", "memory-bench-http")
    django.setup()

import httpx  # noqa: E402 (after django.setup(): evaluate imports the models)
from tqdm import tqdm  # noqa: E402

from benchmarks.retrieval import locomo  # noqa: E402
from benchmarks.retrieval.dataset import Dataset, Question, User  # noqa: E402
from benchmarks.retrieval.evaluate import (  # noqa: E402
    AGENT_ID,
    SECONDS_PER_TURN,
    ContextFigures,
    _asking_id,
    _categories,
    _conversation_id,
    _fingerprint,
    _mean,
    _questions,
    _recall,
    context_figures_of,
    context_turns_held,
    percentile,
)

TENANT_SLUG = "retrieval-http"
KS = (8, 20)
TOP_K = 20
BATCH = 100  # messages per append (MEMORY_MAX_BATCH's default)
SEARCHABLE_TIMEOUT = 30 * 60  # seconds
POLL_SECONDS = 1.0  # below gunicorn's keep-alive (2 s), so the poller's connection is not closed under it
RETRIES = 8  # attempts of one request answered 429/503 or cut
ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://memory.invalid/benchmarks/retrieval/http")


class ApiError(RuntimeError):
    """The service answered something the harness cannot go on from; the message says what and what to do."""


# --- The client ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    data: Any
    milliseconds: float  # the last attempt, client-side


class Api:
    """``/api/v1`` of one service with one tenant's key: a keep-alive client that resends a request
    answered 429 or 503 after its ``Retry-After`` (every request the harness sends is safe to resend:
    appends carry their ids) and stops on any other answer it was not told to expect."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 120.0) -> None:
        base = base_url.rstrip("/")
        base = base.removesuffix("/api/v1")
        self.base_url = base
        self.retried: list[str] = []  # each request sent again, and why
        self.client = httpx.Client(base_url=f"{base}/api/v1/", headers={"Authorization": f"Api-Key {api_key}"}, timeout=timeout)

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    def check(self) -> None:
        """That the service answers and takes the key, with what to do when not."""
        try:
            root = self.client.get("", headers={"Authorization": ""})
        except httpx.TransportError as error:
            raise ApiError(
                f"Cannot reach the service at {self.base_url} ({error}): start it (make run) or leave out "
                "--base-url to let the harness start its own."
            ) from None
        if root.status_code != 200:
            raise ApiError(f"{self.base_url}/api/v1/ answered {root.status_code}: is --base-url the service's address?")
        self.send("GET", "status/")

    def send(self, method: str, path: str, *, expect: Iterable[int] = (200, 201), **kwargs: Any) -> Answer:
        expected = set(expect)
        for attempt in range(1, RETRIES + 1):
            started = time.perf_counter()
            try:
                response = self.client.request(method, path, **kwargs)
            except httpx.TransportError as error:
                if attempt == RETRIES:
                    raise ApiError(f"{method} {path} failed {RETRIES} times, last with {error!r}: is the service up?") from None
                self.retried.append(f"{method} /api/v1/{path}: {error!r}")
                time.sleep(0 if attempt == 1 else min(2**attempt, 30))  # first: a keep-alive connection closed under it
                continue
            milliseconds = (time.perf_counter() - started) * 1000
            if response.status_code in expected:
                return Answer(response.status_code, response.json() if response.content else None, milliseconds)
            if response.status_code in (429, 503) and attempt < RETRIES:
                self.retried.append(f"{method} /api/v1/{path}: {response.status_code} {response.text[:200]}")
                time.sleep(min(float(response.headers.get("Retry-After") or 1), 60))
                continue
            raise ApiError(_refusal(method, path, kwargs, response))
        raise AssertionError("unreachable")


def _refusal(method: str, path: str, kwargs: dict[str, Any], response: httpx.Response) -> str:
    sent = json.dumps(kwargs.get("json"))[:300] if "json" in kwargs else json.dumps(kwargs.get("params") or {})[:300]
    hint = {
        401: " The API key was refused: pass a valid --api-key (make run keeps its key in var/demo-api-key.txt; "
        "python manage.py create_api_key --tenant <slug> makes another).",
        403: " The API key was refused: pass a valid --api-key.",
        429: " The tenant's MEMORY_RATE_LIMIT was reached again and again: raise it, or run again (ingest resumes).",
        503: " The service is unavailable: see its logs (the workers, the broker, Redis), then run again.",
    }.get(response.status_code, "")
    return f"{method} /api/v1/{path} {sent} answered {response.status_code}: {response.text[:600]}.{hint}"


# --- Ingest --------------------------------------------------------------------------------------


def message_id(user: User, number: int, dia_id: str) -> str:
    """The client's id of a turn: the same for the same session content, another when it changes."""
    key = f"{_conversation_id(user, number)}/{_fingerprint(user, number)}/{dia_id}"
    return str(uuid.uuid5(ID_NAMESPACE, key))


def dialog_ids(user: User) -> dict[str, str]:
    """message_id -> dialog id, for every turn of the user, from the ids the client gives."""
    return {message_id(user, session.number, turn.dia_id): turn.dia_id for session in user.sessions for turn in session.turns}


def _messages(user: User, number: int) -> list[dict[str, Any]]:
    session = user.sessions[number - 1]
    return [
        {
            "id": message_id(user, number, turn.dia_id),
            "role": "user" if turn.speaker == user.speakers[0] else "assistant",
            "content": turn.text,
            "name": turn.speaker,
            "created_at": (session.date + timedelta(seconds=SECONDS_PER_TURN * (seq - 1))).isoformat(),
        }
        for seq, turn in enumerate(session.turns, start=1)
    ]


def user_conversations(api: Api, user_id: str) -> dict[str, dict[str, Any]]:
    """The user's conversations as the list endpoint answers them, by id (every page)."""
    found: dict[str, dict[str, Any]] = {}
    offset = 0
    while True:
        page = api.send("GET", "conversations/", params={"user_id": user_id, "limit": 100, "offset": offset}).data
        found.update({row["conversation_id"]: row for row in page["results"]})
        offset += len(page["results"])
        if not page["results"] or offset >= page["count"]:
            return found


def _stored(row: dict[str, Any] | None, fingerprint: str, turns: int) -> bool:
    return row is not None and (row.get("metadata") or {}).get("fingerprint") == fingerprint and row["message_count"] == turns


def user_store(api: Api, user: User, *, done: Callable[[int], object] = lambda count: None) -> bool:
    """Store the user's sessions through the API unless all are stored already; True if it sent any."""
    expected = {_conversation_id(user, s.number): (s.number, _fingerprint(user, s.number), len(s.turns)) for s in user.sessions}
    stored = user_conversations(api, user.user_id)
    if all(_stored(stored.get(cid), fingerprint, turns) for cid, (_, fingerprint, turns) in expected.items()):
        return False
    for conversation_id in sorted(set(stored) - set(expected) - {_asking_id(user)}):
        api.send("DELETE", f"conversations/{quote(conversation_id, safe='')}/")  # as user_ingest: only these sessions
    for conversation_id, (number, fingerprint, turns) in expected.items():
        row = stored.get(conversation_id)
        if _stored(row, fingerprint, turns):
            done(turns)
            continue
        path = f"conversations/{quote(conversation_id, safe='')}/"
        if row is not None and (row.get("metadata") or {}).get("fingerprint") != fingerprint:
            api.send("DELETE", path)  # stored from other content (or by something else): store it again
            row = None
        if row is None:
            api.send(
                "POST",
                "conversations/",
                json={
                    "conversation_id": conversation_id,
                    "user_id": user.user_id,
                    "agent_id": AGENT_ID,
                    "metadata": {"fingerprint": fingerprint},
                },
            )
        messages = _messages(user, number)
        for start in range(0, len(messages), BATCH):
            batch = messages[start : start + BATCH]
            body = {"messages": batch, "user_id": user.user_id, "agent_id": AGENT_ID}
            answer = api.send("POST", f"{path}messages/", json=body)
            sent = [message["id"] for message in answer.data["messages"]]
            if sent != [message["id"] for message in batch]:
                raise ApiError(f"POST /api/v1/{path}messages/ answered other ids than it was sent: {sent[:3]}...")
            done(len(batch))
    return True


def asking_conversation(api: Api, user: User) -> None:
    """The user's new, empty conversation the context is asked from (created ahead of any message)."""
    conversation_id = _asking_id(user)
    created = api.send(
        "POST",
        "conversations/",
        json={"conversation_id": conversation_id, "user_id": user.user_id, "agent_id": AGENT_ID},
        expect=(201, 409),
    )
    if created.status == 409:  # an earlier run's: it must still be the user's, and empty
        row = api.send("GET", f"conversations/{quote(conversation_id, safe='')}/").data
        if row["user_id"] != user.user_id or row["message_count"]:
            raise ApiError(
                f"The conversation {conversation_id} exists with user_id {row['user_id']!r} and {row['message_count']} "
                f"messages; the context is asked from an empty conversation of {user.user_id}: delete it "
                f"(DELETE /api/v1/conversations/{conversation_id}/) and run again."
            )


def searchable_wait(
    api: Api,
    users: Sequence[User],
    *,
    timeout: float = SEARCHABLE_TIMEOUT,
    progress: bool = True,
    alive: Callable[[], None] = lambda: None,
) -> dict[str, dict[str, Any]]:
    """Poll each user's search status until every one answers ``searchable: true``; the last answers."""
    expected = {user.user_id: sum(len(session.turns) for session in user.sessions) for user in users}
    deadline = time.monotonic() + timeout
    statuses: dict[str, dict[str, Any]] = {}
    with tqdm(total=sum(expected.values()), desc="until searchable", unit="msg", disable=not progress) as bar:
        while True:
            for user in users:
                if not statuses.get(user.user_id, {}).get("searchable"):
                    statuses[user.user_id] = api.send("GET", f"users/{quote(user.user_id, safe='')}/search/status/").data
            bar.n = sum(min(statuses[user_id]["embedded"], count) for user_id, count in expected.items())
            bar.refresh()
            waiting = {user_id: status for user_id, status in statuses.items() if not status["searchable"]}
            if not waiting:
                return statuses
            empty = [user_id for user_id, status in waiting.items() if status.get("reason") == "no_messages"]
            if empty:  # stored and acknowledged, yet neither pending nor persisted: waiting cannot help
                raise ApiError(f"The service holds no message of {', '.join(empty)}: were they erased meanwhile?")
            if time.monotonic() > deadline:
                raise ApiError(
                    f"After {timeout / 60:.0f} minutes search does not cover every user yet: "
                    + "; ".join(f"{user_id}: {json.dumps(status)}" for user_id, status in waiting.items())
                    + ". pending_persist > 0: the write worker (celery -A memoryproject worker -Q <MEMORY_QUEUE>) is not "
                    "persisting; not_embedded > 0: the derived worker (-Q <MEMORY_DERIVED_QUEUE>) is not embedding. "
                    "Look at their logs, then run again: the ingest is skipped and the wait resumes."
                )
            alive()
            time.sleep(POLL_SECONDS)


# --- Asking --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchFigures:
    top_k: int
    recall: dict[int, float]  # k -> mean share of a question's evidence in the top k
    recall_by_category: dict[str, dict[int, float]]
    no_evidence: float  # the share of questions with none of their evidence in the top ``top_k``
    no_evidence_by_category: dict[str, float]
    no_result: float  # the share answered with no hit at all
    median_ms: float
    p95_ms: float


@dataclass(frozen=True)
class Report:
    dataset: str
    base_url: str
    users: int
    turns: int
    questions: int
    questions_by_category: dict[str, int]
    users_stored: int  # users whose sessions this run sent (the others were stored already)
    ingest_seconds: float
    searchable_seconds: float
    search: SearchFigures
    context: ContextFigures | None
    retried_requests: list[str]  # answered 429/503 (or cut) and sent again: the request and why
    statuses: dict[str, dict[str, Any]] = field(default_factory=dict)  # each user's search status when searchable


def search_figures(api: Api, asked: Sequence[tuple[User, Question]], *, progress: bool = True) -> SearchFigures:
    mappings = {user.user_id: dialog_ids(user) for user, _ in asked}
    found: list[list[str]] = []
    milliseconds = []
    for user, question in tqdm(asked, desc="search", unit="q", disable=not progress):
        answer = api.send("GET", f"users/{quote(user.user_id, safe='')}/search/", params={"q": question.text, "top_k": TOP_K})
        milliseconds.append(answer.milliseconds)
        found.append([mappings[user.user_id].get(hit["message_id"], "") for hit in answer.data["results"]])
    recall = {k: [_recall(hits[:k], question.evidence) for hits, (_, question) in zip(found, asked, strict=True)] for k in KS}
    by_category, none_by_category = {}, {}
    for category in _categories(asked):
        chosen = [index for index, (_, question) in enumerate(asked) if question.category == category]
        by_category[category] = {k: _mean(recall[k][index] for index in chosen) for k in KS}
        none_by_category[category] = _mean(float(recall[TOP_K][index] == 0.0) for index in chosen)
    return SearchFigures(
        top_k=TOP_K,
        recall={k: _mean(values) for k, values in recall.items()},
        recall_by_category=by_category,
        no_evidence=_mean(float(value == 0.0) for value in recall[TOP_K]),
        no_evidence_by_category=none_by_category,
        no_result=_mean(float(not hits) for hits in found),
        median_ms=statistics.median(milliseconds) if milliseconds else 0.0,
        p95_ms=percentile(milliseconds, 0.95),
    )


def context_asked(api: Api, user: User, question: Question, *, max_tokens: int) -> Answer:
    """The context an agent gets for ``question`` at the start of a new conversation of its user
    (``<user>-asking``, see ``asking_conversation``): ``use_memory``, the question as ``query``."""
    return api.send(
        "POST",
        f"conversations/{quote(_asking_id(user), safe='')}/context/",
        json={"use_memory": True, "query": question.text, "max_tokens": max_tokens},
    )


def context_figures(
    api: Api, asked: Sequence[tuple[User, Question]], *, max_tokens: int, progress: bool = True
) -> ContextFigures:
    for user in {user.user_id: user for user, _ in asked}.values():
        asking_conversation(api, user)
    held, tokens_used, milliseconds = [], [], []
    for user, question in tqdm(asked, desc="context", unit="q", disable=not progress):
        answer = context_asked(api, user, question, max_tokens=max_tokens)
        milliseconds.append(answer.milliseconds)
        held.append(context_turns_held(answer.data, user, question))
        tokens_used.append(answer.data["estimated_tokens"])
    return context_figures_of(asked, held, tokens_used=tokens_used, milliseconds=milliseconds, max_tokens=max_tokens)


def evaluation_run(
    *,
    api: Api,
    dataset: Dataset,
    questions_per_user: int | None = None,
    context_tokens: int = 4000,
    searchable_timeout: float = SEARCHABLE_TIMEOUT,
    progress: bool = True,
    alive: Callable[[], None] = lambda: None,
) -> Report:
    """Store, wait, ask: see the module's contract. ``alive`` is called while waiting (a local stack
    checks its processes there)."""
    started = time.perf_counter()
    stored = 0
    with tqdm(total=dataset.turn_count, desc="ingest", unit="msg", disable=not progress) as bar:
        for user in dataset.users:
            stored += user_store(api, user, done=bar.update)
    ingest_seconds = time.perf_counter() - started

    started = time.perf_counter()
    statuses = searchable_wait(api, dataset.users, timeout=searchable_timeout, progress=progress, alive=alive)
    searchable_seconds = time.perf_counter() - started
    for user in dataset.users:
        status, turns = statuses[user.user_id], sum(len(session.turns) for session in user.sessions)
        if status["messages"] != turns and progress:
            tqdm.write(f"Note: {user.user_id} has {turns} turns, its search status counts {status['messages']} messages.")

    asked = [(user, question) for user in dataset.users for question in _questions(user, questions_per_user)]
    search = search_figures(api, asked, progress=progress)
    context = context_figures(api, asked, max_tokens=context_tokens, progress=progress) if context_tokens else None
    counts = {category: sum(1 for _, q in asked if q.category == category) for category in _categories(asked)}
    return Report(
        dataset=dataset.name,
        base_url=api.base_url,
        users=len(dataset.users),
        turns=dataset.turn_count,
        questions=len(asked),
        questions_by_category=counts,
        users_stored=stored,
        ingest_seconds=ingest_seconds,
        searchable_seconds=searchable_seconds,
        search=search,
        context=context,
        retried_requests=list(api.retried),
        statuses=statuses,
    )


# --- The report ----------------------------------------------------------------------------------


def report_markdown(report: Report) -> str:
    search, context = report.search, report.context
    header = "| questions | n | recall@8 | recall@20 | none in the top 20 |"
    rule = "|---|---:|---:|---:|---:|"
    if context is not None:
        header += " context: every evidence turn | context: at least one |"
        rule += "---:|---:|"
    lines = [
        f"Dataset {report.dataset}: {report.users} users, {report.turns:,} turns, {report.questions:,} questions, "
        f"asked through {report.base_url}/api/v1 (user search, top_k={search.top_k}).",
        "",
        header,
        rule,
    ]
    k_low, k_high = KS
    row = f"| all | {report.questions} | {search.recall[k_low]:.3f} | {search.recall[k_high]:.3f} | {search.no_evidence:.1%} |"
    if context is not None:
        row += f" {context.every:.1%} | {context.any:.1%} |"
    lines.append(row)
    for category, count in report.questions_by_category.items():
        recall = search.recall_by_category[category]
        row = f"| {category} | {count} | {recall[k_low]:.3f} | {recall[k_high]:.3f} | {search.no_evidence_by_category[category]:.1%} |"
        if context is not None:
            row += f" {context.every_by_category[category]:.1%} | {context.any_by_category[category]:.1%} |"
        lines.append(row)
    lines += [
        "",
        f"- Search (GET /users/<user>/search/?q=...&top_k={search.top_k}): median {search.median_ms:.1f} ms, "
        f"p95 {search.p95_ms:.1f} ms; {search.no_result:.1%} of the questions answered with no hit.",
    ]
    if context is not None:
        lines.append(
            f"- Context (POST /conversations/<user>-asking/context/, use_memory, max_tokens {context.max_tokens}, from a "
            f"new conversation of the user): median {context.median_tokens:.0f} tokens, median {context.median_ms:.1f} ms, "
            f"p95 {context.p95_ms:.1f} ms."
        )
    skipped = report.users - report.users_stored
    lines.append(
        f"- Ingest {report.ingest_seconds:.1f} s ({report.users_stored} of {report.users} users sent"
        + (f", {skipped} stored already" if skipped else "")
        + f"), then {report.searchable_seconds:.1f} s until every user was searchable."
    )
    if report.retried_requests:
        lines.append(f"- {len(report.retried_requests)} requests were answered 429 or 503 (or cut) and sent again:")
        lines += [f"  - {retried}" for retried in report.retried_requests[:5]]
    return "\n".join(lines)


def report_json(report: Report) -> dict[str, Any]:
    return asdict(report)


# --- The service it talks to -----------------------------------------------------------------------


class LocalStack:
    """The service as deployed, on the benchmark database: gunicorn and both Celery workers, stopped by ``stop``."""

    def __init__(self) -> None:
        self.processes: list[Any] = []  # torture.processes.ServiceProcess
        self.api_key_row: Any = None
        self.url = ""
        self.key = ""

    def start(self, *, progress: bool = True) -> None:
        from django.conf import settings
        from django.core.management import call_command

        from benchmarks.database import ensure_database
        from tenants import services as tenant_services
        from tenants.models import Tenant
        from torture.processes import CeleryWorker, WebServer

        ensure_database()
        call_command("migrate", verbosity=0, interactive=False)
        tenant = Tenant.objects.filter(slug=TENANT_SLUG).first() or tenant_services.tenant_create(slug=TENANT_SLUG)
        self.api_key_row, self.key = tenant_services.api_key_create(tenant=tenant, name="retrieval-http")
        env = {
            **os.environ,
            "MEMORY_QUEUE": settings.MEMORY_QUEUE,
            "MEMORY_DERIVED_QUEUE": settings.MEMORY_DERIVED_QUEUE,
            "MEMORY_RATE_LIMIT": "100000000",
            "DJANGO_LOG_LEVEL": "ERROR",
        }
        web = WebServer(env=env, name="retrieval-http", workers=2, threads=8)
        self.processes = [
            CeleryWorker(env=env, name="retrieval-http-write", pool="threads", concurrency=8),
            CeleryWorker(env=env, name="retrieval-http-derived", queue_variable="MEMORY_DERIVED_QUEUE", concurrency=2),
            web,
        ]
        for process in self.processes:
            if progress:
                print(f"Starting {process.kind} {process.name} (log: {process.log_path}) ...", flush=True)
            process.start()
        self.url = web.url

    def alive(self) -> None:
        for process in self.processes:
            if not process.running:
                raise ApiError(f"The {process.kind} {process.name} has stopped: see {process.log_path}.")

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        if self.api_key_row is not None:
            from tenants import services as tenant_services

            tenant_services.api_key_revoke(api_key=self.api_key_row)
            self.api_key_row = None


# --- The command ---------------------------------------------------------------------------------


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval.http", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default=None, help="a running service (default: start one on the benchmark database)")
    parser.add_argument("--api-key", default=None, help="with --base-url: its tenant's key (default $MEMORY_API_KEY)")
    parser.add_argument("--locomo-path", type=Path, default=None, help=f"the LoCoMo file (default: {locomo.DEFAULT_HINT})")
    parser.add_argument("--users", type=int, default=None, help="the first N users (default all)")
    parser.add_argument("--questions-per-user", type=int, default=None, help="a fixed sample of N questions per user")
    parser.add_argument(
        "--context-tokens", type=int, default=4000, help="max_tokens of each question's context (0: not asked; default 4000)"
    )
    parser.add_argument(
        "--searchable-timeout", type=float, default=SEARCHABLE_TIMEOUT, help="seconds to wait for search to cover everything"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    options = parser.parse_args(argv)
    if options.base_url:
        options.api_key = options.api_key or os.environ.get("MEMORY_API_KEY")
    if options.base_url and not options.api_key:
        parser.error("--base-url needs --api-key (or $MEMORY_API_KEY): the key of the tenant to store the users in")
    if options.api_key and not options.base_url:
        parser.error("--api-key goes with --base-url; without them the harness starts its own service and key")
    if options.context_tokens < 0:
        parser.error("--context-tokens must not be negative")
    if (options.users is not None and options.users < 1) or (
        options.questions_per_user is not None and options.questions_per_user < 1
    ):
        parser.error("--users and --questions-per-user must be positive")
    return options


def load(options: argparse.Namespace) -> Dataset:
    try:
        dataset = locomo.locomo_load(path=options.locomo_path)
    except locomo.LocomoMissing as error:
        raise SystemExit(str(error)) from None
    return Dataset(dataset.name, dataset.users[: options.users]) if options.users else dataset


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM unwinds as Ctrl-C does: every process started is stopped


def main(argv: list[str]) -> None:
    options = arguments(argv)
    dataset = load(options)
    previous = signal.signal(signal.SIGTERM, _terminated)
    stack = None
    try:
        if options.base_url:
            url, key = options.base_url, options.api_key
        else:
            stack = LocalStack()
            stack.start()
            url, key = stack.url, stack.key
        with Api(url, key) as api:
            api.check()
            report = evaluation_run(
                api=api,
                dataset=dataset,
                questions_per_user=options.questions_per_user,
                context_tokens=options.context_tokens,
                searchable_timeout=options.searchable_timeout,
                alive=stack.alive if stack is not None else lambda: None,
            )
    except ApiError as error:
        raise SystemExit(f"\n{error}") from None
    except KeyboardInterrupt:
        raise SystemExit("\nInterrupted: the processes it started are stopped; a new run resumes the ingest.") from None
    finally:
        if stack is not None:
            stack.stop()
        signal.signal(signal.SIGTERM, previous)
    print()
    print(report_markdown(report))
    if options.json:
        options.json.write_text(json.dumps(report_json(report), indent=2, default=str))
        print(f"\nFigures written to {options.json}.")


if __name__ == "__main__":
    main(sys.argv[1:])
