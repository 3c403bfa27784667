"""What the memory features' endpoints take and answer: the context (with long-term memory and the
latest checkpoint), the erase of a user, the conversation with its search coverage, and the user
search with the user's extracted memories ranked beside the turns (``memory.fused``)."""

from datetime import datetime
from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from conversations.api.serializers import LLM_FORMATS, MAX_BUDGET, MAX_TURNS, check_text
from memory import fused
from search.api import serializers as search_serializers
from search.api.filters import SearchFiltersSerializer


class UserEraseOutSerializer(serializers.Serializer):
    user_id = serializers.CharField()
    conversations_erased = serializers.IntegerField()
    messages_erased = serializers.IntegerField()
    embeddings_erased = serializers.IntegerField()
    summaries_erased = serializers.IntegerField()
    checkpoints_erased = serializers.IntegerField()
    facts_erased = serializers.IntegerField(help_text="Facts and their change history.")
    memories_erased = serializers.IntegerField(help_text="Memories extracted from their conversations (their history with them).")
    dead_letters_erased = serializers.IntegerField()
    cache_keys_erased = serializers.IntegerField()


class ContextInSerializer(serializers.Serializer):
    """What the agent is about to send; each default is the tenant's MEMORY_* setting."""

    query = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False, help_text="The current user message, sent last."
    )
    system_prompt = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    max_tokens = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_BUDGET, help_text="Default MEMORY_MAX_TOKENS."
    )
    short_term_turns = serializers.IntegerField(
        required=False, min_value=0, max_value=MAX_TURNS, help_text="Turns kept in full. Default MEMORY_SHORT_TERM_TURNS."
    )
    long_term_turns = serializers.IntegerField(
        required=False, min_value=0, max_value=MAX_TURNS, help_text="Older turns summarized. Default MEMORY_LONG_TERM_TURNS."
    )
    compression_threshold = serializers.FloatField(
        required=False, min_value=0.01, max_value=1.0, help_text="Default MEMORY_COMPRESSION_THRESHOLD."
    )
    format = serializers.ChoiceField(choices=LLM_FORMATS, required=False, default="openai")
    checkpoint_namespace = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        trim_whitespace=False,
        help_text='Also answer the latest checkpoint of this namespace ("" is the root graph).',
    )
    use_memory = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Add summaries, the user's facts and the older messages relevant to the query to the system "
        "message, and answer the memory bundle and the rendered prompt.",
    )
    top_k = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=100,
        help_text="With use_memory: the relevant messages the bundle lists (memory.context). Default MEMORY_TOP_K. "
        "The system message holds as many as its budget allows, whatever this number.",
    )
    memory_filters = SearchFiltersSerializer(
        required=False, help_text="With use_memory: the search filters (as a POST search's) its relevant messages obey."
    )

    def validate_query(self, value: str) -> str:
        return check_text(value, field="query")

    def validate_system_prompt(self, value: str) -> str:
        return check_text(value, field="system_prompt")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(self.initial_data) - set(self.fields) if isinstance(self.initial_data, dict) else set()
        if unknown:
            raise serializers.ValidationError(f"Unknown fields: {', '.join(sorted(unknown))}; allowed: {', '.join(self.fields)}.")
        return attrs


class ContextEntitySerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField(required=False)
    _turn_number = serializers.IntegerField()
    message_id = serializers.CharField()


class ContextOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    format = serializers.ChoiceField(choices=LLM_FORMATS)
    messages = serializers.ListField(child=serializers.DictField(), help_text="System prompt (with the summary), history, query.")
    session_summary = serializers.CharField(allow_null=True)
    compressed = serializers.BooleanField()
    total_turns = serializers.IntegerField(help_text="Turns in the conversation before the query.")
    turns_in_full = serializers.IntegerField()
    summarized_turns = serializers.IntegerField()
    estimated_tokens = serializers.IntegerField(help_text="cl100k_base prompt tokens, message overhead included.")
    content_tokens = serializers.IntegerField(help_text="cl100k_base tokens of the message contents alone.")
    max_tokens = serializers.IntegerField()
    tokens_remaining = serializers.IntegerField()
    entities = ContextEntitySerializer(many=True)
    source = serializers.CharField()
    cached = serializers.BooleanField()
    checkpoint = serializers.DictField(required=False, allow_null=True, help_text="With checkpoint_namespace: the latest one.")
    memory = serializers.DictField(
        required=False,
        help_text="With use_memory: the memory bundle (context, recent_messages, summaries, memories (the user's facts), "
        "extracted_memories, ranking (when the tenant extracts: the best turns and memories in one ranking, each with "
        "its kind), query_embedding_dim, unavailable, notices (what the search could not do, each with a code and "
        "a sentence: query_not_embedded while the embedding server does not answer, the reranker's failures)).",
    )
    rendered_prompt = serializers.CharField(required=False, help_text="With use_memory: the prompt assembled from the bundle.")


