"""Applying what an extractor read: the operations a model answers, checked, then applied to one
user's memories in one transaction.

The model reads new turns of one conversation with the user's related memories and answers a list
of operations (``operations_parse`` reads them, refusing the whole answer with ``MalformedOutput``
naming the problem when it is not one):

- ``{"op": "add", "kind", "subject", "text", "valid_from"?, "confidence"?, "sources"}``
- ``{"op": "update", "memory_id", "text", "kind"?, "subject"?, "valid_from"?, "confidence"?, "sources"}``
- ``{"op": "delete", "memory_id", "valid_to"?, "sources"}``
- ``{"op": "none"}``

``memories_apply`` then writes them, under rules the model cannot bend whatever the turns told it:

- **Its user and tenant only.** The user, the tenant and the conversation are the caller's, never
  the answer's; a ``memory_id`` that is not a memory of this user of this tenant is refused (the
  operation is skipped and counted in ``Applied.refused`` with why), so a message cannot make the
  extractor touch anyone else's memories.
- **Sources are what was read.** An operation's ``sources`` are kept only where they are among the
  messages given to the model (``read``); an add or update left with none is refused.
- **Once.** The conversation's ``ExtractionWatermark`` says how far it was read: applying a read
  that ends at or before it changes nothing (``Applied.repeated``), so a task retried after it
  committed cannot add twice.
- **Near-duplicates merge.** An add whose text, kind and subject match a current memory of the user
  (case, spacing and punctuation aside) joins its sources to that memory (a ``merge`` change).
- **Nothing is erased, and the past stays answerable.** An update (the world changed: the user
  moved) keeps the memory's id for the new version and keeps the version it replaced as a memory of
  its own (``version_of``), holding until the new version began; a delete sets ``valid_to`` and keeps
  the memory. Either is dated by what the model says (``valid_from`` of the new version, ``valid_to``
  of what stopped) or else by when its first source was said, never by when the answer was applied,
  so that a question about a time answers what held then. A correction by hand
  (``memory_correct``) fixes what was recorded instead: it rewrites the version in place, the text
  it replaced kept in the change log.

Every apply of one user takes a transaction-scoped advisory lock on (tenant, user), so two
extractions of the same user queue behind each other; and it holds the conversation's row against an
erase (``_still_there``), so that an erase during an extraction leaves nothing read from it.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any

import structlog
from django.db import connection, transaction
from django.utils import timezone

from conversations.models import Conversation, Message
from core.exceptions import MemoryServiceError, NotFound, Unstorable
from core.storable import storable_datetime, storable_text
from extraction.models import ExtractionWatermark, Memory, MemoryAction, MemoryChange, MemoryKind
from search import embeddings
from search.embeddings import speaker_of
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

OPERATIONS = ("add", "update", "delete", "none")
MAX_OPERATIONS = 100  # per answer: more is not an extraction of a few turns
MAX_TEXT_CHARS = 2000
MAX_SUBJECT_CHARS = 200


class MalformedOutput(MemoryServiceError):
    """A model's answer that is not a list of operations: nothing of it is applied."""

    code = "malformed_model_output"
    status = 502


@dataclass(frozen=True)
class Operation:
    op: str
    memory_id: uuid.UUID | None = None
    kind: str | None = None
    subject: str | None = None
    text: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: float | None = None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReadMessage:
    """A message the model was given: its public id, its conversation and when it was said, and what
    the prompt shows of it (its place, role, speaker and text)."""

    message_id: uuid.UUID
    conversation_pk: int
    created_at: datetime
    seq: int = 0
    role: str = "user"
    speaker: str = ""
    text: str = ""


@dataclass
class Applied:
    added: int = 0
    updated: int = 0
    deleted: int = 0
    merged: int = 0
    unchanged: int = 0  # "none", or an update that changed nothing
    refused: list[str] = field(default_factory=list)  # why each refused operation was
    repeated: bool = False  # the read ended at or before the watermark: nothing was applied
    erased: bool = False  # the conversation was erased while its turns were read: nothing was applied


