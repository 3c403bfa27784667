"""Input validation and output shapes. Limits (bounded input) name the setting that bounds them."""

import json
import re
import uuid
from typing import Any

from django.conf import settings
from rest_framework import serializers

from conversations.api.fields import DateTimeField
from conversations.content_parts import checked_content, checked_message_metadata, with_parts
from conversations.models import Conversation, Role
from core.exceptions import LimitExceeded, Unstorable
from core.storable import storable_json, storable_text

CONVERSATION_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._@=+-]*"
CONVERSATION_ID = re.compile(CONVERSATION_ID_PATTERN)
CONVERSATION_ID_RULE = "A conversation id is made of letters, digits and . _ @ = + - (not starting with a symbol)."
OWNER_ID_MAX = 200


def validate_conversation_id(value: str) -> str:
    if len(value) > settings.MEMORY_MAX_ID_LENGTH:
        raise LimitExceeded(
            f"The conversation id is {len(value)} characters; the limit is MEMORY_MAX_ID_LENGTH={settings.MEMORY_MAX_ID_LENGTH}.",
            details={"field": "conversation_id", "size": len(value), "limit": settings.MEMORY_MAX_ID_LENGTH},
        )
    if not CONVERSATION_ID.fullmatch(value):
        raise serializers.ValidationError(CONVERSATION_ID_RULE)
    return value


def json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


class IndexedListSerializer(serializers.ListSerializer):
    """A list of items (``many=True``) whose unstorable values are named by their place in it:
    ``messages[2].metadata.x``. DRF validates the items in order, one ``run_child_validation`` each."""

    def to_internal_value(self, data: Any) -> list[Any]:
        self._position = 0
        return super().to_internal_value(data)

    def run_child_validation(self, data: Any) -> Any:
        position = self._position
        self._position += 1
        try:
            return super().run_child_validation(data)
        except Unstorable as error:
            raise error.within(f"{self.field_name}[{position}]") from None


class TextField(serializers.CharField):
    """A JSON string as sent: a number or boolean is refused, not turned into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def check_metadata(value: Any, *, field: str = "metadata") -> dict:
    """A JSON object that can be stored (``core.storable``) within MEMORY_MAX_METADATA_BYTES."""
    if not isinstance(value, dict):
        raise serializers.ValidationError(f"{field} must be a JSON object.")
    value = storable_json(value, field=field)
    size = json_size(value)
    if size > settings.MEMORY_MAX_METADATA_BYTES:
        raise LimitExceeded(
            f"{field} is {size} bytes of JSON; the limit is MEMORY_MAX_METADATA_BYTES={settings.MEMORY_MAX_METADATA_BYTES}.",
            details={"field": field, "size": size, "limit": settings.MEMORY_MAX_METADATA_BYTES},
        )
    return value


def check_batch_size(data: Any, *, field: str) -> None:
    """A batch (the list ``data[field]``) over MEMORY_MAX_BATCH items is refused before any item is read."""
    if isinstance(data, dict) and isinstance(data.get(field), list) and len(data[field]) > settings.MEMORY_MAX_BATCH:
        size = len(data[field])
        raise LimitExceeded(
            f"The batch has {size} {field}; the limit is MEMORY_MAX_BATCH={settings.MEMORY_MAX_BATCH}.",
            details={"field": field, "size": size, "limit": settings.MEMORY_MAX_BATCH},
        )


class ContentField(serializers.JSONField):
    """A message's content as sent: a string, a list of content parts, or null."""

    default_error_messages = {"invalid": "content must be a string, a list of content parts (JSON objects), or null."}

    def to_internal_value(self, data: Any) -> str | list[Any]:
        if not isinstance(data, str | list):
            self.fail("invalid")
        return data


class MetadataField(serializers.JSONField):
    """A message's metadata as sent; ``validate`` takes it through the storable door, which names
    what it refuses (DRF's own check would re-encode it first, and overflow on deep nesting)."""

    def to_internal_value(self, data: Any) -> Any:
        return data


