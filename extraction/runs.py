"""One extraction run of a conversation: whether it is due, the daily bounds, the model call, and
what its answer changes.

``conversation_extract`` is what the derived worker runs (``extraction.tasks``). It reads the
conversation's user and assistant turns past its watermark, oldest first, ``MEMORY_EXTRACTION_MAX_TURNS``
at a time, and for each read:

1. **Due?** Only when the tenant extracts (``MEMORY_EXTRACTION_ENABLED`` and a chat model), the
   conversation has a user (memories are a user's), and either ``MEMORY_EXTRACTION_BATCH_TURNS`` turns
   are unread or the conversation went quiet (the sweep's runs, ``quiet=True``). Otherwise nothing.
2. **Within the tenant's daily bounds** (``MEMORY_EXTRACTION_DAILY_CALLS``, ``_TOKENS``, counted in
   ``ExtractionUsage`` per UTC day). Past one, the read is skipped and counted; its turns stay unread
   and are read by a later run once the bound allows (the quiet sweep finds them): nothing is lost.
3. **The model call**: the prompt (``extractor``) with the user's current memories most related to the
   turns, at temperature 0, bounded by ``MEMORY_EXTRACTION_TIMEOUT``. Its calls and tokens are counted
   whether it answers or not.
4. **The answer applied** (``services.memories_apply``: its user only, once, near-duplicates merged,
   history kept), then the memories it wrote embedded for search (best effort: a memory without a
   vector is found by its words, and embedded by the next run).

Two runs of one conversation never read at once: the second finds it busy and leaves (the first reads
on while a batch is due; what is left is read by the quiet sweep).

A model that cannot be set up as configured (a tenant's own base URL and no credential stored, say)
reads nothing: the status says ``no_model`` and the run stops there, its turns unread until it can
(never a dead letter for a configuration). A model that fails, times out or answers what cannot be
applied raises ``ExtractionFailed``: the task
retries it with backoff and in the end records a dead letter holding the read (``after_seq``,
``through_seq``), and moves the watermark past it so the conversation's later turns are read; an
operator's replay reads that range again (``replay``), which merges rather than duplicates.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date

import structlog
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.utils import timezone
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from conversations import tokens
from conversations.models import Conversation
from core.exceptions import ServiceUnavailable
from core.storable import cleaned_text
from extraction import extractor, selectors, services
from extraction.models import ExtractionUsage, ExtractionWatermark
from summaries.summarizer import invoke_within
from tenants import chat_models
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


class ExtractionFailed(Exception):
    """The model could not give an answer that applies: retried, then a dead letter."""

    def __init__(self, message: str, *, reason: str, after_seq: int, through_seq: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.after_seq = after_seq
        self.through_seq = through_seq


class NoModel(Exception):
    """The tenant's model cannot be set up as configured (found as the run began to call it): the run
    stops with ``no_model`` and its turns stay unread, neither retried nor a dead letter."""


@dataclass
class RunResult:
    """What one run did: its reads (model calls), what they changed, and why it stopped."""

    reads: int = 0
    turns: int = 0
    added: int = 0
    updated: int = 0
    deleted: int = 0
    merged: int = 0
    refused: list[str] = field(default_factory=list)
    # read, not_due, disabled, no_model, no_user, no_conversation, over_daily_bound, busy
    stopped: str = "read"


def conversation_extract(
    *, tenant: Tenant, conversation_id: str, quiet: bool = False, after_seq: int | None = None, through_seq: int | None = None
) -> RunResult:
    """Read the conversation's unread turns (or, replaying a dead letter, the turns after ``after_seq``
    through ``through_seq``) and apply what the model answers; see the module's steps."""
    result = RunResult()
    status = selectors.extraction_status(tenant)
    if not status["enabled"]:
        result.stopped = status["reason"]
        return result
    conversation = Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).first()
    if conversation is None:
        result.stopped = "no_conversation"
        return result
    if not conversation.user_id:
        result.stopped = "no_user"
        return result
    with _reading(tenant, conversation) as alone:
        if not alone:  # another run reads it now, and reads on while a batch is due
            result.stopped = "busy"
            return result
        try:
            return _runs(
                tenant=tenant, conversation=conversation, quiet=quiet, after_seq=after_seq, through_seq=through_seq, result=result
            )
        except NoModel as error:
            logger.warning("extraction_model_not_set_up", tenant=tenant.slug, detail=str(error))
            result.stopped = "no_model"
            return result