def messages_read(
    *, tenant: Tenant, conversation: Conversation, after_seq: int = 0, through_seq: int | None = None, limit: int | None = None
) -> list[ReadMessage]:
    """The conversation's persisted user and assistant turns after ``after_seq`` (through
    ``through_seq``, at most ``limit`` of them), in order: what an extractor gives its model, and so
    the only messages an operation may name as its sources."""
    rows = Message.objects.for_tenant(tenant).filter(conversation=conversation, seq__gt=after_seq, role__in=("user", "assistant"))
    if through_seq is not None:
        rows = rows.filter(seq__lte=through_seq)
    rows = rows.order_by("seq").values_list("message_id", "created_at", "seq", "role", "metadata", "content")
    if limit is not None:
        rows = rows[:limit]
    return [
        ReadMessage(
            message_id=message_id,
            conversation_pk=conversation.pk,
            created_at=created_at,
            seq=seq,
            role=role,
            speaker=speaker_of(role, metadata),
            text=content or "",
        )
        for message_id, created_at, seq, role, metadata, content in rows
    ]


# --- Reading the answer ----------------------------------------------------------------------------


def operations_parse(answer: Any) -> list[Operation]:
    """The operations of a model's answer (``{"operations": [...]}`` or the list alone); raises
    ``MalformedOutput`` naming the first problem, before anything is written."""
    items = answer.get("operations") if isinstance(answer, Mapping) else answer
    if not isinstance(items, list):
        raise MalformedOutput('The answer is not a list of operations: expected {"operations": [...]}.')
    if len(items) > MAX_OPERATIONS:
        raise MalformedOutput(f"The answer holds {len(items)} operations; at most {MAX_OPERATIONS} are read.")
    return [_operation(item, index) for index, item in enumerate(items)]


def _operation(item: Any, index: int) -> Operation:
    where = f"operations[{index}]"
    if not isinstance(item, Mapping):
        raise MalformedOutput(f"{where} is not an object.")
    op = item.get("op")
    if op not in OPERATIONS:
        raise MalformedOutput(f"{where}.op must be one of {', '.join(OPERATIONS)} ({_described(op)} given).")
    if op == "none":
        return Operation(op="none")
    memory_id = _memory_id(item, where) if op in ("update", "delete") else None
    kind = item.get("kind")
    if kind is not None and kind not in MemoryKind.values:
        raise MalformedOutput(f"{where}.kind must be one of {', '.join(MemoryKind.values)} ({_described(kind)} given).")
    if op == "add" and kind is None:
        raise MalformedOutput(f"{where}: an add needs a kind ({', '.join(MemoryKind.values)}).")
    subject = _text(item, "subject", where, limit=MAX_SUBJECT_CHARS, required=op == "add")
    text = _text(item, "text", where, limit=MAX_TEXT_CHARS, required=op in ("add", "update"))
    confidence = item.get("confidence")
    if confidence is not None and (
        isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1
    ):
        raise MalformedOutput(f"{where}.confidence must be a number from 0 to 1 ({_described(confidence)} given).")
    sources = item.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(source, str) for source in sources):
        raise MalformedOutput(f"{where}.sources must be a list of message ids.")
    return Operation(
        op=op,
        memory_id=memory_id,
        kind=kind,
        subject=subject,
        text=text,
        valid_from=_when(item, "valid_from", where),
        valid_to=_when(item, "valid_to", where),
        confidence=None if confidence is None else float(confidence),
        sources=tuple(sources),
    )


def _memory_id(item: Mapping[str, Any], where: str) -> uuid.UUID:
    value = item.get("memory_id")
    try:
        return uuid.UUID(value)
    except (AttributeError, TypeError, ValueError):
        raise MalformedOutput(
            f"{where}.memory_id must be a memory's id: an update or delete names one ({_described(value)} given)."
        ) from None


def _described(value: Any) -> str:
    """What a value of the answer is, without what it says: an error about it is logged, and the
    answer may be about a user whose data is later erased (logs carry no content)."""
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)  # a number or a constant says nothing about anyone
    if isinstance(value, str):
        return f"a text of {len(value)} characters"
    return {dict: "an object", list: "an array"}.get(type(value), type(value).__name__)


