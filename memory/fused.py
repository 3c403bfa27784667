"""One search over what the service knows about a user: their past turns and the memories read from them.

Contract
--------
``user_search_fused(tenant=, request=, user_id=, include_past=False)`` answers a ``FusedResult``: the
user search (``search.selectors.memory_search``, the request as given) and the memory search
(``extraction.selectors.memories_search``, current memories only unless ``include_past``) of the same
question, merged into one list of at most ``request.top_k`` ``FusedHit``s, best first. A hit is a
``turn`` (the message hit as the user search answers it, with the ids of the user's memories read from
it) or a ``memory`` (with the ids of the messages it was read from). ``fuse`` is the merge alone, and
``fused_order`` the same merge on ids and scores (the context's, ``memory.bundle``).

How the two rankings meet: each is a convex fusion of the cosine and BM25 (``search.ranking``), each
normalised within its own candidates (the cosine min-max, BM25 by its best) before the bonuses (a
turn's speakers, dates and neighbours; a memory's subject and date). So a score is a standing among
the candidates of its own kind, not a measure comparable with the other kind's: the best memory of
a user who has three and the best of a user who has thousands both score near the top. Each list,
read ``DEPTH`` deep, is therefore scaled again, min-max (1: the best of its kind, 0: the last read),
and then:

* a turn gains ``SOURCE_WEIGHT`` of the best scaled score among the memories read from it: a turn a
  good memory was read from is one the question is about, even when its own words say it otherwise;
* a memory counts ``MEMORY_WEIGHT`` of its scaled score: on the measure below, a memory ranked alone
  finds fewer answer turns than a turn of the same standing (a short statement is easily matched by
  a question's words; its turn holds the rest);
* best first, a result whose every turn the results above it hold already (a memory whose source
  turn ranks higher, that turn below the memory) counts ``REPEAT_WEIGHT`` of its score: it still
  ranks, below what finds something new. Ties: the turn first, then each ranking's own order.

When a reranker ordered the turns (``search.selectors.SearchResult.reranked``), their scores are not
their order: each turn is then scored by its place (``standing``), so the merge keeps the reranker's
order among the turns.

The weights and the scaling were chosen on the development half of LoCoMo through the extraction
benchmark (``python -m benchmarks.extraction``, its ``fused`` column; ``benchmarks/retrieval/README.md``
has the figures): dividing each kind by its best instead of min-max, and rank fusion (1/(k + rank)),
did no better. Another tenant's or user's memories are never read: both searches are of the
tenant's user, and a turn's memories are read in the same user's scope.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.conf import settings

from conversations.models import Conversation
from extraction.selectors import MemoryFilters, MemoryHit, memories_search, user_memories
from search.selectors import SearchHit, SearchRequest, SearchResult, memory_search
from tenants.models import Tenant

# Each ranking is read this deep (at least) before the merge: a turn raised by its memories may come
# from below the top k of turns.
DEPTH = 50
MEMORY_WEIGHT = 0.8
SOURCE_WEIGHT = 0.2
REPEAT_WEIGHT = 0.5


@dataclass(frozen=True)
class MemoryResult:
    memory_id: str
    memory_kind: str
    subject: str
    text: str
    valid_from: datetime | None
    valid_to: datetime | None
    message_ids: list[str]
    conversation_pks: list[int]
    score: float | None  # the memory search's own score
    conversation_ids: list[str] = field(default_factory=list)  # the client's ids of ``conversation_pks``


@dataclass(frozen=True)
class FusedHit:
    kind: str  # "turn" or "memory"
    score: float
    turn: SearchHit | None = None
    memory: MemoryResult | None = None
    # On a turn: the user's memories read from it (on a memory, its sources are ``memory.message_ids``).
    memory_ids: tuple[str, ...] = ()


@dataclass
class FusedResult:
    search: SearchResult  # the turns' search, its hits the top of the user search at the depth read
    hits: list[FusedHit]
    memories_considered: int
    milliseconds: float = 0.0


def user_search_fused(*, tenant: Tenant, request: SearchRequest, user_id: str, include_past: bool = False) -> FusedResult:
    started = time.perf_counter()
    request.validate()
    # Never deeper than a search may go (MEMORY_MAX_PAGE_SIZE), never shallower than asked.
    depth = max(request.top_k, min(DEPTH, settings.MEMORY_MAX_PAGE_SIZE))
    turns = memory_search(tenant=tenant, request=replace(request, top_k=depth), user_id=user_id)
    memories = memories_search(
        tenant=tenant,
        user_id=user_id,
        query=request.query,
        top_k=depth,
        filters=MemoryFilters(include_past=include_past, conversation_ids=request.filters.conversation_ids),
    )
    hits = fuse(turns=turns.hits, memories=memories, top_k=request.top_k, in_order=getattr(turns, "reranked", False))
    return FusedResult(
        search=turns,
        hits=_carried(tenant=tenant, user_id=user_id, hits=hits, include_past=include_past),
        memories_considered=len(memories),
        milliseconds=(time.perf_counter() - started) * 1000,
    )


def fuse(
    *,
    turns: Sequence[SearchHit],
    memories: Sequence[MemoryHit],
    top_k: int,
    memory_weight: float = MEMORY_WEIGHT,
    source_weight: float = SOURCE_WEIGHT,
    repeat_weight: float = REPEAT_WEIGHT,
    in_order: bool = False,
) -> list[FusedHit]:
    """The ``top_k`` best of the turns and the memories on one scale (see the module's contract).
    ``in_order``: the turns' order is not their scores' (a reranker's): each is scored by its place."""
    scores = standing(len(turns)) if in_order else [hit.score for hit in turns]
    order = fused_order(
        turns=[(hit.message_id, score) for hit, score in zip(turns, scores, strict=True)],
        memories=[
            (str(hit.memory.memory_id), [str(message_id) for message_id in hit.memory.message_ids], hit.score or 0.0)
            for hit in memories
        ],
        top_k=top_k,
        memory_weight=memory_weight,
        source_weight=source_weight,
        repeat_weight=repeat_weight,
    )
    turn_hits = {hit.message_id: hit for hit in turns}
    memory_hits = {str(hit.memory.memory_id): hit for hit in memories}
    return [
        FusedHit(kind="turn", score=score, turn=turn_hits[key])
        if kind == "turn"
        else FusedHit(kind="memory", score=score, memory=_memory_result(memory_hits[key]))
        for kind, key, score in order
    ]


def fused_order(
    *,
    turns: Sequence[tuple[str, float]],
    memories: Sequence[tuple[str, Sequence[str], float]],
    top_k: int,
    memory_weight: float = MEMORY_WEIGHT,
    source_weight: float = SOURCE_WEIGHT,
    repeat_weight: float = REPEAT_WEIGHT,
) -> list[tuple[str, str, float]]:
    """The merge on ids: ``turns`` (message id, score) and ``memories`` (memory id, the message ids
    it was read from, score), each best first, into the ``top_k`` best (kind, id, fused score)."""
    turn_scores = _scaled([score for _, score in turns])
    memory_scores = _scaled([score for _, _, score in memories])
    best_read: dict[str, float] = {}  # message id -> the best scaled score of the memories read from it
    for (_, sources, _), score in zip(memories, memory_scores, strict=True):
        for message_id in sources:
            best_read[message_id] = max(best_read.get(message_id, 0.0), score)
    candidates = [
        (score + source_weight * best_read.get(message_id, 0.0), "turn", message_id, {message_id})
        for (message_id, _), score in zip(turns, turn_scores, strict=True)
    ]
    candidates += [
        (memory_weight * score, "memory", memory_id, set(sources))
        for (memory_id, sources, _), score in zip(memories, memory_scores, strict=True)
    ]
    # Best first, greedily: a candidate whose every turn the results above it hold already (a memory
    # whose source ranks, the source of a memory that ranks) counts ``repeat_weight`` of its score,
    # decided when its place comes (scores only fall, so a heap of the scores as last known suffices).
    # Ties: the turns before the memories, then each ranking's own order.
    heap = [(-score, place, False) for place, (score, *_) in enumerate(candidates)]
    heapq.heapify(heap)
    held: set[str] = set()
    chosen: list[tuple[str, str, float]] = []
    while heap and len(chosen) < top_k:
        negative, place, weighed = heapq.heappop(heap)
        _, kind, key, found = candidates[place]
        if not weighed and found <= held:
            heapq.heappush(heap, (negative * repeat_weight, place, True))
            continue
        held |= found
        chosen.append((kind, key, round(-negative, 6)))
    return chosen


def standing(count: int) -> list[float]:
    """Scores for a list whose order is all that is known: 1 for the first down to 0 for the last."""
    return [1.0 - place / (count - 1) if count > 1 else 1.0 for place in range(count)]


def _scaled(scores: list[float]) -> list[float]:
    """Min-max: the best 1, the last read 0 (all 1 when they are equal)."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    return [(score - low) / (high - low) if high > low else 1.0 for score in scores]


def _memory_result(hit: MemoryHit) -> MemoryResult:
    memory = hit.memory
    return MemoryResult(
        memory_id=str(memory.memory_id),
        memory_kind=memory.kind,
        subject=memory.subject,
        text=memory.text,
        valid_from=memory.valid_from,
        valid_to=memory.valid_to,
        message_ids=[str(message_id) for message_id in memory.message_ids],
        conversation_pks=list(memory.conversation_pks),
        score=hit.score,
    )


def _carried(*, tenant: Tenant, user_id: str, hits: list[FusedHit], include_past: bool) -> list[FusedHit]:
    """The hits with what carries them: each turn the ids of the user's memories read from it (current
    ones, past ones too with ``include_past``), each memory the client's ids of its conversations."""
    turn_ids = [hit.turn.message_id for hit in hits if hit.turn is not None]
    read_from: dict[str, list[str]] = {}
    if turn_ids:
        found = (
            user_memories(tenant=tenant, user_id=user_id, filters=MemoryFilters(include_past=include_past))
            .filter(message_ids__overlap=turn_ids)
            .values_list("memory_id", "message_ids")
        )
        for memory_id, message_ids in found:
            for message_id in map(str, message_ids):
                read_from.setdefault(message_id, []).append(str(memory_id))
    pks = {pk for hit in hits if hit.memory is not None for pk in hit.memory.conversation_pks}
    names = conversation_names(tenant=tenant, pks=pks)
    carried = []
    for hit in hits:
        if hit.turn is not None:
            carried.append(replace(hit, memory_ids=tuple(read_from.get(hit.turn.message_id, ()))))
        else:
            conversations = [names[pk] for pk in hit.memory.conversation_pks if pk in names]
            carried.append(replace(hit, memory=replace(hit.memory, conversation_ids=conversations)))
    return carried


def conversation_names(*, tenant: Tenant, pks: set[int]) -> dict[int, str]:
    """The client's conversation ids of these conversations, by primary key (one query)."""
    if not pks:
        return {}
    return dict(Conversation.objects.for_tenant(tenant).filter(pk__in=pks).values_list("pk", "conversation_id"))
