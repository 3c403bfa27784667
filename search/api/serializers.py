"""Search parameters in, hits out."""

from typing import Any

from rest_framework import serializers

from search.selectors import MODES, SCOPES


class SearchQuerySerializer(serializers.Serializer):
    q = serializers.CharField(trim_whitespace=False, help_text="The words or question to search for.")
    mode = serializers.ChoiceField(choices=MODES, required=False, help_text="hybrid (default), semantic (seed 003) or keyword.")
    scope = serializers.ChoiceField(
        choices=SCOPES,
        required=False,
        help_text="auto: the conversation, and the user's others while it holds fewer than cross_session_trigger messages.",
    )
    top_k = serializers.IntegerField(required=False, min_value=1)
    min_similarity = serializers.FloatField(required=False, min_value=-1.0, max_value=1.0)
    vector_fetch_limit = serializers.IntegerField(required=False, min_value=0)
    cross_session_trigger = serializers.IntegerField(required=False, min_value=0)
    candidate_limit = serializers.IntegerField(required=False, min_value=0)


class SearchHitSerializer(serializers.Serializer):
    message_id = serializers.CharField()
    conversation_id = serializers.CharField()
    seq = serializers.IntegerField()
    role = serializers.CharField()
    content = serializers.CharField()
    created_at = serializers.DateTimeField()
    metadata = serializers.JSONField()
    similarity = serializers.FloatField(allow_null=True, help_text="Cosine similarity with the query, if embedded.")
    keyword_score = serializers.FloatField(allow_null=True, help_text="BM25 score, if the message shares terms with the query.")
    score = serializers.FloatField(help_text="What the hits are ordered by (the fused rank score in hybrid mode).")


class SearchOutSerializer(serializers.Serializer):
    query = serializers.CharField()
    mode = serializers.CharField()
    scope = serializers.CharField()
    conversations = serializers.IntegerField(help_text="Conversations searched.")
    candidates = serializers.IntegerField(help_text="Messages the ranking considered.")
    embedding_model = serializers.CharField()
    query_embedding_dim = serializers.IntegerField(allow_null=True)
    results = SearchHitSerializer(many=True)


def search_answer(query: str, result: Any) -> dict[str, Any]:
    return {
        "query": query,
        "mode": result.mode,
        "scope": result.scope,
        "conversations": result.conversations,
        "candidates": result.candidates,
        "embedding_model": result.embedding_model,
        "query_embedding_dim": result.query_embedding_dim,
        "results": SearchHitSerializer(result.hits, many=True).data,
    }
