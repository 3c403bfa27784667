"""The retrieval evaluation: ingest a labelled dataset, embed it, ask every question of every method.

Contract
--------
``evaluation_run(dataset=, tenant=, ks=, questions_per_user=)`` stores each user of ``dataset`` in
``tenant`` (one conversation per session, ``<user>-s<n>``, ``user_id`` = the user; skipped when the
same sessions are stored already), computes the missing embeddings with the service's own
``conversation_embed``, then asks each question through ``search.selectors.memory_search`` (and the
conversation window for the baseline), from the user's last session as the current conversation.
It returns a ``Report``: per method, the recall of the evidence turns in the top k (the mean over
questions of the share of a question's evidence found), the share of questions answered with
nothing, the share with none of their evidence in the top k, the median latency of one query, and
the same recall per question category.
``report_markdown`` prints it, and after it this run's hybrid and BM25 figures per category beside
``REAL_CONVERSATIONS``: the same search measured independently on held-out real conversations (the
yardstick a generated dataset is to be judged by, not figures of this run). ``report_json`` is what
``--json`` writes. Needs Django set up (the command does it, pytest-django does it for the tests) and
Redis for the window.

Speakers: the first speaker of a pair is stored with role ``user``, the second ``assistant``, each
message with ``metadata={"name": speaker}``. The service sees what it sees in production (a person
and an agent, both searched), and half of the evidence sits in ``assistant`` turns, so a method
that searched only what users say would lose recall here rather than look perfect.

Query vectors are computed once per question before anything is timed (the service memoises them
per process), so every method's latency is the search itself; the median cost of embedding a
query is reported on its own line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from django.db import transaction
from tqdm import tqdm

from benchmarks.retrieval.dataset import CATEGORIES, Dataset, Question, User
from conversations import cache, tokens
from conversations.context import ContextRequest
from conversations.models import Conversation, Message
from conversations.selectors import WindowQuery, conversation_window
from memory.context import conversation_context
from search import embeddings
from search.selectors import SearchRequest, memory_search
from search.services import conversation_embed
from tenants.models import Tenant

TENANT_SLUG = "retrieval-eval"
AGENT_ID = "retrieval-eval"
SECONDS_PER_TURN = 30  # created_at = the session's start plus this per turn
WINDOW = 50  # the recent window of the first design (MEMORY_HISTORY_LIMIT)
NO_CAP = 1_000_000_000  # a vector fetch limit no user reaches: "every vector of the scope"


@dataclass(frozen=True)
class Method:
    name: str
    what: str
    # The request a question is asked with at top k; None: no search, the newest turns of the window.
    request: Callable[[Tenant, str, int], SearchRequest] | None


BARE = f"{embeddings.LOCAL_MODEL}-plain"  # the same model over the bare text, as the first design embeds


def _first_design(model: str | None) -> Callable[[Tenant, str, int], SearchRequest]:
    return lambda tenant, query, k: SearchRequest(
        query=query,
        mode="semantic",
        scope="auto",
        top_k=k,
        min_similarity=0.45,
        vector_fetch_limit=200,
        cross_session_trigger=50,
        embedding_model=model,
    )


METHODS: tuple[Method, ...] = (
    Method("recent window (50)", "the user's newest 50 turns, newest first, read through the conversation window", None),
    Method(
        "vectors alone, the first design",
        "semantic over bare-text vectors, scope auto, the 200 newest, cosine >= 0.45 (cross-session below 50)",
        _first_design(BARE),
    ),
    Method(
        "the first design's defaults, contextual vectors",
        "the same search over this service's vectors of '[date] Speaker: text'",
        _first_design(None),
    ),
    Method(
        "cosine, all turns, bare text",
        "semantic, scope user, no threshold, no cap, bare-text vectors",
        lambda tenant, query, k: SearchRequest(
            query=query,
            mode="semantic",
            scope="user",
            top_k=k,
            min_similarity=-1.0,
            vector_fetch_limit=NO_CAP,
            embedding_model=BARE,
        ),
    ),
    Method(
        "cosine, all turns",
        "semantic, scope user, no threshold, no cap on vectors",
        lambda tenant, query, k: SearchRequest(
            query=query, mode="semantic", scope="user", top_k=k, min_similarity=-1.0, vector_fetch_limit=NO_CAP
        ),
    ),
    Method(
        "BM25, all turns",
        "keyword, scope user",
        lambda tenant, query, k: SearchRequest(query=query, mode="keyword", scope="user", top_k=k),
    ),
    Method(
        "hybrid (default)",
        "the API's default request with the tenant's settings, scope user",
        lambda tenant, query, k: SearchRequest.for_tenant(tenant, query=query, scope="user", top_k=k),
    ),
)


HYBRID = "hybrid (default)"
KEYWORD = "BM25, all turns"


@dataclass(frozen=True)
class Reference:
    """Figures of the service's user search (top_k=20) measured independently on held-out real
    conversations: 10 users, 19 to 32 dated sessions each, 5,882 turns, 1,536 questions of LoCoMo's
    kinds, each turn with its speaker's ``name`` and real ``created_at``."""

    recall: dict[str, dict[int, float]]  # method -> k -> recall@k over all questions
    no_evidence: dict[str, dict[int, float]]  # method -> k -> share of questions with no evidence in the top k
    recall_by_category: dict[str, dict[str, dict[int, float]]]  # method -> category -> k -> recall@k


