"""``python -m benchmarks.extraction``: what the extraction pipeline keeps of LoCoMo's observations,
what its memories add to search and to an agent's context, and what it costs, through the REST API
of a stack it starts.

Contract
--------
1. The model: a ``benchmarks.model_server`` in this process whose model ``locomo`` answers every
   extraction prompt with the LoCoMo observations of the turns it is given
   (``locomo_responder.LocomoResponder``: the stand-in for a good LLM, deterministic).
2. The service, as ``benchmarks.retrieval.http`` starts it (gunicorn, the write worker, the derived
   worker) on the benchmark database, the derived worker also running Celery's beat (the quiet sweep
   reads a session's last turns) and sending task events (the extraction tasks' runtimes). A fresh
   tenant ``extraction-<time>`` per run, extracting with the scripted model: ``MEMORY_EXTRACTION_ENABLED``,
   ``MEMORY_CHAT_MODEL=openai:locomo``, ``MEMORY_CHAT_BASE_URL`` the server, an ``openai`` credential
   (a tenant's own server is called with its own credential only; the server ignores it), loopback
   let through the egress policy (``MEMORY_EGRESS_ALLOWED_NETWORKS``), the quiet delay
   ``--quiet-seconds`` and no daily bounds.
3. Ingest as ``benchmarks.retrieval.http.user_store`` does (each session a conversation of its user,
   each turn's speaker ``name`` and ``created_at``), wait until search covers every turn
   (``searchable_wait``), then until every conversation's turns are read (each conversation's
   extraction watermark at its last turn, read from the database, with a progress bar).
4. The figures:
   a. Observations kept: the current memories of each user (``GET /users/<user>/memories/``, every
      page) beside the observations: how many observations' statements (words, case aside) are a
      current memory, and with one of their evidence turns among its sources; the ones lost; current
      memories repeating another (duplicates not merged) or saying no observation; the adds the model
      answered and the merges the service recorded.
   b. Recall of each question's answer turns (LoCoMo's evidence), per category, at k 8 and 20: the turn
      search alone (``GET /users/<user>/search/?q=&top_k=20``, the retrieval benchmark's figure), the
      memories alone (``GET /users/<user>/memories/?query=&top_k=20``: an answer turn is found when
      one of the top k memories was read from it), both (the turns of the top k memories and the
      top k turns, together), and the fused user search (``...&include_memories=true``: the top k
      results of one ranking, a memory finding the turns it was read from).
   c. Cost per turn of the derived workers' extraction: the model calls and tokens the server
      answered, the service's own count (``ExtractionUsage``), and the seconds of the extraction tasks
      (``extraction.tasks.conversation_extract``, from Celery's task events).
   d. Context recall with memories on and off (unless ``--context-tokens`` is 0): the same
      conversations are then stored for a second tenant, ``extraction-<time>-turns``, which does not
      extract, and each question's context is asked of both tenants as the retrieval benchmark asks it
      (``benchmarks.retrieval.http.context_asked``: from a new conversation of the user, ``use_memory``,
      the question as ``query``, ``max_tokens`` 4000). Memories off, an answer turn is held when its
      text is in the context (``benchmarks.retrieval.http.context_figures``, the retrieval benchmark's
      figure); memories on, also when a memory whose line (``memory.bundle._memory_line``) is in the
      system message was read from it (``memory.extracted_memories``, their ``message_ids``). The
      shares of questions with every answer turn held and with at least one, per category, and the
      median ``estimated_tokens``; also what the turns alone hold in the contexts with memories, and
      how many of the memories the bundle considered made it into the system message.

Every process it started is stopped on exit, Ctrl-C and SIGTERM included; their logs are in
``test-artifacts/``. The tenants are kept in the benchmark database (new ones per run).

    DJANGO_SETTINGS_MODULE=memoryproject.settings.test \\
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/membench_extraction REDIS_URL=redis://127.0.0.1:6379/14 \\
    MEMORY_QUEUE=memory-bench-extraction .venv/bin/python -m benchmarks.extraction --locomo-path PATH \\
    [--users N] [--questions-per-user N] [--quiet-seconds 5] [--context-tokens 4000] [--extracted-timeout 3600] \\
    [--json PATH]

(the environment shown is the default).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

if __name__ == "__main__":  # the command; imported, Django is set up by the importer
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/membench_extraction")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/14")
    os.environ.setdefault("MEMORY_QUEUE", "memory-bench-extraction")
    django.setup()

from tqdm import tqdm  # noqa: E402

from benchmarks.extraction.locomo_responder import LocomoResponder, ObservationSet, normalised, observations_read  # noqa: E402
from benchmarks.model_server import ModelServer, Responder, ScriptedResponder  # noqa: E402
from benchmarks.retrieval import locomo  # noqa: E402
from benchmarks.retrieval.dataset import Dataset, Question, User  # noqa: E402
from benchmarks.retrieval.evaluate import (  # noqa: E402
    ContextFigures,
    _categories,
    _mean,
    _questions,
    _recall,
    context_figures_of,
    context_turns_held,
    percentile,
)
from benchmarks.retrieval.http import (  # noqa: E402
    KS,
    POLL_SECONDS,
    SEARCHABLE_TIMEOUT,
    TOP_K,
    Api,
    ApiError,
    asking_conversation,
    context_asked,
    context_figures,
    dialog_ids,
    searchable_wait,
    user_store,
)
from memory.bundle import _memory_line  # noqa: E402 (a memory's line in the system message, as the context renders it)

MODEL = "locomo"
EXTRACT_TASK = "extraction.tasks.conversation_extract"
EXTRACTED_TIMEOUT = 60 * 60  # seconds
QUIET_SECONDS = 5  # the tenant's MEMORY_EXTRACTION_QUIET_SECONDS: a session's last turns are read soon
LOOPBACK = "127.0.0.1/32"
MEMORY_PAGE = 100
LOST_SHOWN = 10
SOURCES = ("turns", "memories", "memories + turns", "fused")
CONTEXT_TOKENS = 4000  # the retrieval benchmark's max_tokens


# --- The model ------------------------------------------------------------------------------------


class Tally:
    """The adds a responder answered (thread-safe: the server answers from many threads)."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.adds = 0
        self.answers = 0
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]], model: str) -> str:
        answer = self.responder(messages, model)
        adds = sum(1 for operation in json.loads(answer)["operations"] if operation.get("op") == "add")
        with self._lock:
            self.answers += 1
            self.adds += adds
        return answer