@contextmanager
def _reading(tenant: Tenant, conversation: Conversation) -> Iterator[bool]:
    """Whether this run is the only one reading the conversation (a session advisory lock, released
    when the run ends, or by PostgreSQL with the connection of a worker that died)."""
    key = f"extract:{tenant.pk}:{conversation.pk}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [key])
        alone = bool(cursor.fetchone()[0])
    try:
        yield alone
    finally:
        if alone:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [key])


def _runs(
    *, tenant: Tenant, conversation: Conversation, quiet: bool, after_seq: int | None, through_seq: int | None, result: RunResult
) -> RunResult:
    replay = after_seq is not None
    limit = int(tenant.setting("MEMORY_EXTRACTION_MAX_TURNS"))
    while True:
        start = after_seq if replay else _watermark(tenant, conversation)
        read = services.messages_read(
            tenant=tenant, conversation=conversation, after_seq=start, through_seq=through_seq, limit=limit
        )
        if not read:
            if not replay:
                _watermark_move(tenant, conversation, through=conversation.last_seq)  # tool or system turns only
            result.stopped = "read" if result.reads else "not_due"
            return result
        if not (replay or quiet) and len(read) < int(tenant.setting("MEMORY_EXTRACTION_BATCH_TURNS")):
            result.stopped = "read" if result.reads else "not_due"
            return result
        if not _within_bounds(tenant, turns=len(read)):
            result.stopped = "over_daily_bound"
            return result
        _read(tenant=tenant, conversation=conversation, start=start, read=read, result=result, replay=replay)
        if replay:
            after_seq = read[-1].seq
            if through_seq is not None and after_seq >= through_seq:
                return result


def _read(
    *,
    tenant: Tenant,
    conversation: Conversation,
    start: int,
    read: Sequence[services.ReadMessage],
    result: RunResult,
    replay: bool,
) -> None:
    through = read[-1].seq
    chosen = selectors.extraction_model_settings(tenant)
    related = _related(tenant=tenant, user_id=conversation.user_id, read=read)
    prompt = extractor.prompt_messages(
        user_id=conversation.user_id,
        memories=related,
        turns=[
            extractor.Turn(
                message_id=str(message.message_id),
                role=message.role,
                speaker=message.speaker,
                said_at=message.created_at,
                text=message.text,
            )
            for message in read
        ],
    )
    answer_text = _call(tenant=tenant, chosen=chosen, prompt=prompt, turns=len(read), after_seq=start, through_seq=through)
    try:
        operations = extractor.answer_read(answer_text)
    except services.MalformedOutput as error:
        raise ExtractionFailed(error.message, reason="malformed", after_seq=start, through_seq=through) from error
    applied = services.memories_apply(
        tenant=tenant,
        conversation=conversation,
        read_through_seq=through,
        read=read,
        operations=operations,
        model=chosen.spec,
        replay=replay,
    )
    if applied.refused:
        _count(tenant, refused_operations=len(applied.refused))
        logger.warning(
            "extraction_operations_refused",
            tenant=tenant.slug,
            conversation_id=conversation.conversation_id,
            refused=len(applied.refused),
            why=applied.refused[:5],
        )
    services.memories_embed(tenant=tenant, user_id=conversation.user_id)
    result.reads += 1
    result.turns += len(read)
    result.added += applied.added
    result.updated += applied.updated
    result.deleted += applied.deleted
    result.merged += applied.merged
    result.refused.extend(applied.refused)
    logger.info(
        "conversation_extracted",
        tenant=tenant.slug,
        conversation_id=conversation.conversation_id,
        turns=len(read),
        through_seq=through,
        added=applied.added,
        updated=applied.updated,
        deleted=applied.deleted,
        merged=applied.merged,
        refused=len(applied.refused),
        repeated=applied.repeated,
    )