class MessageInSerializer(serializers.Serializer):
    """One message. OpenAI-style ``tool_calls`` (assistant), ``tool_call_id`` (tool) and ``name`` may be
    sent beside ``content``: they are kept in ``metadata`` under the same names, where the context
    builder reads them (``memory_wire.messages`` describes the convention). ``content`` may be a
    list of content parts (``conversations.content_parts`` holds that contract)."""

    id = serializers.UUIDField(
        required=False,
        help_text=(
            "Your own id (UUID) makes the write idempotent. A UUIDv7 (stamped with the time it was made) is told "
            "new sooner after the service lost its record of writes in flight; one stamped more than "
            "MEMORY_MESSAGE_ID_CLOCK_SKEW seconds ahead of the service's clock is refused (400 clock_skew)."
        ),
    )
    role = serializers.ChoiceField(choices=Role.choices)
    content = ContentField(
        allow_null=True,
        help_text="Text, a list of content parts (objects with a string type: text, image_url, image...), or null "
        "(assistant only, stored as empty).",
    )
    metadata = MetadataField(required=False, default=dict)
    created_at = DateTimeField(required=False, help_text="Defaults to the time of the write.")
    tool_calls = serializers.ListField(child=serializers.DictField(), required=False, max_length=128)
    tool_call_id = serializers.CharField(required=False, max_length=200)
    name = serializers.CharField(required=False, max_length=200)

    class Meta:
        list_serializer_class = IndexedListSerializer

    def validate_content(self, value: str | list[Any] | None) -> tuple[str, list[dict[str, Any]] | None] | None:
        return None if value is None else checked_content(value)

    def validate_metadata(self, value: Any) -> dict:
        if not isinstance(value, dict):
            raise serializers.ValidationError("metadata must be a JSON object.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["content"] is None:
            if attrs["role"] != Role.ASSISTANT:
                raise serializers.ValidationError({"content": "content may be null only on an assistant message."})
            attrs["content"] = ("", None)
        attrs["content"], parts = attrs["content"]
        moved = {name: attrs.pop(name) for name in ("tool_calls", "tool_call_id", "name") if name in attrs}
        if "tool_calls" in moved and attrs["role"] != Role.ASSISTANT:
            raise serializers.ValidationError({"tool_calls": "Only an assistant message carries tool calls."})
        if "tool_call_id" in moved and attrs["role"] != Role.TOOL:
            raise serializers.ValidationError({"tool_call_id": "Only a tool message answers a tool call."})
        attrs["metadata"] = with_parts(checked_message_metadata({**attrs.get("metadata", {}), **moved}), parts)
        return attrs


class AppendSerializer(serializers.Serializer):
    """One message, or ``{"messages": [...]}`` for a batch, with the owner ids: the user is the
    conversation's (``services.lifecycle.user_check``), the agent is recorded when it is new."""

    messages = MessageInSerializer(many=True, required=False)
    role = serializers.ChoiceField(choices=Role.choices, required=False)
    content = ContentField(required=False, allow_null=True)
    id = serializers.UUIDField(required=False)
    metadata = MetadataField(required=False)
    created_at = DateTimeField(required=False)
    user_id = serializers.CharField(required=False, allow_blank=True, max_length=OWNER_ID_MAX, default="")
    agent_id = serializers.CharField(required=False, allow_blank=True, max_length=OWNER_ID_MAX, default="")

    def to_internal_value(self, data: Any) -> Any:
        check_batch_size(data, field="messages")
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        single = {name: attrs[name] for name in ("role", "content", "id", "metadata", "created_at") if name in attrs}
        if "messages" in attrs:
            if single:
                raise serializers.ValidationError("Send either one message (role, content) or a messages list, not both.")
            items = attrs["messages"]
            if not items:
                raise serializers.ValidationError({"messages": "The batch is empty; send at least one message."})
            _refuse_owners_per_message(self.initial_data["messages"])
        else:
            item = MessageInSerializer(data={**self.initial_data})
            item.is_valid(raise_exception=True)
            items = [item.validated_data]
        ids = [str(item["id"]) for item in items if item.get("id")]
        if len(ids) != len(set(ids)):
            raise serializers.ValidationError({"messages": "The same message id appears twice in the batch."})
        return {"messages": items, "user_id": attrs.get("user_id", ""), "agent_id": attrs.get("agent_id", "")}


def _refuse_owners_per_message(items: list[Any]) -> None:
    """A batch's messages share one conversation, hence one user: ``user_id`` and ``agent_id`` are sent
    once, beside ``messages``. One inside a message would otherwise be dropped unread."""
    for index, item in enumerate(items):
        named = sorted(OWNER_FIELDS & item.keys()) if isinstance(item, dict) else []
        if named:
            errors: list[dict[str, Any]] = [{} for _ in range(index)]
            sent_once = "is sent once, beside messages (a batch's messages share it), not inside a message."
            errors.append({name: [f"{name} {sent_once}"] for name in named})
            raise serializers.ValidationError({"messages": errors})


def append_values(data: Any) -> dict[str, Any]:
    """The validated body of an append: ``{"messages": [...], "user_id", "agent_id"}``.

    The shapes agents send (one message, or a batch, of ``id``, ``role``, ``content``, ``metadata`` and
    ``created_at``, with owner ids) are read directly when every value is plainly valid; any other
    body, and every invalid one, goes through ``AppendSerializer``, so that what is accepted and every
    error are the serializer's own. ``tests/conversations/test_validation_shortcuts.py`` holds the two
    paths to the same answers."""
    return _plain_or_serialized(_plain_append(data), AppendSerializer, data)


def _plain_or_serialized(
    plain: dict[str, Any] | None, serializer_class: type[serializers.Serializer], data: Any
) -> dict[str, Any]:
    """The values read directly when they were plain, else the serializer's (or its error)."""
    if plain is not None:
        return plain
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


PLAIN_MESSAGE_FIELDS = frozenset({"id", "role", "content", "metadata", "created_at"})
OWNER_FIELDS = frozenset({"user_id", "agent_id"})
BATCH_FIELDS = OWNER_FIELDS | {"messages"}
SINGLE_FIELDS = OWNER_FIELDS | PLAIN_MESSAGE_FIELDS
ROLES = frozenset(Role.values)
# Parses created_at exactly as MessageInSerializer's field does (it keeps no state between calls).
CREATED_AT = DateTimeField()


def _plain_append(data: Any) -> dict[str, Any] | None:
    """``append_values`` of a body every value of which is plainly valid; None when the serializer must decide."""
    if type(data) is not dict:
        return None
    if "messages" in data:
        items = data["messages"]
        if not data.keys() <= BATCH_FIELDS or type(items) is not list or not 0 < len(items) <= settings.MEMORY_MAX_BATCH:
            return None
    elif data.keys() <= SINGLE_FIELDS:
        items = [{name: value for name, value in data.items() if name not in OWNER_FIELDS}]
    else:
        return None
    messages = []
    for item in items:
        message = _plain_message(item)
        if message is None:
            return None
        messages.append(message)
    ids = [str(message["id"]) for message in messages if "id" in message]
    if len(ids) != len(set(ids)):
        return None
    owners = {name: data.get(name, "") for name in OWNER_FIELDS}
    for value in owners.values():
        # A CharField trims whitespace: a value it would change is left to it.
        if type(value) is not str or len(value) > OWNER_ID_MAX or value != value.strip():
            return None
        try:
            storable_text(value, field="user_id")
        except Unstorable:
            return None
    return {"messages": messages, **owners}


def _plain_message(item: Any) -> dict[str, Any] | None:
    """One message as MessageInSerializer validates it, or None unless every value is plainly valid."""
    if type(item) is not dict or not item.keys() <= PLAIN_MESSAGE_FIELDS:
        return None
    role, content, metadata = item.get("role"), item.get("content"), item.get("metadata", {})
    if type(role) is not str or role not in ROLES or type(content) not in (str, list) or type(metadata) is not dict:
        return None
    message: dict[str, Any] = {}
    try:
        text, parts = checked_content(content)
        if "id" in item:
            if type(item["id"]) is not str:
                return None
            message["id"] = uuid.UUID(hex=item["id"])
        message["role"] = role
        message["content"] = text
        message["metadata"] = with_parts(checked_message_metadata(dict(metadata)), parts)
        if "created_at" in item:
            if type(item["created_at"]) is not str:
                return None
            message["created_at"] = CREATED_AT.to_internal_value(item["created_at"])
    except (ValueError, serializers.ValidationError, LimitExceeded, Unstorable):
        return None
    return message


class MessageOutSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    conversation_id = serializers.CharField()
    seq = serializers.IntegerField(help_text="Strictly increasing within the conversation; the total order.")
    role = serializers.ChoiceField(choices=Role.choices)
    content = serializers.JSONField(help_text="As sent: text, or the list of content parts.")
    metadata = serializers.JSONField(help_text="As sent (an artifact included), with the moved tool_calls, tool_call_id, name.")
    created_at = DateTimeField()
    token_count = serializers.IntegerField(help_text="cl100k_base tokens of the content's text.")


class AppendOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    messages = MessageOutSerializer(many=True)


class WindowQuerySerializer(serializers.Serializer):
    limit = serializers.IntegerField(required=False, min_value=1)
    skip = serializers.IntegerField(required=False, min_value=0, default=0)
    role = serializers.ChoiceField(choices=Role.choices, required=False)
    start_date = DateTimeField(required=False)
    end_date = DateTimeField(required=False)
    include_archived = serializers.BooleanField(required=False, default=False)

    def validate_limit(self, value: int) -> int:
        return check_page_size(value, field="limit")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        depth = attrs.get("skip", 0) + attrs.get("limit", 0)
        bound = max_depth()
        if depth > bound:
            raise LimitExceeded(
                f"skip + limit is {depth}; the limit is 100 x MEMORY_MAX_PAGE_SIZE={bound} messages back.",
                details={"field": "skip", "size": depth, "limit": bound},
            )
        if attrs.get("start_date") and attrs.get("end_date") and attrs["start_date"] > attrs["end_date"]:
            raise serializers.ValidationError("start_date is after end_date.")
        return attrs


def check_at_most(value: int, *, field: str, limit: int, setting: str) -> int:
    """``value`` unless over ``limit``: then a 400 naming the field, the bound and its setting."""
    if value > limit:
        raise LimitExceeded(
            f"{field} is {value}; the limit is {setting}={limit}.", details={"field": field, "size": value, "limit": limit}
        )
    return value


def check_page_size(value: int, *, field: str) -> int:
    return check_at_most(value, field=field, limit=settings.MEMORY_MAX_PAGE_SIZE, setting="MEMORY_MAX_PAGE_SIZE")


def max_depth() -> int:
    """How far back a page may start (offset or skip, plus its size): deep offsets are slow scans."""
    return settings.MEMORY_MAX_PAGE_SIZE * 100


class PageQuerySerializer(serializers.Serializer):
    """``limit`` and ``offset`` of a paged list, both bounded."""

    limit = serializers.IntegerField(
        required=False, min_value=1, help_text="Page size: default 50, at most MEMORY_MAX_PAGE_SIZE."
    )
    offset = serializers.IntegerField(
        required=False, min_value=0, default=0, help_text="Items to skip: offset + limit at most 100 x MEMORY_MAX_PAGE_SIZE."
    )

    def validate_limit(self, value: int) -> int:
        return check_page_size(value, field="limit")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        depth = attrs["offset"] + attrs.get("limit", 0)
        check_at_most(depth, field="offset", limit=max_depth(), setting="100 x MEMORY_MAX_PAGE_SIZE")
        return attrs


class ConversationListQuerySerializer(PageQuerySerializer):
    user_id = serializers.CharField(required=False, max_length=OWNER_ID_MAX, trim_whitespace=False)
    agent_id = serializers.CharField(required=False, max_length=OWNER_ID_MAX, trim_whitespace=False)
    archived = serializers.BooleanField(required=False, allow_null=True, default=None)


def window_query_values(params: Any) -> dict[str, Any]:
    """The validated query of a window read (``WindowQuerySerializer``'s ``validated_data``).

    Without filters, ``limit``, ``skip`` and ``include_archived`` written plainly and within their
    bounds are read directly; any other query, and every invalid one, goes through the serializer, so
    that what is accepted and every error are its own."""
    return _plain_or_serialized(_plain_window_query(params), WindowQuerySerializer, params)


WINDOW_FILTERS = ("role", "start_date", "end_date")


def _plain_window_query(params: Any) -> dict[str, Any] | None:
    if any(name in params for name in WINDOW_FILTERS):
        return None
    values: dict[str, Any] = {"skip": 0, "include_archived": False}
    for name in ("limit", "skip"):
        raw = params.get(name)
        if raw is None:
            continue
        # Digits only, and few: "5.0", " 5" or a thousand digits are the serializer's to judge.
        if not (type(raw) is str and raw.isascii() and raw.isdigit() and len(raw) <= 9):
            return None
        values[name] = int(raw)
    archived = params.get("include_archived")
    if archived is not None:
        if archived in serializers.BooleanField.TRUE_VALUES:
            values["include_archived"] = True
        elif archived not in serializers.BooleanField.FALSE_VALUES:
            return None
    limit = values.get("limit")
    if limit is not None and not 1 <= limit <= settings.MEMORY_MAX_PAGE_SIZE:
        return None
    if values["skip"] + (limit or 0) > settings.MEMORY_MAX_PAGE_SIZE * 100:
        return None
    return values


class WindowOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    messages = MessageOutSerializer(many=True)
    count = serializers.IntegerField()
    source = serializers.ChoiceField(choices=["cache", "rebuild", "database"], help_text="Where the window was read from.")


class ConversationSerializer(serializers.ModelSerializer):
    conversation_id = serializers.CharField(validators=[validate_conversation_id])
    user_id = serializers.CharField(required=False, allow_blank=True, max_length=OWNER_ID_MAX)
    agent_id = serializers.CharField(required=False, allow_blank=True, max_length=OWNER_ID_MAX)
    metadata = serializers.JSONField(required=False)

    class Meta:
        model = Conversation
        fields = (
            "conversation_id",
            "user_id",
            "agent_id",
            "archived",
            "metadata",
            "message_count",
            "token_count",
            "last_seq",
            "created_at",
            "updated_at",
        )
        read_only_fields = ("archived", "message_count", "token_count", "last_seq", "created_at", "updated_at")

    def validate_metadata(self, value: Any) -> dict:
        return check_metadata(value)


class ConversationPageSerializer(serializers.Serializer):
    """One page of the conversation list (limit/offset pagination)."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ConversationSerializer(many=True)


class ConversationUpdateSerializer(serializers.Serializer):
    user_id = serializers.CharField(required=False, allow_blank=True, max_length=OWNER_ID_MAX)
    agent_id = serializers.CharField(required=False, allow_blank=True, max_length=OWNER_ID_MAX)
    archived = serializers.BooleanField(required=False)
    metadata = serializers.JSONField(required=False)

    def validate_metadata(self, value: Any) -> dict:
        return check_metadata(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError(
                f"These fields cannot be changed: {', '.join(sorted(unknown))}; allowed: {', '.join(self.fields)}."
            )
        if not attrs:
            raise serializers.ValidationError(f"Nothing to change; send one of: {', '.join(self.fields)}.")
        return attrs


class MemoryDocumentSerializer(serializers.Serializer):
    messages = serializers.ListField(child=serializers.JSONField(), required=False, default=list)
    metadata = serializers.JSONField(required=False, default=dict)

    def validate_metadata(self, value: Any) -> dict:
        return check_metadata(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["messages"] = storable_json(attrs["messages"], field="messages")
        size = json_size(attrs)
        if size > settings.MEMORY_MAX_MEMORY_BYTES:
            raise LimitExceeded(
                f"The memory document is {size} bytes of JSON; the limit is MEMORY_MAX_MEMORY_BYTES={settings.MEMORY_MAX_MEMORY_BYTES}.",
                details={"size": size, "limit": settings.MEMORY_MAX_MEMORY_BYTES},
            )
        return attrs


class EraseOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    messages_erased = serializers.IntegerField()
    cache_keys_erased = serializers.IntegerField()


def check_text(value: str, *, field: str) -> str:
    if len(value) > settings.MEMORY_MAX_CONTENT_CHARS:
        raise LimitExceeded(
            f"{field} is {len(value)} characters; the limit is MEMORY_MAX_CONTENT_CHARS={settings.MEMORY_MAX_CONTENT_CHARS}.",
            details={"field": field, "size": len(value), "limit": settings.MEMORY_MAX_CONTENT_CHARS},
        )
    return storable_text(value, field=field)


LLM_FORMATS = [
    ("openai", "OpenAI chat messages: role, content, tool_calls, tool_call_id"),
    ("langchain", "LangChain message dicts"),
]
MAX_TURNS = 10_000
MAX_BUDGET = 10_000_000


class LlmWindowQuerySerializer(serializers.Serializer):
    limit = serializers.IntegerField(required=False, min_value=1, help_text="Default MEMORY_MAX_TURNS_PROMPT.")
    format = serializers.ChoiceField(choices=LLM_FORMATS, required=False, default="openai")

    def validate_limit(self, value: int) -> int:
        return check_page_size(value, field="limit")


class LlmWindowOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    format = serializers.ChoiceField(choices=LLM_FORMATS)
    messages = serializers.ListField(child=serializers.DictField())
    count = serializers.IntegerField()
    source = serializers.CharField()


class BackendStatusSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    latency_ms = serializers.FloatField(required=False, help_text="Operators only.")
    error = serializers.CharField(required=False, help_text="Operators only: why the backend does not answer.")


class StatusOutSerializer(serializers.Serializer):
    scope = serializers.ChoiceField(choices=["tenant", "deployment"], help_text="Whose figures these are.")
    tenant = serializers.CharField(required=False, help_text="scope tenant: the API key's tenant.")
    ok = serializers.BooleanField(help_text="Every backend answers.")
    database = BackendStatusSerializer()
    cache = BackendStatusSerializer()
    broker = serializers.DictField(help_text="ok; for operators also the queues, their depths and consumers.")
    metrics = serializers.DictField(help_text="Cache lookups and hit rates: the tenant's own, or (operators) every tenant's.")
    flags = serializers.DictField(help_text="using_pg, using_redis, using_broker, degraded, fallback_sessions.")


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField(
        help_text="Stable, for programs: validation_error, parse_error, limit_exceeded, payload_too_large, uri_too_long, "
        "not_authenticated, authentication_failed, permission_denied, not_found, method_not_allowed, "
        "unsupported_media_type, conflict, throttled, service_unavailable, server_error, ..."
    )
    message = serializers.CharField(help_text="For people: what was wrong, naming the field and the limit when there is one.")
    details = serializers.JSONField(
        help_text="The per-field errors of a validation_error; for a limit, field, size and limit (the setting's value)."
    )


class ErrorDocumentSerializer(serializers.Serializer):
    """Every error answer of the API, whatever its status."""

    error = ErrorSerializer()