REAL_CONVERSATIONS = Reference(
    recall={HYBRID: {8: 0.566, 20: 0.664}, KEYWORD: {8: 0.551, 20: 0.642}},
    no_evidence={HYBRID: {20: 0.264}, KEYWORD: {20: 0.288}},
    recall_by_category={
        HYBRID: {"single-hop": {8: 0.636}, "multi-hop": {8: 0.346}, "temporal": {8: 0.657}, "open-domain": {8: 0.285}}
    },
)


# --- Ingest ----------------------------------------------------------------------------------------


def _conversation_id(user: User, number: int) -> str:
    return f"{user.user_id}-s{number}"


def _asking_id(user: User) -> str:
    """The user's new, empty conversation the context is asked from."""
    return f"{user.user_id}-asking"


def _fingerprint(user: User, number: int) -> str:
    session = user.sessions[number - 1]
    content = [session.date.isoformat(), user.speakers, [(turn.dia_id, turn.speaker, turn.text) for turn in session.turns]]
    return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:32]


def user_ingest(*, tenant: Tenant, user: User) -> bool:
    """Store the user's sessions unless exactly these are stored already; True if it wrote them."""
    expected = {_conversation_id(user, session.number): _fingerprint(user, session.number) for session in user.sessions}
    stored = Conversation.objects.for_tenant(tenant).filter(user_id=user.user_id).exclude(conversation_id=_asking_id(user))
    if {row.conversation_id: row.metadata.get("fingerprint") for row in stored} == expected:
        return False
    with transaction.atomic():
        for conversation_id in stored.values_list("conversation_id", flat=True):
            cache.erase(tenant_slug=tenant.slug, conversation_id=conversation_id)
        stored.delete()  # messages and their vectors go with them (cascade)
        for session in user.sessions:
            conversation_id = _conversation_id(user, session.number)
            cache.erase(tenant_slug=tenant.slug, conversation_id=conversation_id)  # keys left by an earlier tenant's rows
            rows = [
                Message(
                    tenant=tenant,
                    seq=seq,
                    role="user" if turn.speaker == user.speakers[0] else "assistant",
                    content=turn.text,
                    metadata={"name": turn.speaker},
                    created_at=session.date + timedelta(seconds=SECONDS_PER_TURN * (seq - 1)),
                    token_count=tokens.count(turn.text),
                )
                for seq, turn in enumerate(session.turns, start=1)
            ]
            conversation = Conversation.objects.for_tenant(tenant).create(
                tenant=tenant,
                conversation_id=conversation_id,
                user_id=user.user_id,
                agent_id=AGENT_ID,
                metadata={"fingerprint": expected[conversation_id]},
                message_count=len(rows),
                last_seq=len(rows),
                token_count=sum(row.token_count for row in rows),
            )
            for row in rows:
                row.conversation = conversation
            Message.objects.for_tenant(tenant).bulk_create(rows)
            # auto_now stamped the insert: give the conversation the session's own times.
            Conversation.objects.for_tenant(tenant).filter(pk=conversation.pk).update(
                created_at=session.date, updated_at=rows[-1].created_at if rows else session.date
            )
    return True


