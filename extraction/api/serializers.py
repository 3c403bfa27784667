"""Input and output shapes of the memories API.

A memory's fields are the model's (``extraction.models.Memory``); its sources are the public ids of
the messages it was read from and the client's ids of their conversations. Query parameters are
checked here (types, bounds, known kinds); a correction's values are checked by the service, with
the same rules as a model's answer (``extraction.services.memory_correct``).
"""

from typing import Any

from django.conf import settings
from rest_framework import serializers

from conversations.api.fields import DateTimeField
from conversations.api.serializers import PageQuerySerializer, check_page_size
from extraction.models import Memory, MemoryChange, MemoryKind


class MemoryQuerySerializer(PageQuerySerializer):
    query = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=True, help_text="Rank by this text (hybrid search); top_k hits."
    )
    top_k = serializers.IntegerField(required=False, min_value=1, help_text="Hits of a query: default MEMORY_TOP_K.")
    kind = serializers.ChoiceField(required=False, choices=MemoryKind.values, help_text="Only memories of this kind.")
    subject = serializers.CharField(required=False, max_length=200, help_text="Only memories about this subject (case aside).")
    valid_at = DateTimeField(
        required=False, help_text="Only memories that held at this time (ISO 8601): what was true then, past versions included."
    )
    include_past = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also memories an update or delete took back (valid_to set): the versions an update replaced, each "
        "with version_of naming the memory that holds on.",
    )
    conversation_id = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        max_length=50,
        help_text="Only memories read from these conversations of the user (repeat the parameter for several).",
    )
    start_date = DateTimeField(required=False, help_text="Only memories holding from this time on (ISO 8601).")
    end_date = DateTimeField(required=False, help_text="Only memories holding from this time or before.")
    rerank = serializers.BooleanField(
        required=False,
        default=None,
        allow_null=True,
        help_text="With a query, false answers the ranking's own order even when the tenant configures a reranker "
        "(MEMORY_RERANK_URL). Default: rerank when one is configured.",
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if hasattr(data, "getlist"):  # a query string: the repeated parameter as a list
            data = {**data.dict(), "conversation_id": data.getlist("conversation_id")} if "conversation_id" in data else data
        return super().to_internal_value(data)

    def validate_query(self, value: str) -> str:
        if len(value) > settings.MEMORY_MAX_QUERY_CHARS:
            raise serializers.ValidationError(f"At most MEMORY_MAX_QUERY_CHARS={settings.MEMORY_MAX_QUERY_CHARS} characters.")
        return value

    def validate_top_k(self, value: int) -> int:
        return check_page_size(value, field="top_k")


class ExtractionStatusSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    model = serializers.CharField(allow_null=True)
    reason = serializers.ChoiceField(choices=["disabled", "no_model"], allow_null=True)
    detail = serializers.CharField(allow_null=True)


class MemoryOutSerializer(serializers.ModelSerializer):
    current = serializers.BooleanField(read_only=True)
    version_of = serializers.SerializerMethodField(
        help_text="On a version an update replaced: the id of the memory that holds on (null on every other memory)."
    )
    message_ids = serializers.ListField(child=serializers.UUIDField(), read_only=True)
    conversation_ids = serializers.SerializerMethodField()
    score = serializers.SerializerMethodField()

    class Meta:
        model = Memory
        fields = (
            "memory_id",
            "kind",
            "subject",
            "text",
            "valid_from",
            "valid_to",
            "current",
            "version_of",
            "confidence",
            "message_ids",
            "conversation_ids",
            "model",
            "created_at",
            "updated_at",
            "score",
        )

    def get_version_of(self, memory: Memory) -> str | None:
        if memory.version_of_id is None:
            return None
        known = getattr(memory, "version_of_memory_id", None)  # annotated by the selectors
        return str(known or memory.version_of.memory_id)

    def get_conversation_ids(self, memory: Memory) -> list[str]:
        names = self.context.get("conversation_ids", {})
        return [names[pk] for pk in memory.conversation_pks if pk in names]

    def get_score(self, memory: Memory) -> float | None:
        return self.context.get("scores", {}).get(memory.pk)


class MemoryChangeOutSerializer(serializers.ModelSerializer):
    class Meta:
        model = MemoryChange
        fields = ("action", "text", "previous_text", "valid_from", "valid_to", "confidence", "message_ids", "model", "changed_at")


class MemoryDetailOutSerializer(MemoryOutSerializer):
    history = serializers.SerializerMethodField()

    class Meta(MemoryOutSerializer.Meta):
        fields = (*MemoryOutSerializer.Meta.fields, "history")

    def get_history(self, memory: Memory) -> list[dict[str, Any]]:
        return MemoryChangeOutSerializer(self.context.get("history", []), many=True).data


class MemorySearchNoticeSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class MemoryListOutSerializer(serializers.Serializer):
    user_id = serializers.CharField()
    extraction = ExtractionStatusSerializer()
    count = serializers.IntegerField(help_text="Memories matching the filters (a query: the hits answered).")
    results = MemoryOutSerializer(many=True)
    reranked = serializers.BooleanField(help_text="True only when a query's hits are in the reranker's order.")
    rerank_model = serializers.CharField(
        allow_null=True,
        help_text="The reranker of this search (its model, else its format), answered or not; null when none is "
        "configured or the request sent rerank=false.",
    )
    notices = MemorySearchNoticeSerializer(
        many=True,
        help_text="What a query's answer could not do as configured, each with a code and a sentence (empty: nothing): "
        "in the ranking's order while the reranker fails (rerank_failed) or is not called after a failure "
        "(rerank_unavailable).",
    )


class MemoryCorrectionSerializer(serializers.Serializer):
    """A correction: any of these; null valid_to makes a memory current again."""

    kind = serializers.ChoiceField(required=False, choices=MemoryKind.values)
    subject = serializers.CharField(required=False, trim_whitespace=False, allow_blank=True)
    text = serializers.CharField(required=False, trim_whitespace=False, allow_blank=True)
    valid_from = serializers.CharField(required=False, help_text="YYYY-MM-DD or ISO 8601 with its offset.")
    valid_to = serializers.CharField(required=False, allow_null=True, help_text="YYYY-MM-DD, ISO 8601, or null.")
    confidence = serializers.FloatField(required=False, min_value=0, max_value=1)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields)) if isinstance(self.initial_data, dict) else []
        if unknown:
            raise serializers.ValidationError({name: "Not a field a correction changes." for name in unknown})
        if not attrs:
            raise serializers.ValidationError(f"A correction changes at least one of {', '.join(self.fields)}.")
        return attrs
