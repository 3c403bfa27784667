"""Search parameters in, hits out."""

from typing import Any

from django.conf import settings
from rest_framework import serializers

from conversations.api.serializers import check_at_most, check_page_size
from core.exceptions import LimitExceeded
from search.api.filters import METADATA_HELP, MetadataFilterField, MetadataQueryField, SearchFiltersSerializer
from search.selectors import MODES, SCOPES


class SearchQuerySerializer(SearchFiltersSerializer):
    """Every parameter bounded: a value out of its bounds is a 400 naming it and the bound. The
    filters (``SearchFiltersSerializer``) answer as one ``filters`` value."""

    q = serializers.CharField(
        trim_whitespace=False, help_text="The words or question to search for (at most MEMORY_MAX_QUERY_CHARS)."
    )
    mode = serializers.ChoiceField(choices=MODES, required=False, help_text="hybrid (default), semantic (vectors) or keyword.")
    scope = serializers.ChoiceField(
        choices=SCOPES,
        required=False,
        help_text="auto: the conversation, and the user's others while it holds fewer than cross_session_trigger messages.",
    )
    top_k = serializers.IntegerField(required=False, min_value=1, help_text="At most MEMORY_MAX_PAGE_SIZE.")
    min_similarity = serializers.FloatField(required=False, min_value=-1.0, max_value=1.0)
    vector_fetch_limit = serializers.IntegerField(required=False, min_value=0, help_text="At most MEMORY_MAX_SEARCH_CANDIDATES.")
    cross_session_trigger = serializers.IntegerField(
        required=False, min_value=0, help_text="At most MEMORY_MAX_SEARCH_CANDIDATES."
    )
    candidate_limit = serializers.IntegerField(required=False, min_value=0, help_text="At most MEMORY_MAX_SEARCH_CANDIDATES.")
    metadata = MetadataQueryField(required=False, help_text=f"URL-encoded JSON. {METADATA_HELP}")
    rerank = serializers.BooleanField(
        required=False,
        default=None,
        allow_null=True,
        help_text="false: answer the ranking's own order even when the tenant configures a reranker "
        "(MEMORY_RERANK_URL). Default: rerank when one is configured.",
    )

    def validate_q(self, value: str) -> str:
        return _check_length(value, field="q", limit=settings.MEMORY_MAX_QUERY_CHARS, setting="MEMORY_MAX_QUERY_CHARS")

    def validate_top_k(self, value: int) -> int:
        return check_page_size(value, field="top_k")

    # Each count refused on its own, before what else the request lacks: the error names its bound.
    def validate_vector_fetch_limit(self, value: int) -> int:
        return _check_count(value, field="vector_fetch_limit")

    def validate_cross_session_trigger(self, value: int) -> int:
        return _check_count(value, field="cross_session_trigger")

    def validate_candidate_limit(self, value: int) -> int:
        return _check_count(value, field="candidate_limit")


def _check_count(value: int, *, field: str) -> int:
    """The search parameters that count messages or vectors, each bounded by MEMORY_MAX_SEARCH_CANDIDATES:
    a client may narrow the search the tenant's settings describe, never make it unbounded."""
    return check_at_most(value, field=field, limit=settings.MEMORY_MAX_SEARCH_CANDIDATES, setting="MEMORY_MAX_SEARCH_CANDIDATES")


class SearchBodySerializer(SearchQuerySerializer):
    """The same search as a JSON body: lists as JSON arrays, ``metadata`` as a JSON object."""

    metadata = MetadataFilterField(required=False, help_text=METADATA_HELP)


def _check_length(value: str, *, field: str, limit: int, setting: str) -> str:
    if len(value) > limit:
        raise LimitExceeded(
            f"{field} is {len(value)} characters; the limit is {setting}={limit}.",
            details={"field": field, "size": len(value), "limit": limit},
        )
    return value


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
    score = serializers.FloatField(
        help_text="What the ranking orders the hits by (the fused rank score in hybrid mode); when reranked is "
        "true the order is the reranker's instead."
    )


class NoticeSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class SearchOutSerializer(serializers.Serializer):
    query = serializers.CharField()
    mode = serializers.CharField()
    scope = serializers.CharField()
    conversations = serializers.IntegerField(help_text="Conversations searched.")
    candidates = serializers.IntegerField(help_text="Messages the ranking considered.")
    embedding_model = serializers.CharField()
    query_embedding_dim = serializers.IntegerField(allow_null=True)
    results = SearchHitSerializer(many=True)
    reranked = serializers.BooleanField(
        help_text="True only when the results are in the reranker's order (the tenant configures one, the request "
        "did not send rerank=false, and it answered)."
    )
    rerank_model = serializers.CharField(
        allow_null=True,
        help_text="The reranker of this search (its model, else its format), answered or not; null when none is "
        "configured or the request sent rerank=false.",
    )
    notices = NoticeSerializer(
        many=True,
        help_text="What this answer could not do as configured, each with a code and a sentence (empty: nothing): "
        "the results are still the best order the service could give, e.g. ranked by words alone while the "
        "embedding server does not answer (query_not_embedded), or in the ranking's order while the reranker fails "
        "(rerank_failed) or is not called after a failure (rerank_unavailable).",
    )


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
        "reranked": result.reranked,
        "rerank_model": result.rerank_model,
        "notices": list(result.notices),
    }