def dialog_ids(*, tenant: Tenant, user: User) -> dict[str, str]:
    """message_id -> dialog id, for every stored turn of the user."""
    numbers = {_conversation_id(user, session.number): session for session in user.sessions}
    mapping = {}
    rows = Message.objects.for_tenant(tenant).filter(conversation__user_id=user.user_id)
    for message_id, conversation_id, seq in rows.values_list("message_id", "conversation__conversation_id", "seq"):
        session = numbers.get(conversation_id)
        if session is not None and 1 <= seq <= len(session.turns):
            mapping[str(message_id)] = session.turns[seq - 1].dia_id
    return mapping


# --- Asking ----------------------------------------------------------------------------------------


@dataclass
class _Answers:
    """What one method returned: per question, the dialog ids found at each k, and timings."""

    found: dict[int, list[list[str]]] = field(default_factory=dict)
    empty: list[bool] = field(default_factory=list)
    milliseconds: list[float] = field(default_factory=list)
    window_holds: list[float] = field(default_factory=list)


def _window(*, tenant: Tenant, user: User) -> list[str]:
    """The message ids of the user's newest ``WINDOW`` turns, newest first, through the window read path
    of each conversation (newest session first, as one running conversation would show them)."""
    newest: list[str] = []
    for session in reversed(user.sessions):
        wanted = WINDOW - len(newest)
        if wanted <= 0:
            break
        window = conversation_window(
            tenant=tenant, conversation_id=_conversation_id(user, session.number), query=WindowQuery(limit=wanted)
        )
        newest += [message["id"] for message in reversed(window.messages)]
    return newest


def _questions(user: User, limit: int | None) -> list[Question]:
    turns = user.turns()
    usable = [question for question in user.questions if question.evidence and all(e in turns for e in question.evidence)]
    if limit is None or limit >= len(usable):
        return usable
    return random.Random(f"questions:{user.user_id}").sample(usable, limit)


def _recall(found: Iterable[str], evidence: Sequence[str]) -> float:
    found = set(found)
    return sum(1 for dialog_id in set(evidence) if dialog_id in found) / len(set(evidence))


# --- The report ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodFigures:
    name: str
    what: str
    recall: dict[int, float]
    recall_by_category: dict[str, dict[int, float]]
    no_result: float
    no_evidence: dict[int, float]  # the share of questions with none of their evidence in the top k
    median_ms: float
    window_holds: float | None = None  # the recent window: the share of evidence in the whole window


@dataclass(frozen=True)
class Report:
    dataset: str
    users: int
    turns: int
    questions: int
    questions_by_category: dict[str, int]
    ks: tuple[int, ...]
    methods: tuple[MethodFigures, ...]
    query_embedding_ms: float | None
    ingest_seconds: float
    embed_seconds: float
    context: ContextFigures | None = None


@dataclass(frozen=True)
class ContextFigures:
    """What the context built for each question holds (``use_memory``, from a new conversation of the user)."""

    max_tokens: int
    every: float  # the share of questions whose every evidence turn is in the context, whole
    any: float  # ... at least one
    every_by_category: dict[str, float]
    any_by_category: dict[str, float]
    median_tokens: float
    median_ms: float
    p95_ms: float


def _folded(text: str) -> str:
    return " ".join(text.split())


def context_turns_held(answer: dict[str, Any], user: User, question: Question) -> set[str]:
    """The evidence turns of ``question`` the context's messages hold, each whole (whitespace aside)."""
    sent = " ".join(_folded(str(message.get("content") or "")) for message in answer["messages"])
    turns = user.turns()
    return {evidence for evidence in question.evidence if _folded(turns[evidence].text) in sent}