def _call(
    *,
    tenant: Tenant,
    chosen: chat_models.ChatSettings,
    prompt: list[dict[str, str]],
    turns: int,
    after_seq: int,
    through_seq: int,
) -> str:
    """The model's answer as text; counts the call and its tokens; ``ExtractionFailed`` when none comes."""
    messages = [SystemMessage(content=prompt[0]["content"]), HumanMessage(content=prompt[1]["content"])]
    timeout = float(tenant.setting("MEMORY_EXTRACTION_TIMEOUT"))
    answer: AIMessage | None = None
    try:
        model = chat_models.chat_model(tenant, chosen_for_extraction(chosen, timeout=timeout))
        if chosen.provider == "openai":  # its JSON mode: the answer is one JSON object
            model = model.bind(response_format={"type": "json_object"})  # type: ignore[assignment]
        answer = invoke_within(model, messages, timeout=timeout)
    except chat_models.ChatModelNotConfigured as error:  # never called: the turns wait for a model that can be
        raise NoModel(error.message) from error
    except ServiceUnavailable as error:  # the model cannot be built now (its credential cannot be read)
        _count(tenant, calls=1, failed_calls=1)
        raise ExtractionFailed(error.message, reason="unavailable", after_seq=after_seq, through_seq=through_seq) from error
    except TimeoutError as error:
        _count(tenant, calls=1, failed_calls=1, tokens=_prompt_tokens(prompt))
        raise ExtractionFailed(str(error), reason="timeout", after_seq=after_seq, through_seq=through_seq) from error
    except Exception as error:  # the provider's error, whatever its type
        _count(tenant, calls=1, failed_calls=1, tokens=_prompt_tokens(prompt))
        raise ExtractionFailed(
            f"The model failed: {failure_described(error)}", reason="error", after_seq=after_seq, through_seq=through_seq
        ) from error
    text = cleaned_text(answer.text if isinstance(answer.content, str) else str(answer.text))
    usage = answer.usage_metadata or {}
    spent = int(usage.get("total_tokens") or 0) or _prompt_tokens(prompt) + tokens.count(text)
    _count(tenant, calls=1, tokens=spent, turns_read=turns)
    return text


def failure_described(error: BaseException) -> str:
    """A provider's error as logs and dead letters keep it: its type, and its HTTP status and error code
    when it has them. Its message may echo the prompt (the user's turns), so it is left out unless the
    deployment logs content (MEMORY_LOG_CONTENT)."""
    if settings.MEMORY_LOG_CONTENT:
        return repr(error)
    described = type(error).__name__
    status, code = getattr(error, "status_code", None), getattr(error, "code", None)
    if isinstance(status, int):
        described += f" (HTTP {status}"
        described += f", {code})" if isinstance(code, str) and code.isidentifier() else ")"
    return described


def chosen_for_extraction(chosen: chat_models.ChatSettings, *, timeout: float) -> chat_models.ChatSettings:
    """The tenant's chat settings as an extraction calls them: temperature 0, its own timeout, no
    retries of the client's own (the task retries, with backoff)."""
    return replace(chosen, temperature=extractor.TEMPERATURE, timeout=timeout, max_retries=0)


def _prompt_tokens(prompt: list[dict[str, str]]) -> int:
    return sum(tokens.count(message["content"]) for message in prompt)


def _related(*, tenant: Tenant, user_id: str, read: Sequence[services.ReadMessage]) -> list[extractor.Related]:
    """The user's current memories most related to the turns read (the most recently changed when the
    search finds none): the only ones the model may update or delete."""
    wanted = int(tenant.setting("MEMORY_EXTRACTION_RELATED"))
    if wanted <= 0:
        return []
    query = " ".join(message.text for message in read)[:2_000]
    memories = [hit.memory for hit in selectors.memories_search(tenant=tenant, user_id=user_id, query=query, top_k=wanted)]
    if len(memories) < wanted:
        seen = {memory.pk for memory in memories}
        recent = selectors.user_memories(tenant=tenant, user_id=user_id).exclude(pk__in=seen)[: wanted - len(memories)]
        memories.extend(recent)
    return [
        extractor.Related(
            memory_id=str(memory.memory_id),
            kind=memory.kind,
            subject=memory.subject,
            text=memory.text,
            valid_from=memory.valid_from,
        )
        for memory in memories
    ]