# --- The service ----------------------------------------------------------------------------------


def tenant_settings(model_url: str, *, quiet_seconds: int) -> dict[str, Any]:
    return {
        "MEMORY_EXTRACTION_ENABLED": True,
        "MEMORY_CHAT_MODEL": f"openai:{MODEL}",
        "MEMORY_CHAT_BASE_URL": model_url,
        "MEMORY_EXTRACTION_QUIET_SECONDS": quiet_seconds,
        "MEMORY_EXTRACTION_DAILY_CALLS": 0,  # no bound: the whole data set is read in one run
        "MEMORY_EXTRACTION_DAILY_TOKENS": 0,
    }


class TaskRuntimes:
    """The runtimes of the tasks one worker ran, as Celery's task events report them (the worker
    sends them: ``-E``); listening from before the worker starts, in a thread."""

    def __init__(self) -> None:
        from memoryproject.celery import app

        self.app = app
        self.state = app.events.State(max_tasks_in_memory=1_000_000)
        self.listening = threading.Event()
        self.receiver: Any = None
        self.thread = threading.Thread(target=self._listen, name="task-events", daemon=True)

    def start(self) -> None:
        self.thread.start()
        if not self.listening.wait(30):
            raise ApiError("Cannot listen to Celery's task events: is the broker (CELERY_BROKER_URL) up?")

    def _listen(self) -> None:
        listening = self.listening

        class Receiver(self.app.events.Receiver):
            def on_consume_ready(self, *args: Any, **kwargs: Any) -> None:
                super().on_consume_ready(*args, **kwargs)
                listening.set()  # its queue is bound: no event sent from now on is missed

        with self.app.connection_for_read() as connection:
            self.receiver = Receiver(connection, handlers={"*": self.state.event}, app=self.app)
            self.receiver.capture(limit=None, timeout=None, wakeup=False)

    def stop(self) -> None:
        if self.receiver is not None:
            self.receiver.should_stop = True
        self.thread.join(timeout=5)

    def runtimes(self, task_name: str, *, worker_prefix: str) -> list[float]:
        """Seconds of each succeeded ``task_name`` run by a worker whose name starts with ``worker_prefix``."""
        return [
            task.runtime
            for task in list(self.state.tasks.values())
            if task.name == task_name
            and task.runtime is not None
            and task.worker is not None
            and task.worker.hostname.startswith(worker_prefix)
        ]