def _text(item: Mapping[str, Any], name: str, where: str, *, limit: int, required: bool) -> str | None:
    value = item.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise MalformedOutput(f"{where}.{name} must be non-empty text.")
    try:
        value = storable_text(" ".join(value.split()), field=f"{where}.{name}")
    except Unstorable as error:
        raise MalformedOutput(str(error)) from None
    if len(value) > limit:
        raise MalformedOutput(f"{where}.{name} is {len(value)} characters; at most {limit}.")
    return value


def _when(item: Mapping[str, Any], name: str, where: str) -> datetime | None:
    """A date (``YYYY-MM-DD``, the start of that day in UTC) or an ISO 8601 time with its offset,
    within the times that can be stored and read back (``core.storable.storable_datetime``)."""
    value = item.get(name)
    if value is None:
        return None
    parsed: datetime | None = None
    if isinstance(value, str):
        try:
            parsed = datetime.combine(date.fromisoformat(value), time(), tzinfo=UTC)
        except ValueError:
            try:
                parsed = datetime.fromisoformat(value)
            except ValueError:
                parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise MalformedOutput(f"{where}.{name} is not a date (YYYY-MM-DD) or an ISO 8601 time with its offset.")
    try:
        return storable_datetime(parsed, field=f"{where}.{name}")
    except Unstorable as error:
        raise MalformedOutput(error.message) from None


# --- Applying it -----------------------------------------------------------------------------------


def memories_apply(
    *,
    tenant: Tenant,
    conversation: Conversation,
    read_through_seq: int,
    read: Sequence[ReadMessage],
    operations: Iterable[Operation],
    model: str,
    replay: bool = False,
) -> Applied:
    """Apply ``operations`` read from ``conversation``'s messages up to ``read_through_seq`` (the
    messages given to the model: ``read``) to the memories of the conversation's user, and move the
    conversation's watermark there; see the module's rules. A ``replay`` (a dead letter's read, already
    behind the watermark) is applied whatever the watermark and leaves it where it is: its adds merge
    with what an earlier replay wrote."""
    with transaction.atomic():
        _user_lock(tenant, conversation.user_id)
        if not _still_there(tenant, conversation):
            return Applied(erased=True)
        watermark, _ = ExtractionWatermark.objects.for_tenant(tenant).get_or_create(tenant=tenant, conversation=conversation)
        if read_through_seq <= watermark.read_through_seq and not replay:
            return Applied(repeated=True)
        # Messages erased while the model read them are no source (``_still_there``).
        kept = set(
            Message.objects.for_tenant(tenant)
            .filter(conversation=conversation, message_id__in=[message.message_id for message in read])
            .values_list("message_id", flat=True)
        )
        applying = _Applying(
            tenant=tenant,
            user_id=conversation.user_id,
            read={str(message.message_id): message for message in read if message.message_id in kept},
            model=model,
            now=timezone.now(),
        )
        for operation in operations:
            applying.apply(operation)
        if read_through_seq > watermark.read_through_seq:
            watermark.read_through_seq = read_through_seq
            watermark.updated_at = applying.now
            watermark.save(update_fields=["read_through_seq", "updated_at"])
    applied = applying.applied
    logger.info(
        "memories_applied",
        tenant=tenant.slug,
        added=applied.added,
        updated=applied.updated,
        deleted=applied.deleted,
        merged=applied.merged,
        refused=len(applied.refused),
    )
    return applied