def context_figures_of(
    asked: Sequence[tuple[User, Question]],
    held: Sequence[set[str]],
    *,
    tokens_used: Sequence[float],
    milliseconds: Sequence[float],
    max_tokens: int,
) -> ContextFigures:
    """The figures of one context per question of ``asked``: ``held`` the evidence turns each holds,
    ``tokens_used`` its ``estimated_tokens``, ``milliseconds`` the time it took to answer."""
    every = [float(set(question.evidence) <= found) for (_, question), found in zip(asked, held, strict=True)]
    some = [float(bool(set(question.evidence) & found)) for (_, question), found in zip(asked, held, strict=True)]

    def by_category(values: list[float]) -> dict[str, float]:
        return {
            category: _mean(value for value, (_, question) in zip(values, asked, strict=True) if question.category == category)
            for category in _categories(asked)
        }

    return ContextFigures(
        max_tokens=max_tokens,
        every=_mean(every),
        any=_mean(some),
        every_by_category=by_category(every),
        any_by_category=by_category(some),
        median_tokens=statistics.median(tokens_used) if tokens_used else 0.0,
        median_ms=statistics.median(milliseconds) if milliseconds else 0.0,
        p95_ms=percentile(milliseconds, 0.95),
    )


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest rank: the smallest value at least ``share`` of the values are not above."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def evaluation_run(
    *,
    dataset: Dataset,
    tenant: Tenant,
    ks: Sequence[int] = (8, 20),
    questions_per_user: int | None = None,
    methods: Sequence[Method] = METHODS,
    progress: bool = True,
    context_tokens: int = 4000,
) -> Report:
    ks = tuple(sorted(set(ks)))
    started = time.perf_counter()
    for user in tqdm(dataset.users, desc="ingest", unit="user", disable=not progress):
        user_ingest(tenant=tenant, user=user)
    ingest_seconds = time.perf_counter() - started

    started = time.perf_counter()
    conversation_ids = [_conversation_id(user, session.number) for user in dataset.users for session in user.sessions]
    models = [tenant.setting("MEMORY_EMBEDDING_MODEL")]
    if any(method.request is not None and method.request(tenant, "?", 1).embedding_model == BARE for method in methods):
        models.append(BARE)
    for model in models:
        for conversation_id in tqdm(conversation_ids, desc=f"embed ({model})", unit="conv", disable=not progress):
            conversation_embed(tenant=tenant, conversation_id=conversation_id, model=model)
    embed_seconds = time.perf_counter() - started

    asked = [(user, question) for user in dataset.users for question in _questions(user, questions_per_user)]
    embedding_ms = _embed_queries(tenant=tenant, asked=asked, progress=progress)
    mappings = {user.user_id: dialog_ids(tenant=tenant, user=user) for user in dataset.users}
    figures = []
    with tqdm(total=len(asked) * len(methods), desc="search", unit="q", disable=not progress) as bar:
        for method in methods:
            answers = _ask(tenant=tenant, method=method, asked=asked, ks=ks, mappings=mappings, done=bar.update)
            figures.append(_figures(method=method, answers=answers, asked=asked, ks=ks))
    held = _context_holds(tenant=tenant, asked=asked, max_tokens=context_tokens, progress=progress) if context_tokens else None
    return Report(
        context=held,
        dataset=dataset.name,
        users=len(dataset.users),
        turns=dataset.turn_count,
        questions=len(asked),
        questions_by_category={category: sum(1 for _, q in asked if q.category == category) for category in _categories(asked)},
        ks=ks,
        methods=tuple(figures),
        query_embedding_ms=statistics.median(embedding_ms) if embedding_ms else None,
        ingest_seconds=ingest_seconds,
        embed_seconds=embed_seconds,
    )


def _embed_queries(*, tenant: Tenant, asked: Sequence[tuple[User, Question]], progress: bool) -> list[float]:
    """Compute (and so memoise) every question's vector; the milliseconds each took."""
    model = tenant.setting("MEMORY_EMBEDDING_MODEL")
    if not model:
        return []
    embeddings.embed_query(model, "warm up")  # loading the model is not a query's cost
    timings = []
    for _, question in tqdm(asked, desc="query vectors", unit="q", disable=not progress):
        began = time.perf_counter()
        embeddings.embed_query(model, question.text)
        timings.append((time.perf_counter() - began) * 1000)
        embeddings.embed_query(BARE, question.text)  # the same vector under the baseline's name, memoised too
    return timings


def _ask(
    *,
    tenant: Tenant,
    method: Method,
    asked: Sequence[tuple[User, Question]],
    ks: tuple[int, ...],
    mappings: dict[str, dict[str, str]],
    done: Callable[[], Any],
) -> _Answers:
    answers = _Answers(found={k: [] for k in ks})
    for user, question in asked:
        mapping = mappings[user.user_id]
        if method.request is None:
            began = time.perf_counter()
            newest = [mapping.get(message_id, "") for message_id in _window(tenant=tenant, user=user)]
            answers.milliseconds.append((time.perf_counter() - began) * 1000)
            for k in ks:
                answers.found[k].append(newest[:k])
            answers.window_holds.append(_recall(newest, question.evidence))
        else:
            current = _conversation_id(user, user.sessions[-1].number)
            for k in ks:
                began = time.perf_counter()
                result = memory_search(
                    tenant=tenant, request=method.request(tenant, question.text, k), conversation_id=current, user_id=user.user_id
                )
                answers.milliseconds.append((time.perf_counter() - began) * 1000)
                answers.found[k].append([mapping.get(hit.message_id, "") for hit in result.hits])
        answers.empty.append(not answers.found[ks[-1]][-1])
        done()
    return answers


