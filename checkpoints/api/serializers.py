"""Input validation and output shapes of the checkpoint API. Limits name the setting that bounds them.

A checkpoint id is 1 to 64 of ``[A-Za-z0-9._:=+-]``, starting with a letter or digit (LangGraph's
ids are UUIDs); a namespace is up to 255 printable characters. The JSON a checkpoint stores (state
plus metadata), and the values of one batch of writes, are bounded by MEMORY_MAX_CHECKPOINT_BYTES,
and must be storable (``core.storable``): a refusal names the path of the bad value.
"""

import re
from typing import Any

from django.conf import settings
from rest_framework import serializers

from conversations.api.serializers import IndexedListSerializer, check_batch_size, check_page_size, json_size
from core.exceptions import LimitExceeded
from core.storable import storable_json

CHECKPOINT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:=+-]{0,63}$")
NAMESPACE_MAX = 255
TASK_ID_MAX = 255
TASK_PATH_MAX = 512
CHANNEL_MAX = 255
DEFAULT_PAGE_SIZE = 100


def is_checkpoint_id(value: str) -> bool:
    return bool(CHECKPOINT_ID.match(value))


def validate_checkpoint_id(value: str) -> str:
    if not is_checkpoint_id(value):
        raise serializers.ValidationError(
            "A checkpoint id is 1 to 64 letters, digits and . _ : = + - (not starting with a symbol)."
        )
    return value


def validate_namespace(value: str) -> str:
    if not value.isprintable():
        raise serializers.ValidationError("A namespace is printable text: no NUL or other control characters.")
    return value


def check_checkpoint_size(size: int, *, field: str, what: str) -> None:
    limit = settings.MEMORY_MAX_CHECKPOINT_BYTES
    if size > limit:
        raise LimitExceeded(
            f"{what} is {size} bytes of JSON; the limit is MEMORY_MAX_CHECKPOINT_BYTES={limit}.",
            details={"field": field, "size": size, "limit": limit},
        )


def namespace_field(**kwargs: Any) -> serializers.CharField:
    return serializers.CharField(
        allow_blank=True, trim_whitespace=False, max_length=NAMESPACE_MAX, validators=[validate_namespace], **kwargs
    )


# --- Input ------------------------------------------------------------------------------------------


class CheckpointInSerializer(serializers.Serializer):
    checkpoint_id = serializers.CharField(
        required=False,
        trim_whitespace=False,
        validators=[validate_checkpoint_id],
        help_text="Your own id; a new UUID when absent. Saving an id again replaces that checkpoint.",
    )
    namespace = namespace_field(required=False, default="", help_text='The graph namespace; "" is the root graph.')
    parent_id = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        trim_whitespace=False,
        default=None,
        help_text="The checkpoint this one follows; null for the first.",
    )
    state = serializers.JSONField(help_text="The checkpoint itself: a JSON object.")
    metadata = serializers.JSONField(required=False, default=dict)

    def validate_parent_id(self, value: str | None) -> str:
        return validate_checkpoint_id(value) if value else ""

    def validate_state(self, value: Any) -> dict:
        if not isinstance(value, dict):
            raise serializers.ValidationError("state must be a JSON object.")
        return storable_json(value, field="state")

    def validate_metadata(self, value: Any) -> dict:
        if not isinstance(value, dict):
            raise serializers.ValidationError("metadata must be a JSON object.")
        return storable_json(value, field="metadata")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        check_checkpoint_size(
            json_size(attrs["state"]) + json_size(attrs["metadata"]), field="state", what="The checkpoint (state and metadata)"
        )
        return attrs


class WriteInSerializer(serializers.Serializer):
    idx = serializers.IntegerField(
        min_value=-(2**31), max_value=2**31 - 1, help_text="Negative for the special channels (error, interrupt, ...)."
    )
    channel = serializers.CharField(max_length=CHANNEL_MAX, trim_whitespace=False)
    value = serializers.JSONField(allow_null=True)

    class Meta:
        list_serializer_class = IndexedListSerializer

    def validate_value(self, value: Any) -> Any:
        return storable_json(value, field="value")


class WritesInSerializer(serializers.Serializer):
    namespace = namespace_field(required=False, default="")
    task_id = serializers.CharField(max_length=TASK_ID_MAX, trim_whitespace=False)
    task_path = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=TASK_PATH_MAX, trim_whitespace=False
    )
    writes = WriteInSerializer(many=True, allow_empty=False)

    def to_internal_value(self, data: Any) -> Any:
        check_batch_size(data, field="writes")
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        check_checkpoint_size(
            sum(json_size(write["value"]) for write in attrs["writes"]), field="writes", what="The values of the writes"
        )
        return attrs


class CheckpointListQuerySerializer(serializers.Serializer):
    namespace = namespace_field(required=False, help_text="Only this namespace; every namespace when absent.")
    before = serializers.CharField(
        required=False, trim_whitespace=False, max_length=64, help_text="Only checkpoints saved before this checkpoint id."
    )
    limit = serializers.IntegerField(required=False, min_value=1, help_text=f"Default {DEFAULT_PAGE_SIZE}.")

    def validate_limit(self, value: int) -> int:
        return check_page_size(value, field="limit")


class NamespaceQuerySerializer(serializers.Serializer):
    namespace = namespace_field(required=False, default="", help_text='The graph namespace; "" (the root graph) when absent.')


class NamespaceFilterSerializer(serializers.Serializer):
    namespace = namespace_field(required=False, help_text="Only this namespace; every namespace when absent.")


# --- Output (the views answer with plain dicts of these shapes) -------------------------------------


class WriteOutSerializer(serializers.Serializer):
    task_id = serializers.CharField()
    task_path = serializers.CharField()
    idx = serializers.IntegerField()
    channel = serializers.CharField()
    value = serializers.JSONField(allow_null=True)


class CheckpointOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    namespace = serializers.CharField()
    checkpoint_id = serializers.CharField()
    parent_id = serializers.CharField(allow_null=True)
    state = serializers.JSONField()
    metadata = serializers.JSONField()
    created_at = serializers.DateTimeField()
    writes = WriteOutSerializer(many=True, help_text="Ordered by task_path, task_id, idx.")


class CheckpointListOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    checkpoints = CheckpointOutSerializer(many=True, help_text="Newest first.")
    count = serializers.IntegerField()


class WritesOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    checkpoint_id = serializers.CharField()
    namespace = serializers.CharField()
    written = serializers.IntegerField()


class CheckpointsDeleteOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    deleted = serializers.IntegerField()