class ExtractionStack:
    """The service as deployed, on the benchmark database, for a fresh tenant extracting with the
    model at ``model_url``; stopped by ``stop``."""

    def __init__(self, model_url: str, *, quiet_seconds: int) -> None:
        self.model_url = model_url
        self.quiet_seconds = quiet_seconds
        self.processes: list[Any] = []  # torture.processes.ServiceProcess
        self.tenant: Any = None
        self.api_key_row: Any = None
        self.key = ""
        # The same conversations stored without extraction: the context of turns alone.
        self.turns_tenant: Any = None
        self.turns_api_key_row: Any = None
        self.turns_key = ""
        self.url = ""
        self.derived_name = ""
        self.events = TaskRuntimes()

    def start(self, *, progress: bool = True) -> None:
        from django.conf import settings
        from django.core.management import call_command

        from benchmarks.database import ensure_database
        from tenants import services as tenant_services
        from torture.processes import CeleryWorker, WebServer

        class ObservedWorker(CeleryWorker):
            def command(self) -> list[str]:
                return [*super().command(), "--task-events"]

        ensure_database()
        call_command("migrate", verbosity=0, interactive=False)
        allowed = list(settings.MEMORY_EGRESS_ALLOWED_NETWORKS)
        if LOOPBACK not in allowed:
            allowed.append(LOOPBACK)
        settings.MEMORY_EGRESS_ALLOWED_NETWORKS = allowed  # the tenant's URL is checked when saved, here too
        slug = f"extraction-{time.strftime('%Y%m%d-%H%M%S')}"
        self.tenant = tenant_services.tenant_create(
            slug=slug, settings=tenant_settings(self.model_url, quiet_seconds=self.quiet_seconds)
        )
        tenant_services.provider_credential_set(tenant=self.tenant, provider="openai", secret="unused-by-the-scripted-server")  # noqa: S106
        self.api_key_row, self.key = tenant_services.api_key_create(tenant=self.tenant, name="extraction-bench")
        self.turns_tenant = tenant_services.tenant_create(slug=f"{slug}-turns", settings={"MEMORY_EXTRACTION_ENABLED": False})
        self.turns_api_key_row, self.turns_key = tenant_services.api_key_create(tenant=self.turns_tenant, name="extraction-bench")
        env = {
            **os.environ,
            "MEMORY_QUEUE": settings.MEMORY_QUEUE,
            "MEMORY_DERIVED_QUEUE": settings.MEMORY_DERIVED_QUEUE,
            "MEMORY_EGRESS_ALLOWED_NETWORKS": ",".join(allowed),
            "MEMORY_RATE_LIMIT": "100000000",
            "DJANGO_LOG_LEVEL": "WARNING",
        }
        web = WebServer(env=env, name="extraction-bench", workers=2, threads=8)
        derived = ObservedWorker(
            env=env, name="extraction-bench-derived", queue_variable="MEMORY_DERIVED_QUEUE", concurrency=2, beat=True
        )
        self.derived_name = f"{derived.name}-{os.getpid()}@"
        self.processes = [CeleryWorker(env=env, name="extraction-bench-write", pool="threads", concurrency=8), derived, web]
        self.events.start()
        for process in self.processes:
            if progress:
                print(f"Starting {process.kind} {process.name} (log: {process.log_path}) ...", flush=True)
            process.start()
        self.url = web.url

    def alive(self) -> None:
        for process in self.processes:
            if not process.running:
                raise ApiError(f"The {process.kind} {process.name} has stopped: see {process.log_path}.")

    def extraction_seconds(self) -> list[float]:
        return self.events.runtimes(EXTRACT_TASK, worker_prefix=self.derived_name)

    def stop(self) -> None:
        from tenants import services as tenant_services

        for process in reversed(self.processes):
            process.stop()
        self.events.stop()
        for row in (self.api_key_row, self.turns_api_key_row):
            if row is not None:
                tenant_services.api_key_revoke(api_key=row)
        self.api_key_row = self.turns_api_key_row = None


def extracted_wait(
    tenant: Any,
    users: Sequence[User],
    *,
    timeout: float = EXTRACTED_TIMEOUT,
    progress: bool = True,
    alive: Callable[[], None] = lambda: None,
) -> None:
    """Wait until the extraction watermark of every conversation of ``users`` is at its last turn."""
    from django.db.models import OuterRef, Subquery

    from conversations.models import Conversation, Message
    from extraction.models import ExtractionWatermark

    sessions = sum(len(user.sessions) for user in users)
    conversations = Conversation.objects.for_tenant(tenant).filter(user_id__in=[user.user_id for user in users])
    watermarks = ExtractionWatermark.objects.for_tenant(tenant)
    read_through = watermarks.filter(conversation_id=OuterRef("conversation_id")).values("read_through_seq")[:1]
    turns = sum(len(session.turns) for user in users for session in user.sessions)
    deadline = time.monotonic() + timeout
    with tqdm(total=turns, desc="until read", unit="turn", disable=not progress) as bar:
        while True:
            last = dict(conversations.values_list("pk", "last_seq"))
            read = dict(watermarks.filter(conversation_id__in=list(last)).values_list("conversation_id", "read_through_seq"))
            unread = {pk: seq for pk, seq in last.items() if read.get(pk, 0) < seq}
            if progress:
                messages = Message.objects.for_tenant(tenant).filter(conversation_id__in=list(last))
                bar.n = messages.filter(seq__lte=Subquery(read_through)).count()
                bar.refresh()
            if len(last) == sessions and not unread:
                return
            if time.monotonic() > deadline:
                names = dict(conversations.filter(pk__in=list(unread)[:5]).values_list("pk", "conversation_id"))
                raise ApiError(
                    f"After {timeout / 60:.0f} minutes {len(unread)} of {sessions} conversations are not read through"
                    + (f" (e.g. {', '.join(names.values())})" if names else "")
                    + ". Is the tenant's extraction on (MEMORY_EXTRACTION_ENABLED, MEMORY_CHAT_MODEL)? Does the derived "
                    f"worker run {EXTRACT_TASK}, and its beat the quiet sweep? See its log."
                )
            alive()
            time.sleep(POLL_SECONDS)