def _context_holds(*, tenant: Tenant, asked: Sequence[tuple[User, Question]], max_tokens: int, progress: bool) -> ContextFigures:
    """Ask each question's context from a new conversation of its user, as an agent would at the start
    of a conversation (``POST .../context/`` with ``use_memory`` and the question as ``query``), and
    look in the messages it answers for each evidence turn, whole (whitespace aside)."""
    held, tokens_used, milliseconds = [], [], []
    for user in {user.user_id: user for user, _ in asked}.values():
        Conversation.objects.for_tenant(tenant).get_or_create(
            tenant=tenant, conversation_id=_asking_id(user), defaults={"user_id": user.user_id, "agent_id": AGENT_ID}
        )
    request = ContextRequest(
        query=None,
        system_prompt=None,
        max_tokens=max_tokens,
        short_term_turns=tenant.setting("MEMORY_SHORT_TERM_TURNS"),
        long_term_turns=tenant.setting("MEMORY_LONG_TERM_TURNS"),
        compression_threshold=tenant.setting("MEMORY_COMPRESSION_THRESHOLD"),
    )
    for user, question in tqdm(asked, desc="context", unit="q", disable=not progress):
        began = time.perf_counter()
        answer = conversation_context(
            tenant=tenant,
            conversation_id=_asking_id(user),
            request=dataclasses.replace(request, query=question.text),
            use_memory=True,
        )
        milliseconds.append((time.perf_counter() - began) * 1000)
        held.append(context_turns_held(answer, user, question))
        tokens_used.append(answer["estimated_tokens"])
    return context_figures_of(asked, held, tokens_used=tokens_used, milliseconds=milliseconds, max_tokens=max_tokens)


def _figures(*, method: Method, answers: _Answers, asked: Sequence[tuple[User, Question]], ks: tuple[int, ...]) -> MethodFigures:
    recall = {
        k: [_recall(found, question.evidence) for found, (_, question) in zip(answers.found[k], asked, strict=True)] for k in ks
    }
    by_category = {}
    for category in _categories(asked):
        chosen = [index for index, (_, question) in enumerate(asked) if question.category == category]
        by_category[category] = {k: _mean(recall[k][index] for index in chosen) for k in ks}
    return MethodFigures(
        name=method.name,
        what=method.what,
        recall={k: _mean(values) for k, values in recall.items()},
        recall_by_category=by_category,
        no_result=_mean(float(empty) for empty in answers.empty),
        no_evidence={k: _mean(float(value == 0.0) for value in values) for k, values in recall.items()},
        median_ms=statistics.median(answers.milliseconds) if answers.milliseconds else 0.0,
        window_holds=_mean(answers.window_holds) if answers.window_holds else None,
    )


