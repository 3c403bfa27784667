"""How much of a history search covers, as the API shows it: the answer of ``/users/{id}/search/status/``
and the ``search_coverage`` of a conversation's detail (``search.coverage``)."""

from typing import Any

from rest_framework import serializers

from conversations.api.serializers import ConversationSerializer
from search import coverage


class SearchCoverageSerializer(serializers.Serializer):
    embedding_model = serializers.CharField(
        allow_null=True, help_text="The model whose vectors are counted; null: the tenant searches by words only."
    )
    messages = serializers.IntegerField(
        help_text="Persisted messages search reads: user and assistant messages with content (tool and system "
        "messages, and empty ones, are never embedded)."
    )
    embedded = serializers.IntegerField(help_text="Of those, the ones with a vector under embedding_model.")
    not_embedded = serializers.IntegerField(
        help_text="Persisted, waiting for their vector: found by their words already, by meaning once embedded."
    )
    pending_persist = serializers.IntegerField(
        allow_null=True,
        help_text="Messages acknowledged (201) that no worker has persisted yet, any role: not searchable at all yet. "
        "Null when the cache does not answer.",
    )
    searchable = serializers.BooleanField(
        help_text="There is something to search and every message appended so far is persisted and embedded: "
        "search covers the whole history. Poll until true after loading a history; reason says why it is false."
    )
    reason = serializers.CharField(
        allow_null=True,
        help_text="Null when searchable; else why not: "
        + "; ".join(f"{code}: {meaning}" for code, meaning in coverage.REASONS.items())
        + ".",
    )
    oldest_not_embedded_at = serializers.DateTimeField(
        allow_null=True, help_text="When the oldest message still waiting for its vector was persisted."
    )
    embedding_waiting = serializers.CharField(
        allow_null=True,
        help_text="Why messages wait for their vector beyond the worker's pace: the embedding server failed and is "
        "asked again in some seconds, or its configuration cannot work (what to set). Null: nothing stops them.",
    )


class UserSearchStatusSerializer(SearchCoverageSerializer):
    user_id = serializers.CharField()


class ConversationDetailSerializer(ConversationSerializer):
    """The conversation with how much of it search covers (the list leaves that out: one query per row)."""

    search_coverage = SearchCoverageSerializer(read_only=True)

    class Meta(ConversationSerializer.Meta):
        fields = (*ConversationSerializer.Meta.fields, "search_coverage")


def coverage_answer(found: coverage.SearchCoverage) -> dict[str, Any]:
    return {
        "embedding_model": found.embedding_model,
        "messages": found.messages,
        "embedded": found.embedded,
        "not_embedded": found.not_embedded,
        "pending_persist": found.pending_persist,
        "searchable": found.searchable,
        "reason": found.reason,
        "oldest_not_embedded_at": serializers.DateTimeField().to_representation(found.oldest_not_embedded_at)
        if found.oldest_not_embedded_at
        else None,
        "embedding_waiting": found.embedding_waiting,
    }