# --- Reading the memories -------------------------------------------------------------------------


def user_memories(api: Api, user_id: str) -> list[dict[str, Any]]:
    """The user's memories as the list endpoint answers them (every page)."""
    found: list[dict[str, Any]] = []
    while True:
        page = api.send(
            "GET", f"users/{quote(user_id, safe='')}/memories/", params={"limit": MEMORY_PAGE, "offset": len(found)}
        ).data
        found += page["results"]
        if not page["results"] or "count" not in page or len(found) >= page["count"]:
            return found


def memories_search(api: Api, user_id: str, query: str) -> tuple[list[dict[str, Any]], float]:
    answer = api.send("GET", f"users/{quote(user_id, safe='')}/memories/", params={"query": query, "top_k": TOP_K})
    return answer.data["results"], answer.milliseconds


# --- The figures ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeptFigures:
    observations: int  # with evidence in the conversation
    skipped: int  # whose evidence names no turn: not counted
    found: int  # whose statement is a current memory of their user
    found_with_evidence: int  # ... one of whose sources is an evidence turn of the observation
    lost: list[str]  # the first statements no current memory says, "<user>: <statement>"
    lost_count: int
    memories: int  # current memories
    repeated_memories: int  # current memories saying what another current memory of the user says
    memories_of_no_observation: int
    adds_answered: int  # by the scripted model
    merges: int  # the service's merge changes: an add joined to a memory saying the same


@dataclass(frozen=True)
class RecallFigures:
    recall: dict[str, dict[int, float]]  # source -> k -> mean share of a question's answer turns found
    by_category: dict[str, dict[str, dict[int, float]]]  # category -> source -> k -> recall
    none: dict[str, float]  # source -> share of questions with no answer turn in the top ``TOP_K``
    no_memory: float  # share of questions the memory search answered with no memory
    memory_median_ms: float
    memory_p95_ms: float


@dataclass(frozen=True)
class CostFigures:
    turns: int
    calls: int  # answered by the model server, failures included
    failed_calls: int
    prompt_tokens: int
    completion_tokens: int
    tasks: int  # extraction tasks that succeeded (task events)
    task_seconds: float  # their runtimes, added up
    service: dict[str, int]  # the service's own count (ExtractionUsage, summed over days)
    extracted_seconds: float  # from the start of the ingest until every turn was read


@dataclass(frozen=True)
class ContextComparison:
    turns: ContextFigures  # memories off: the tenant that does not extract (the retrieval benchmark's figure)
    turns_and_memories: ContextFigures  # memories on: a turn held by its text, or by a memory in the context read from it
    turns_beside_memories: ContextFigures  # the same contexts, a turn held by its text alone
    memories_alone: ContextFigures  # the same contexts, a turn held by a memory in the context alone
    memories_sent: float  # median of the memories whose line is in the system message
    memories_considered: float  # median of the memories the bundle considered (``memory.extracted_memories``)


@dataclass(frozen=True)
class Report:
    dataset: str
    base_url: str
    tenant: str
    users: int
    turns: int
    questions: int
    questions_by_category: dict[str, int]
    kept: KeptFigures
    recall: RecallFigures
    cost: CostFigures
    ingest_seconds: float
    context: ContextComparison | None = None
    retried_requests: list[str] = field(default_factory=list)


def kept_figures(
    memories: dict[str, list[dict[str, Any]]], observations: ObservationSet, *, users: Sequence[User], adds: int, merges: int
) -> KeptFigures:
    """What became of the observations among each user's memories (statements compared by their words)."""
    found = with_evidence = repeated = unsaid = total = 0
    lost: list[str] = []
    for user in users:
        mapping = dialog_ids(user)
        current = [memory for memory in memories.get(user.user_id, []) if memory.get("current", True)]
        sources: dict[str, set[str]] = {}
        for memory in current:
            statement = normalised(memory["text"])
            repeated += statement in sources
            sources.setdefault(statement, set()).update(mapping.get(str(message_id), "") for message_id in memory["message_ids"])
        said = set()
        for observation in observations.by_user.get(user.user_id, ()):
            total += 1
            statement = normalised(observation.text)
            said.add(statement)
            if statement not in sources:
                lost.append(f"{user.user_id}: {observation.text}")
                continue
            found += 1
            with_evidence += bool(sources[statement] & set(observation.evidence))
        unsaid += len(set(sources) - said)
    return KeptFigures(
        observations=total,
        skipped=observations.skipped,
        found=found,
        found_with_evidence=with_evidence,
        lost=lost[:LOST_SHOWN],
        lost_count=len(lost),
        memories=sum(len([m for m in memories.get(user.user_id, []) if m.get("current", True)]) for user in users),
        repeated_memories=repeated,
        memories_of_no_observation=unsaid,
        adds_answered=adds,
        merges=merges,
    )