def _categories(asked: Sequence[tuple[User, Question]]) -> list[str]:
    present = {question.category for _, question in asked}
    return [category for category in CATEGORIES if category in present] + sorted(present - set(CATEGORIES))


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def report_markdown(report: Report) -> str:
    ks = report.ks
    lines = [
        f"Dataset {report.dataset}: {report.users} users, {report.turns:,} turns, {report.questions:,} questions "
        f"({', '.join(f'{category} {count}' for category, count in report.questions_by_category.items())}).",
        "",
        "| method | " + " | ".join(f"recall@{k}" for k in ks) + " | no result | median ms |",
        "|---|" + "---:|" * (len(ks) + 2),
    ]
    for method in report.methods:
        lines.append(
            f"| {method.name} | "
            + " | ".join(f"{method.recall[k]:.3f}" for k in ks)
            + f" | {method.no_result:.1%} | {method.median_ms:.1f} |"
        )
    categories = list(report.questions_by_category)
    shown = f"recall@{ks[0]}" + (f" / @{ks[-1]}" if len(ks) > 1 else "")
    lines += [
        "",
        f"By category ({shown}):",
        "",
        "| method | " + " | ".join(categories) + " |",
        "|---|" + "---:|" * len(categories),
    ]
    for method in report.methods:
        cells = []
        for category in categories:
            values = method.recall_by_category[category]
            cells.append(f"{values[ks[0]]:.3f}" + (f" / {values[ks[-1]]:.3f}" if len(ks) > 1 else ""))
        lines.append(f"| {method.name} | " + " | ".join(cells) + " |")
    if report.context is not None:
        held = report.context
        lines += [
            "",
            f"The context of each question (use_memory, max_tokens {held.max_tokens}, asked from a new conversation of the"
            f" user) holds every evidence turn, whole, for {held.every:.1%} of the questions, at least one for {held.any:.1%};"
            f" median {held.median_tokens:.0f} tokens, {held.median_ms:.1f} ms. Every evidence turn, by category: "
            + ", ".join(
                f"{category} {held.every_by_category[category]:.1%}"
                for category in categories
                if category in held.every_by_category
            )
            + ".",
        ]
    lines += ["", *_reference_table(report, REAL_CONVERSATIONS), ""]
    for method in report.methods:
        lines.append(f"- {method.name}: {method.what}.")
        if method.window_holds is not None:
            lines.append(f"  The whole window ({WINDOW} turns) holds {method.window_holds:.3f} of the evidence.")
    if report.query_embedding_ms is not None:
        lines.append(
            f"- Embedding a query: median {report.query_embedding_ms:.1f} ms (done once per question, not in the latencies above)."
        )
    lines.append(
        f"- Ingest {report.ingest_seconds:.1f} s, embedding the turns {report.embed_seconds:.1f} s (only what is missing)."
    )
    return "\n".join(lines)


def _reference_table(report: Report, reference: Reference) -> list[str]:
    """This run's hybrid and BM25 figures per category beside the reference's, n/a where either has none."""
    figures = {method.name: method for method in report.methods}
    methods = [name for name in (HYBRID, KEYWORD) if name in figures or name in reference.recall]
    ks = sorted(set(report.ks) | {k for by_k in reference.recall.values() for k in by_k})
    categories = list(report.questions_by_category) + [
        category
        for by_category in reference.recall_by_category.values()
        for category in by_category
        if category not in report.questions_by_category
    ]
    categories = list(dict.fromkeys(categories))

    def cell(value: float | None, percent: bool = False) -> str:
        if value is None:
            return "n/a"
        return f"{value:.1%}" if percent else f"{value:.3f}"

    def ours(name: str, read: Callable[[MethodFigures], float | None]) -> float | None:
        return read(figures[name]) if name in figures else None

    header = " | ".join(f"real, {name} | this run, {name}" for name in methods)
    lines = [
        "Beside real conversations. The real columns were measured independently, not by this run: the same user"
        " search (top_k=20) on held-out real conversations (10 users, 19 to 32 dated sessions, 5,882 turns,"
        " 1,536 questions); per kind only the default's recall@8 is known.",
        "",
        f"| | {header} |",
        "|---|" + "---:|" * (2 * len(methods)),
    ]
    for k in ks:
        row = [
            (cell(reference.recall.get(name, {}).get(k)), cell(ours(name, lambda method, k=k: method.recall.get(k))))
            for name in methods
        ]
        lines.append(f"| recall@{k} | " + " | ".join(f"{real} | {run}" for real, run in row) + " |")
    for k in ks:
        row = [
            (
                cell(reference.no_evidence.get(name, {}).get(k), percent=True),
                cell(ours(name, lambda method, k=k: method.no_evidence.get(k)), percent=True),
            )
            for name in methods
        ]
        if any(value != ("n/a", "n/a") for value in row):
            lines.append(f"| no evidence in the top {k} | " + " | ".join(f"{real} | {run}" for real, run in row) + " |")
    k = min(
        (k for by_category in reference.recall_by_category.values() for by_k in by_category.values() for k in by_k), default=ks[0]
    )
    for category in categories:
        row = [
            (
                cell(reference.recall_by_category.get(name, {}).get(category, {}).get(k)),
                cell(ours(name, lambda method, category=category: method.recall_by_category.get(category, {}).get(k))),
            )
            for name in methods
        ]
        lines.append(f"| {category}, recall@{k} | " + " | ".join(f"{real} | {run}" for real, run in row) + " |")
    return lines


def report_json(report: Report) -> dict[str, Any]:
    return asdict(report)