def _still_there(tenant: Tenant, conversation: Conversation) -> bool:
    """Whether the conversation still exists, its row then locked against an erase until the apply
    commits (FOR KEY SHARE: the erase's FOR UPDATE waits, the appends' updates do not). An erase that
    began first has erased what was derived from it already: the apply then writes nothing; one that
    begins after erases what the apply wrote. Either way nothing read from erased messages stays."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {Conversation._meta.db_table} WHERE id = %s AND tenant_id = %s FOR KEY SHARE",  # noqa: S608 - a constant
            [conversation.pk, tenant.pk],
        )
        return cursor.fetchone() is not None


@dataclass
class _Applying:
    """One apply: its user, the messages its model read (by public id), and what it did so far."""

    tenant: Tenant
    user_id: str
    read: dict[str, ReadMessage]
    model: str
    now: datetime
    applied: Applied = field(default_factory=Applied)

    def apply(self, operation: Operation) -> None:
        if operation.op == "none":
            self.applied.unchanged += 1
            return
        sources = [self.read[source] for source in dict.fromkeys(operation.sources) if source in self.read]
        if operation.op in ("add", "update") and not sources:
            self.applied.refused.append(f"{operation.op}: none of its sources is among the messages read")
            return
        if operation.op == "add":
            self._add(operation, sources)
            return
        memory = self._memories().filter(memory_id=operation.memory_id).first()
        if memory is None:
            self.applied.refused.append(f"{operation.op}: {operation.memory_id} is not a current memory of this user")
        elif operation.op == "update":
            self._update(memory, operation, sources)
        else:
            self._delete(memory, operation, sources)

    def _memories(self) -> Any:
        """The user's current memories: the only ones an operation may name."""
        return Memory.objects.for_tenant(self.tenant).filter(user_id=self.user_id, valid_to__isnull=True)

    def _add(self, operation: Operation, sources: list[ReadMessage]) -> None:
        assert operation.kind
        assert operation.subject
        assert operation.text
        wanted = (_normalised(operation.subject), _normalised(operation.text))
        twin = next(
            (
                memory
                for memory in self._memories().filter(kind=operation.kind)
                if (_normalised(memory.subject), _normalised(memory.text)) == wanted
            ),
            None,
        )
        if twin is not None:
            twin.confidence = max(twin.confidence, operation.confidence or 0.0)
            self._save(twin, MemoryAction.MERGE, sources)
            self.applied.merged += 1
            return
        memory = Memory(
            tenant=self.tenant,
            user_id=self.user_id,
            kind=operation.kind,
            subject=operation.subject,
            text=operation.text,
            valid_from=operation.valid_from or _said(sources),
            confidence=1.0 if operation.confidence is None else operation.confidence,
            model=self.model,
            created_at=self.now,
        )
        self._save(memory, MemoryAction.ADD, sources)
        self.applied.added += 1

    def _update(self, memory: Memory, operation: Operation, sources: list[ReadMessage]) -> None:
        text = operation.text or memory.text
        kind = operation.kind or memory.kind
        subject = operation.subject or memory.subject
        if (_normalised(text), kind, _normalised(subject)) == (
            _normalised(memory.text),
            memory.kind,
            _normalised(memory.subject),
        ):
            self.applied.unchanged += 1
            return
        began = _not_before(operation.valid_from or _said(sources), memory.valid_from)
        self._keep_past_version(memory, until=began)
        previous = memory.text
        memory.text, memory.kind, memory.subject, memory.model = text, kind, subject, self.model
        memory.embedding, memory.embedding_model = None, ""  # embedded again by the extraction that wrote it
        memory.valid_from = began
        if operation.confidence is not None:
            memory.confidence = operation.confidence
        self._save(memory, MemoryAction.UPDATE, sources, previous_text=previous)
        self.applied.updated += 1

    def _keep_past_version(self, memory: Memory, *, until: datetime) -> None:
        """The version an update replaces, as a memory of its own that held until ``until``: a copy of
        the row as it stands (text, sources, vector), under an id of its own."""
        past = copy.copy(memory)
        past.pk, past._state.adding = None, True  # Django's way to save a copy as a new row
        past.memory_id, past.valid_to, past.version_of, past.updated_at = uuid.uuid4(), until, memory, self.now
        past.save()

    def _delete(self, memory: Memory, operation: Operation, sources: list[ReadMessage]) -> None:
        """Take a memory back as of when it stopped holding: the model's ``valid_to``, else when the
        turn that said so was said (a delete read days later is still dated by its turn)."""
        stopped = operation.valid_to or (_said(sources) if sources else self.now)
        memory.valid_to = _not_before(stopped, memory.valid_from)
        self._save(memory, MemoryAction.DELETE, sources)
        self.applied.deleted += 1

    def _save(self, memory: Memory, action: str, sources: list[ReadMessage], *, previous_text: str | None = None) -> None:
        """Save ``memory`` with ``sources`` joined to its own, and the change that made this version."""
        memory.message_ids = list(dict.fromkeys([*memory.message_ids, *(source.message_id for source in sources)]))
        memory.conversation_pks = sorted({*memory.conversation_pks, *(source.conversation_pk for source in sources)})
        memory.updated_at = self.now
        memory.save()
        MemoryChange.objects.for_tenant(self.tenant).create(
            tenant=self.tenant,
            memory=memory,
            action=action,
            text=memory.text,
            previous_text=previous_text,
            valid_from=memory.valid_from,
            valid_to=memory.valid_to,
            confidence=memory.confidence,
            message_ids=[source.message_id for source in sources],
            model=self.model,
            changed_at=self.now,
        )