def _found_turns(hit: dict[str, Any]) -> list[str]:
    """The turns a result of the fused user search finds: a turn itself, a memory the turns it was read from."""
    return [hit["message_id"]] if hit["kind"] == "turn" else hit["message_ids"]


def recall_figures(api: Api, asked: Sequence[tuple[User, Question]], *, progress: bool = True) -> RecallFigures:
    mappings = {user.user_id: dialog_ids(user) for user, _ in asked}
    recall: dict[str, dict[int, list[float]]] = {source: {k: [] for k in KS} for source in SOURCES}
    empty, milliseconds = [], []
    for user, question in tqdm(asked, desc="search", unit="q", disable=not progress):
        mapping = mappings[user.user_id]
        path = f"users/{quote(user.user_id, safe='')}/search/"
        turns = [
            mapping.get(hit["message_id"], "")
            for hit in api.send("GET", path, params={"q": question.text, "top_k": TOP_K}).data["results"]
        ]
        memories, took = memories_search(api, user.user_id, question.text)
        milliseconds.append(took)
        empty.append(float(not memories))
        read_from = [{mapping.get(str(message_id), "") for message_id in memory["message_ids"]} for memory in memories]
        fused = [
            {mapping.get(str(message_id), "") for message_id in _found_turns(hit)}
            for hit in api.send("GET", path, params={"q": question.text, "top_k": TOP_K, "include_memories": "true"}).data[
                "results"
            ]
        ]
        for k in KS:
            from_memories = set().union(*read_from[:k])
            recall["turns"][k].append(_recall(turns[:k], question.evidence))
            recall["memories"][k].append(_recall(from_memories, question.evidence))
            recall["memories + turns"][k].append(_recall(from_memories | set(turns[:k]), question.evidence))
            recall["fused"][k].append(_recall(set().union(*fused[:k]), question.evidence))
    by_category = {}
    for category in _categories(asked):
        chosen = [index for index, (_, question) in enumerate(asked) if question.category == category]
        by_category[category] = {
            source: {k: _mean(recall[source][k][index] for index in chosen) for k in KS} for source in SOURCES
        }
    return RecallFigures(
        recall={source: {k: _mean(values) for k, values in by_k.items()} for source, by_k in recall.items()},
        by_category=by_category,
        none={source: _mean(float(value == 0.0) for value in recall[source][TOP_K]) for source in SOURCES},
        no_memory=_mean(empty),
        memory_median_ms=statistics.median(milliseconds) if milliseconds else 0.0,
        memory_p95_ms=percentile(milliseconds, 0.95),
    )