# --- Which tenants extract -----------------------------------------------------------------------------

# Seconds a process believes whether a tenant extracts: a tenant that turns extraction on is sent
# the task of its conversations' writes within this (the quiet sweep reads what came before).
EXTRACTING_TTL = 60.0
_extracting: dict[int, tuple[float, bool]] = {}


def tenant_extracts(tenant_id: int) -> bool:
    """Whether the persist worker should send a tenant's writes to the extraction (its setting, kept
    for ``EXTRACTING_TTL`` seconds); when that cannot be read, it sends them and the task decides."""
    now = time.monotonic()
    known = _extracting.get(tenant_id)
    if known is not None and now - known[0] < EXTRACTING_TTL:
        return known[1]
    try:
        tenant = Tenant.objects.filter(pk=tenant_id).first()
    except DatabaseError:
        return True
    extracts = tenant is not None and bool(tenant.setting("MEMORY_EXTRACTION_ENABLED"))
    _extracting[tenant_id] = (now, extracts)
    return extracts


# --- The watermark and the daily bounds --------------------------------------------------------------


def _watermark(tenant: Tenant, conversation: Conversation) -> int:
    watermark = (
        ExtractionWatermark.objects.for_tenant(tenant)
        .filter(conversation=conversation)
        .values_list("read_through_seq", flat=True)
        .first()
    )
    return watermark or 0


def _watermark_move(tenant: Tenant, conversation: Conversation, *, through: int) -> None:
    """Move the watermark forward to ``through`` (never back)."""
    with transaction.atomic():
        watermark, _ = (
            ExtractionWatermark.objects.for_tenant(tenant)
            .select_for_update()
            .get_or_create(tenant=tenant, conversation=conversation)
        )
        if through > watermark.read_through_seq:
            watermark.read_through_seq = through
            watermark.updated_at = timezone.now()
            watermark.save(update_fields=["read_through_seq", "updated_at"])


def read_abandoned(*, tenant: Tenant, conversation_id: str, through_seq: int) -> None:
    """A read that failed for good (its dead letter recorded): the conversation's later turns are read
    next, and the day's count of dead letters grows."""
    conversation = Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).first()
    if conversation is not None:
        _watermark_move(tenant, conversation, through=through_seq)
    _count(tenant, dead_letters=1)


def _today() -> date:
    return timezone.now().date()  # USE_TZ: UTC


def _count(tenant: Tenant, **counts: int) -> None:
    """Add ``counts`` to the tenant's usage of today (one upsert)."""
    day = _today()
    updated = (
        ExtractionUsage.objects.for_tenant(tenant)
        .filter(day=day)
        .update(**{name: F(name) + value for name, value in counts.items()})
    )
    if updated:
        return
    with transaction.atomic():
        usage, created = (
            ExtractionUsage.objects.for_tenant(tenant).select_for_update().get_or_create(tenant=tenant, day=day, defaults=counts)
        )
        if not created:
            ExtractionUsage.objects.for_tenant(tenant).filter(pk=usage.pk).update(
                **{name: F(name) + value for name, value in counts.items()}
            )


def over_daily_bounds(tenant: Tenant) -> bool:
    """Whether the tenant spent its calls or tokens of the day (``MEMORY_EXTRACTION_DAILY_*``)."""
    calls_bound = int(tenant.setting("MEMORY_EXTRACTION_DAILY_CALLS"))
    tokens_bound = int(tenant.setting("MEMORY_EXTRACTION_DAILY_TOKENS"))
    usage = selectors.usage_today(tenant=tenant, day=_today())
    if usage is None:
        return False
    return bool((calls_bound and usage.calls >= calls_bound) or (tokens_bound and usage.tokens >= tokens_bound))


def _within_bounds(tenant: Tenant, *, turns: int) -> bool:
    """Whether another call fits the tenant's daily bounds; a read that does not is counted as skipped."""
    if not over_daily_bounds(tenant):
        return True
    _count(tenant, skipped_reads=1, skipped_turns=turns)
    logger.warning("extraction_over_daily_bound", tenant=tenant.slug, turns=turns)
    return False