def _said(sources: list[ReadMessage]) -> datetime:
    """When the first of an operation's sources was said: what the operation is dated by when the
    model gives no date."""
    return min(source.created_at for source in sources)


def _not_before(moment: datetime, start: datetime | None) -> datetime:
    """``moment``, or ``start`` when it is earlier: a version never stops before it began."""
    return start if start is not None and moment < start else moment


WORDS = re.compile(r"\w+")


def _normalised(text: str) -> str:
    """The words of a text, case folded: what two near-duplicate statements share."""
    return " ".join(WORDS.findall(text.casefold()))


# --- Vectors, for search ---------------------------------------------------------------------------


def memories_embed(*, tenant: Tenant, user_id: str) -> int:
    """Embed the user's memories that have no vector of the tenant's model (best effort). Returns how many."""
    model = tenant.setting("MEMORY_EMBEDDING_MODEL") or ""
    if not model:
        return 0
    missing = list(
        Memory.objects.for_tenant(tenant)
        .filter(user_id=user_id)
        .exclude(embedding_model=model)
        .values_list("pk", "subject", "text")[:1_000]
    )
    if not missing:
        return 0
    try:
        matrix = embeddings.embed_documents(model, [f"{subject}: {text}" for _, subject, text in missing], tenant=tenant)
    except Exception as error:  # found by its words until the next run embeds it
        logger.warning("memory_embedding_failed", tenant=tenant.slug, model=model, error=repr(error))
        return 0
    for (pk, _, text), row in zip(missing, matrix, strict=True):
        # Only if the text is still the one embedded: a correction meanwhile is embedded next time.
        Memory.objects.for_tenant(tenant).filter(pk=pk, text=text).update(
            embedding=embeddings.to_bytes(row), embedding_model=model
        )
    return len(missing)


# --- An operator's or a client's corrections ---------------------------------------------------------

# What a correction may change, and the model recorded with it (``by``: "api", "admin:<username>").
CORRECTABLE = ("kind", "subject", "text", "valid_from", "valid_to", "confidence")


class MemoryNotFound(NotFound):
    pass


class InvalidCorrection(MemoryServiceError):
    """A correction naming a field it cannot change or a value a memory cannot hold: nothing is written."""

    code = "validation_error"
    status = 400