def memories_in_context(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The memories the context's bundle considered whose line is in its system message (the
    others were left out by the memories' share of the budget)."""
    lines = {
        line
        for message in answer["messages"]
        if message.get("role") == "system"
        for line in str(message.get("content") or "").splitlines()
    }
    considered = (answer.get("memory") or {}).get("extracted_memories", [])
    return [memory for memory in considered if _memory_line(memory) in lines]


def turns_remembered(answer: dict[str, Any], question: Question, mapping: dict[str, str]) -> set[str]:
    """The evidence turns of ``question`` that a memory in the context was read from (``mapping``:
    message id -> dialog id, ``dialog_ids``)."""
    sources = {mapping.get(str(message_id), "") for memory in memories_in_context(answer) for message_id in memory["message_ids"]}
    return sources & set(question.evidence)


def context_comparison(
    api: Api, turns_api: Api, asked: Sequence[tuple[User, Question]], *, max_tokens: int, progress: bool = True
) -> ContextComparison:
    """Each question's context asked of the extracting tenant (``api``) and of the one that does not
    extract (``turns_api``, the retrieval benchmark's ``context_figures``)."""
    mappings = {user.user_id: dialog_ids(user) for user, _ in asked}
    for user in {user.user_id: user for user, _ in asked}.values():
        asking_conversation(api, user)
    by_text, by_memories, tokens_used, milliseconds, sent, considered = [], [], [], [], [], []
    for user, question in tqdm(asked, desc="context with memories", unit="q", disable=not progress):
        answer = context_asked(api, user, question, max_tokens=max_tokens)
        by_text.append(context_turns_held(answer.data, user, question))
        by_memories.append(turns_remembered(answer.data, question, mappings[user.user_id]))
        tokens_used.append(answer.data["estimated_tokens"])
        milliseconds.append(answer.milliseconds)
        sent.append(len(memories_in_context(answer.data)))
        considered.append(len((answer.data.get("memory") or {}).get("extracted_memories", [])))
    either = [text | memories for text, memories in zip(by_text, by_memories, strict=True)]
    figures = {"tokens_used": tokens_used, "milliseconds": milliseconds, "max_tokens": max_tokens}
    return ContextComparison(
        turns=context_figures(turns_api, asked, max_tokens=max_tokens, progress=progress),
        turns_and_memories=context_figures_of(asked, either, **figures),
        turns_beside_memories=context_figures_of(asked, by_text, **figures),
        memories_alone=context_figures_of(asked, by_memories, **figures),
        memories_sent=statistics.median(sent) if sent else 0.0,
        memories_considered=statistics.median(considered) if considered else 0.0,
    )


def service_usage(tenant: Any) -> tuple[dict[str, int], int]:
    """The service's own count of the tenant's extraction (ExtractionUsage summed), and its merges."""
    from django.db.models import Sum

    from extraction.models import ExtractionUsage, MemoryAction, MemoryChange

    names = ("calls", "tokens", "turns_read", "failed_calls", "dead_letters", "skipped_reads")
    sums = ExtractionUsage.objects.for_tenant(tenant).aggregate(**{name: Sum(name) for name in names})
    merges = MemoryChange.objects.for_tenant(tenant).filter(action=MemoryAction.MERGE).count()
    return {name: int(sums[name] or 0) for name in names}, merges


# --- The run --------------------------------------------------------------------------------------


def evaluation_run(
    *,
    dataset: Dataset,
    observations: ObservationSet,
    server: ModelServer,
    tally: Tally,
    stack: ExtractionStack,
    questions_per_user: int | None = None,
    context_tokens: int = CONTEXT_TOKENS,
    searchable_timeout: float = SEARCHABLE_TIMEOUT,
    extracted_timeout: float = EXTRACTED_TIMEOUT,
    progress: bool = True,
) -> Report:
    with Api(stack.url, stack.key) as api, Api(stack.url, stack.turns_key) as turns_api:
        api.check()
        started = time.perf_counter()
        with tqdm(total=dataset.turn_count, desc="ingest", unit="msg", disable=not progress) as bar:
            for user in dataset.users:
                user_store(api, user, done=bar.update)
        ingest_seconds = time.perf_counter() - started
        searchable_wait(api, dataset.users, timeout=searchable_timeout, progress=progress, alive=stack.alive)
        extracted_wait(stack.tenant, dataset.users, timeout=extracted_timeout, progress=progress, alive=stack.alive)
        extracted_seconds = time.perf_counter() - started

        usage, merges = service_usage(stack.tenant)
        memories = {user.user_id: user_memories(api, user.user_id) for user in dataset.users}
        kept = kept_figures(memories, observations, users=dataset.users, adds=tally.adds, merges=merges)
        asked = [(user, question) for user in dataset.users for question in _questions(user, questions_per_user)]
        recall = recall_figures(api, asked, progress=progress)
        context = None
        if context_tokens:  # after extraction: the second tenant's ingest does not slow the figures above
            with tqdm(total=dataset.turn_count, desc="ingest without extraction", unit="msg", disable=not progress) as bar:
                for user in dataset.users:
                    user_store(turns_api, user, done=bar.update)
            searchable_wait(turns_api, dataset.users, timeout=searchable_timeout, progress=progress, alive=stack.alive)
            context = context_comparison(api, turns_api, asked, max_tokens=context_tokens, progress=progress)
        retried = [*api.retried, *turns_api.retried]
    served = server.served().get(MODEL)
    runtimes = stack.extraction_seconds()
    cost = CostFigures(
        turns=dataset.turn_count,
        calls=served.calls if served else 0,
        failed_calls=served.errors if served else 0,
        prompt_tokens=served.prompt_tokens if served else 0,
        completion_tokens=served.completion_tokens if served else 0,
        tasks=len(runtimes),
        task_seconds=sum(runtimes),
        service=usage,
        extracted_seconds=extracted_seconds,
    )
    return Report(
        dataset=dataset.name,
        base_url=stack.url,
        tenant=stack.tenant.slug,
        users=len(dataset.users),
        turns=dataset.turn_count,
        questions=len(asked),
        questions_by_category={category: sum(1 for _, q in asked if q.category == category) for category in _categories(asked)},
        kept=kept,
        recall=recall,
        cost=cost,
        ingest_seconds=ingest_seconds,
        context=context,
        retried_requests=retried,
    )


# --- The report -----------------------------------------------------------------------------------


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "n/a"


def report_markdown(report: Report) -> str:
    kept, recall, cost = report.kept, report.recall, report.cost
    k_low, k_high = KS
    lines = [
        f"Dataset {report.dataset}: {report.users} users, {report.turns:,} turns, {report.questions:,} questions, "
        f"{kept.observations:,} observations; extracted by the scripted model {MODEL!r} for the tenant {report.tenant}, "
        f"asked through {report.base_url}/api/v1.",
        "",
        "Observations kept (statements compared by their words, case aside):",
        "",
        "| | n | share |",
        "|---|---:|---:|",
        f"| observations (evidence in the conversation) | {kept.observations:,} | |",
        f"| said by a current memory | {kept.found:,} | {_share(kept.found, kept.observations)} |",
        f"| ... read from one of its evidence turns | {kept.found_with_evidence:,} | {_share(kept.found_with_evidence, kept.observations)} |",
        f"| lost (said by no current memory) | {kept.lost_count:,} | {_share(kept.lost_count, kept.observations)} |",
        f"| current memories | {kept.memories:,} | |",
        f"| ... repeating another current memory (not merged) | {kept.repeated_memories:,} | {_share(kept.repeated_memories, kept.memories)} |",
        f"| ... saying no observation | {kept.memories_of_no_observation:,} | {_share(kept.memories_of_no_observation, kept.memories)} |",
        f"| adds the model answered | {kept.adds_answered:,} | |",
        f"| merged into a memory saying the same (merge changes) | {kept.merges:,} | {_share(kept.merges, kept.adds_answered)} |",
    ]
    if kept.skipped:
        lines.append(f"\n{kept.skipped} observations name no turn of their conversation as evidence and are not counted.")
    if kept.lost:
        lines += ["", "Lost, the first ones:", *[f"- {statement}" for statement in kept.lost]]
    header = " | ".join(f"{source} @{k}" for source in SOURCES for k in KS)
    lines += [
        "",
        f"Recall of the answer turns (turns: user search, top_k={TOP_K}; memories: memory search, top_k={TOP_K}, a memory "
        "finding the turns it was read from; memories + turns: both at the same k; fused: the user search with "
        "include_memories=true, its top k results of either kind):",
        "",
        f"| questions | n | {header} |",
        "|---|---:|" + "---:|" * (len(SOURCES) * len(KS)),
        f"| all | {report.questions} | " + " | ".join(f"{recall.recall[s][k]:.3f}" for s in SOURCES for k in KS) + " |",
    ]
    for category, count in report.questions_by_category.items():
        values = recall.by_category[category]
        lines.append(f"| {category} | {count} | " + " | ".join(f"{values[s][k]:.3f}" for s in SOURCES for k in KS) + " |")
    lines += [
        "",
        f"- No answer turn in the top {TOP_K}: "
        + ", ".join(f"{source} {recall.none[source]:.1%}" for source in SOURCES)
        + f"; {recall.no_memory:.1%} of the questions found no memory at all.",
        f"- Memory search (GET /users/<user>/memories/?query=...&top_k={TOP_K}): median {recall.memory_median_ms:.1f} ms, "
        f"p95 {recall.memory_p95_ms:.1f} ms.",
        "",
        "Cost of the derived workers' extraction:",
        "",
        "| | total | per turn |",
        "|---|---:|---:|",
        f"| model calls (failed: {cost.failed_calls}) | {cost.calls:,} | {cost.calls / cost.turns:.3f} |",
        f"| prompt tokens | {cost.prompt_tokens:,} | {cost.prompt_tokens / cost.turns:.0f} |",
        f"| answer tokens | {cost.completion_tokens:,} | {cost.completion_tokens / cost.turns:.1f} |",
        f"| seconds in extraction tasks ({cost.tasks:,} tasks) | {cost.task_seconds:.1f} | {cost.task_seconds / cost.turns * 1000:.1f} ms |",
        "",
        "- The service's own count (ExtractionUsage): "
        + ", ".join(f"{name} {value:,}" for name, value in cost.service.items())
        + ".",
        f"- Ingest {report.ingest_seconds:.1f} s; every turn read {cost.extracted_seconds:.1f} s after the ingest began "
        f"(the model answers at once: a real model adds its own time per call).",
    ]
    if report.context is not None:
        lines += ["", *_context_lines(report, report.context)]
    if report.retried_requests:
        lines.append(f"- {len(report.retried_requests)} requests were answered 429 or 503 (or cut) and sent again:")
        lines += [f"  - {retried}" for retried in report.retried_requests[:5]]
    return "\n".join(lines)


def _context_lines(report: Report, context: ContextComparison) -> list[str]:
    def table(columns: dict[str, ContextFigures]) -> list[str]:
        rows = [
            "| questions | n | " + " | ".join(f"{name}: every | {name}: any" for name in columns) + " |",
            "|---|---:|" + "---:|" * (2 * len(columns)),
            f"| all | {report.questions} | "
            + " | ".join(f"{held.every:.1%} | {held.any:.1%}" for held in columns.values())
            + " |",
        ]
        for category, count in report.questions_by_category.items():
            cells = " | ".join(
                f"{held.every_by_category[category]:.1%} | {held.any_by_category[category]:.1%}" for held in columns.values()
            )
            rows.append(f"| {category} | {count} | {cells} |")
        return rows

    return [
        f"Context recall (POST /conversations/<user>-asking/context/, use_memory, the question as query, max_tokens "
        f"{context.turns.max_tokens}): the share of questions whose context holds every answer turn, and at least one. "
        "Turns: a turn's text is in the context (a tenant that does not extract: the retrieval benchmark's figure); "
        "turns + memories: or a memory in the system message was read from it (the extracting tenant):",
        "",
        *table({"turns": context.turns, "turns + memories": context.turns_and_memories}),
        "",
        "The contexts with memories, by part (the turns' text alone; the memories alone):",
        "",
        *table({"turns": context.turns_beside_memories, "memories": context.memories_alone}),
        "",
        f"- Median context tokens: turns {context.turns.median_tokens:,.0f}, turns + memories "
        f"{context.turns_and_memories.median_tokens:,.0f}.",
        f"- Memories in the system message: median {context.memories_sent:g} of the {context.memories_considered:g} the "
        "bundle considered (left out: those whose every source turn the context holds already, and those past the memories' share of the budget).",
    ]


def report_json(report: Report) -> dict[str, Any]:
    return asdict(report)


# --- The command ---------------------------------------------------------------------------------


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.extraction", description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo-path", type=Path, default=None, help=f"the LoCoMo file (default: {locomo.DEFAULT_HINT})")
    parser.add_argument("--users", type=int, default=None, help="the first N users (default all)")
    parser.add_argument("--questions-per-user", type=int, default=None, help="a fixed sample of N questions per user")
    parser.add_argument(
        "--quiet-seconds", type=int, default=QUIET_SECONDS, help="the tenant's MEMORY_EXTRACTION_QUIET_SECONDS (default 5)"
    )
    parser.add_argument(
        "--context-tokens",
        type=int,
        default=CONTEXT_TOKENS,
        help="max_tokens of each question's context (0: not asked, and nothing stored for the second tenant; default 4000)",
    )
    parser.add_argument(
        "--searchable-timeout", type=float, default=SEARCHABLE_TIMEOUT, help="seconds to wait for search to cover everything"
    )
    parser.add_argument(
        "--extracted-timeout", type=float, default=EXTRACTED_TIMEOUT, help="seconds to wait for every turn to be read"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    options = parser.parse_args(argv)
    if (options.users is not None and options.users < 1) or (
        options.questions_per_user is not None and options.questions_per_user < 1
    ):
        parser.error("--users and --questions-per-user must be positive")
    if options.context_tokens < 0:
        parser.error("--context-tokens must not be negative")
    if options.quiet_seconds < 1:
        parser.error("--quiet-seconds must be positive (0 would leave a session's last turns unread)")
    return options


def load(options: argparse.Namespace) -> tuple[Dataset, ObservationSet]:
    try:
        dataset = locomo.locomo_load(path=options.locomo_path)
    except locomo.LocomoMissing as error:
        raise SystemExit(str(error)) from None
    if options.users:
        dataset = Dataset(dataset.name, dataset.users[: options.users])
    path = options.locomo_path or Path(os.environ.get("LOCOMO_PATH", "locomo10.json"))
    return dataset, observations_read(path=path, dataset=dataset)


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM unwinds as Ctrl-C does: every process started is stopped


def main(argv: list[str]) -> None:
    options = arguments(argv)
    dataset, observations = load(options)
    tally = Tally(LocomoResponder(dataset, observations))
    previous = signal.signal(signal.SIGTERM, _terminated)
    server = ModelServer(ScriptedResponder(tally))
    stack = ExtractionStack(server.url, quiet_seconds=options.quiet_seconds)
    try:
        print(f"The scripted model {MODEL!r} answers at {server.url}.", flush=True)
        stack.start()
        report = evaluation_run(
            dataset=dataset,
            observations=observations,
            server=server,
            tally=tally,
            stack=stack,
            questions_per_user=options.questions_per_user,
            context_tokens=options.context_tokens,
            searchable_timeout=options.searchable_timeout,
            extracted_timeout=options.extracted_timeout,
        )
    except ApiError as error:
        raise SystemExit(f"\n{error}") from None
    except KeyboardInterrupt:
        raise SystemExit("\nInterrupted: the processes it started are stopped.") from None
    finally:
        stack.stop()
        server.stop()
        signal.signal(signal.SIGTERM, previous)
    print()
    print(report_markdown(report))
    if options.json:
        options.json.write_text(json.dumps(report_json(report), indent=2, default=str))
        print(f"\nFigures written to {options.json}.")


if __name__ == "__main__":
    main(sys.argv[1:])