# --- The user search with memories ------------------------------------------------------------------


class _MemoriesParameters(serializers.Serializer):
    include_memories = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Rank the user's extracted memories with their turns, in one list (each result's kind says which): "
        "a turn rises with the memories read from it, a memory names the turns it was read from. Off: the turns alone, "
        "answered as without this parameter.",
    )
    include_past_memories = serializers.BooleanField(
        required=False,
        default=False,
        help_text="With include_memories: also memories an update or delete took back (valid_to set).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if attrs.get("include_past_memories") and not attrs.get("include_memories"):
            raise serializers.ValidationError({"include_past_memories": "Only with include_memories=true."})
        return attrs


class UserSearchQuerySerializer(_MemoriesParameters, search_serializers.SearchQuerySerializer):
    pass


class UserSearchBodySerializer(_MemoriesParameters, search_serializers.SearchBodySerializer):
    pass


class FusedTurnSerializer(search_serializers.SearchHitSerializer):
    kind = serializers.ChoiceField(choices=["turn"])
    memory_ids = serializers.ListField(
        child=serializers.UUIDField(),
        help_text="The user's memories read from this turn (current ones; past ones too when asked).",
    )
    score = serializers.FloatField(help_text="The fused score, on one scale with the memories' (1: the best turn).")


class FusedMemorySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["memory"])
    memory_id = serializers.UUIDField()
    memory_kind = serializers.CharField(help_text="fact, preference, event or relation.")
    subject = serializers.CharField()
    text = serializers.CharField()
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(
        allow_null=True, help_text="Set on a memory taken back (only with include_past_memories)."
    )
    message_ids = serializers.ListField(child=serializers.UUIDField(), help_text="The messages it was read from.")
    conversation_ids = serializers.ListField(child=serializers.CharField(), help_text="Their conversations.")
    memory_score = serializers.FloatField(allow_null=True, help_text="The memory search's own score.")
    score = serializers.FloatField(help_text="The fused score, on one scale with the turns'.")


FUSED_RESULT = PolymorphicProxySerializer(
    component_name="FusedSearchResult",
    serializers={"turn": FusedTurnSerializer, "memory": FusedMemorySerializer},
    resource_type_field_name="kind",
    many=True,
)


class FusedSearchOutSerializer(search_serializers.SearchOutSerializer):
    results = FUSED_RESULT
    memories_considered = serializers.IntegerField(help_text="Memories the ranking considered.")


USER_SEARCH_OUT = PolymorphicProxySerializer(
    component_name="UserSearchOut",
    serializers=[search_serializers.SearchOutSerializer, FusedSearchOutSerializer],
    resource_type_field_name=None,
)


def fused_answer(query: str, result: fused.FusedResult) -> dict[str, Any]:
    """The user search's answer with memories: the turns' answer, its results the fused hits."""
    results = []
    for hit in result.hits:
        if hit.turn is not None:
            turn = search_serializers.SearchHitSerializer(hit.turn).data
            results.append({"kind": "turn", **turn, "score": hit.score, "memory_ids": list(hit.memory_ids)})
            continue
        memory = hit.memory
        results.append(
            {
                "kind": "memory",
                "memory_id": memory.memory_id,
                "memory_kind": memory.memory_kind,
                "subject": memory.subject,
                "text": memory.text,
                "valid_from": _time(memory.valid_from),
                "valid_to": _time(memory.valid_to),
                "message_ids": memory.message_ids,
                "conversation_ids": memory.conversation_ids,
                "memory_score": memory.score,
                "score": hit.score,
            }
        )
    return search_serializers.search_answer(query, result.search) | {
        "results": results,
        "memories_considered": result.memories_considered,
    }


def _time(value: datetime | None) -> str | None:
    return None if value is None else serializers.DateTimeField().to_representation(value)