def memory_correct(*, tenant: Tenant, user_id: str, memory_id: uuid.UUID, changes: Mapping[str, Any], by: str) -> Memory:
    """Correct one memory of a user by hand: its ``changes`` (of ``CORRECTABLE``, checked as a model's
    are) made, the version replaced kept as history (an ``update`` change recorded as made by ``by``).
    Setting ``valid_to`` takes it back as a delete would; clearing it (None) makes it current again. A
    correction that changes nothing (one sent twice) records nothing."""
    unknown = sorted(set(changes) - set(CORRECTABLE))
    if unknown:
        raise InvalidCorrection(
            f"A correction changes {', '.join(CORRECTABLE)}; not {', '.join(unknown)}.", details={"fields": unknown}
        )
    with transaction.atomic():
        _user_lock(tenant, user_id)
        memory = Memory.objects.for_tenant(tenant).filter(user_id=user_id, memory_id=memory_id).first()
        if memory is None:
            raise MemoryNotFound(f"User {user_id!r} has no memory {memory_id}.")
        item = {key: value for key, value in changes.items() if key != "valid_to"}
        try:
            checked = _operation({"op": "update", "memory_id": str(memory_id), "text": memory.text, **item}, 0)
            valid_to = _when(changes, "valid_to", "memory")
        except MalformedOutput as error:
            raise InvalidCorrection(error.message.replace("operations[0].", "")) from None
        previous = memory.text
        before = (memory.kind, memory.subject, memory.text, memory.valid_from, memory.valid_to, memory.confidence)
        memory.kind = checked.kind or memory.kind
        memory.subject = checked.subject or memory.subject
        memory.text = checked.text or memory.text
        memory.valid_from = checked.valid_from or memory.valid_from
        if checked.confidence is not None:
            memory.confidence = checked.confidence
        if "valid_to" in changes:
            if valid_to is None and memory.version_of_id is not None:
                raise InvalidCorrection(
                    "This is a past version of another memory: it cannot be made current again. Correct the memory it is "
                    "a version of instead.",
                    details={"field": "valid_to", "version_of": str(memory.version_of.memory_id)},
                )
            memory.valid_to = valid_to
        if memory.valid_from is not None and memory.valid_to is not None and memory.valid_to < memory.valid_from:
            raise InvalidCorrection(
                "valid_to is before valid_from: a memory stops holding after it began.",
                details={"field": "valid_to" if "valid_to" in changes else "valid_from"},
            )
        if (memory.kind, memory.subject, memory.text, memory.valid_from, memory.valid_to, memory.confidence) == before:
            return memory  # sent again, or nothing new: no change to record
        memory.model = by
        if memory.text != previous:
            memory.embedding, memory.embedding_model = None, ""  # embedded again below
        now = timezone.now()
        memory.updated_at = now
        memory.save()
        MemoryChange.objects.for_tenant(tenant).create(
            tenant=tenant,
            memory=memory,
            action=MemoryAction.DELETE if memory.valid_to is not None and "valid_to" in changes else MemoryAction.UPDATE,
            text=memory.text,
            previous_text=previous,
            valid_from=memory.valid_from,
            valid_to=memory.valid_to,
            confidence=memory.confidence,
            message_ids=[],
            model=by,
            changed_at=now,
        )
    logger.info("memory_corrected", tenant=tenant.slug, memory=str(memory_id), by=by, fields=sorted(changes))
    memories_embed(tenant=tenant, user_id=user_id)
    return memory


def memory_invalidate(*, tenant: Tenant, user_id: str, memory_id: uuid.UUID, by: str) -> Memory:
    """Take one memory back (``valid_to`` now, its history kept), as an extractor's delete does; one
    taken back already keeps the time it stopped holding."""
    with transaction.atomic():
        _user_lock(tenant, user_id)
        memory = Memory.objects.for_tenant(tenant).filter(user_id=user_id, memory_id=memory_id).first()
        if memory is None:
            raise MemoryNotFound(f"User {user_id!r} has no memory {memory_id}.")
        if memory.valid_to is not None:
            return memory
        return memory_correct(  # within the lock held: nothing takes it back between the two
            tenant=tenant, user_id=user_id, memory_id=memory_id, changes={"valid_to": timezone.now().isoformat()}, by=by
        )


def _user_lock(tenant: Tenant, user_id: str) -> None:
    """Every write of one user's memories queues here (transaction-scoped), so none needs a row lock."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"memories:{tenant.pk}:{user_id}"])


# --- Erasing ---------------------------------------------------------------------------------------


def conversation_memories_erase(*, tenant: Tenant, conversation_id: str, **_: Any) -> int:
    """Erase the memories derived from a conversation's messages, their history with them (a receiver
    of ``conversations.services.messages_cleared``, inside the erase's transaction). Returns how many."""
    conversation = Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).first()
    if conversation is None:
        return 0
    ExtractionWatermark.objects.for_tenant(tenant).filter(conversation=conversation).delete()
    erased = Memory.objects.for_tenant(tenant).filter(conversation_pks__contains=[conversation.pk]).delete()[1]
    return erased.get(Memory._meta.label, 0)


def user_memories_erase(*, tenant: Tenant, user_id: str) -> int:
    """Erase every memory of one user of a tenant, with its history. Returns how many."""
    erased = Memory.objects.for_tenant(tenant).filter(user_id=user_id).delete()[1]
    logger.info("user_memories_erased", tenant=tenant.slug, memories=erased.get(Memory._meta.label, 0))
    return erased.get(Memory._meta.label, 0)
