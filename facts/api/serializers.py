"""Input shapes and output shapes of the user facts API.

Input serializers check JSON types only; the rules and limits of user ids, keys and values are the
services' (``facts.services``), so every caller meets the same ones. A value must be a JSON string:
a number or boolean is refused with a 400, never turned into text. A batch holds at most
MEMORY_MAX_BATCH facts.
"""

from typing import Any

from django.conf import settings
from rest_framework import serializers

from conversations.api.serializers import check_page_size
from core.exceptions import LimitExceeded


class JsonStringField(serializers.CharField):
    """A JSON string as sent: other JSON types are refused, not converted; whitespace is kept."""

    default_error_messages = {"not_a_string": 'Must be a JSON string (send the text, e.g. "42" rather than 42).'}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_blank", True)  # blank keys and values are refused by the service, with its message
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


def check_batch_size(data: Any) -> None:
    """A batch over MEMORY_MAX_BATCH facts is refused before any fact is read."""
    facts = data.get("facts") if isinstance(data, dict) else None
    if isinstance(facts, dict) and len(facts) > settings.MEMORY_MAX_BATCH:
        raise LimitExceeded(
            f"The batch has {len(facts)} facts; the limit is MEMORY_MAX_BATCH={settings.MEMORY_MAX_BATCH}.",
            details={"field": "facts", "size": len(facts), "limit": settings.MEMORY_MAX_BATCH},
        )


# --- Input ------------------------------------------------------------------------------------------


class FactsInSerializer(serializers.Serializer):
    """Either a batch ``{"facts": {key: value, ...}}`` or one fact ``{"key": ..., "value": ...}``."""

    facts = serializers.DictField(
        child=JsonStringField(), required=False, allow_empty=False, help_text="Keys to values; set all or none."
    )
    key = JsonStringField(required=False, help_text="One fact's key (instead of facts).")
    value = JsonStringField(required=False, help_text="One fact's value (with key).")

    def to_internal_value(self, data: Any) -> Any:
        check_batch_size(data)
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, dict[str, str]]:
        batch = "facts" in attrs
        single = "key" in attrs or "value" in attrs
        if batch == single:
            raise serializers.ValidationError('Send either {"facts": {"key": "value", ...}} or {"key": ..., "value": ...}.')
        if batch:
            return {"facts": attrs["facts"]}
        if "key" not in attrs:
            raise serializers.ValidationError({"key": "This field is required with value."})
        if "value" not in attrs:
            raise serializers.ValidationError({"value": "This field is required with key."})
        return {"facts": {attrs["key"]: attrs["value"]}}


class FactValueInSerializer(serializers.Serializer):
    value = JsonStringField(help_text="The fact's new value: a string.")


class FactListQuerySerializer(serializers.Serializer):
    limit = serializers.IntegerField(required=False, min_value=1, help_text="At most this many facts; all when absent.")

    def validate_limit(self, value: int) -> int:
        return check_page_size(value, field="limit")


# --- Output ----------------------------------------------------------------------------------------


class FactOutSerializer(serializers.Serializer):
    key = serializers.CharField()
    value = serializers.CharField()
    token_count = serializers.IntegerField(help_text='Tokens (cl100k_base) of the fact as a prompt shows it: "key: value".')
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class FactListOutSerializer(serializers.Serializer):
    user_id = serializers.CharField()
    facts = FactOutSerializer(many=True, help_text="Most recently updated first.")
    total_tokens = serializers.IntegerField(help_text="The sum of the listed facts' token counts.")


class FactsWrittenOutSerializer(serializers.Serializer):
    user_id = serializers.CharField()
    facts = FactOutSerializer(many=True, help_text="The facts sent, in the order sent, as now stored.")
    created = serializers.ListField(child=serializers.CharField(), help_text="The keys that were new.")


class FactChangeOutSerializer(serializers.Serializer):
    key = serializers.CharField()
    action = serializers.ChoiceField(choices=["set", "delete"])
    value = serializers.CharField(help_text='The value this change set; "" for a delete.')
    previous_value = serializers.CharField(allow_null=True, help_text="The value it superseded; null for a new fact.")
    changed_at = serializers.DateTimeField()


class FactHistoryPageOutSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = FactChangeOutSerializer(many=True, help_text="Newest first.")
