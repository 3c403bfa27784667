"""Shapes of the store API, for the OpenAPI description and the answers.

The operations themselves are read and checked by ``store.services.operation_parse`` (one set of
rules for the batch and the plain routes); these serializers describe them.
"""

from typing import Any

from rest_framework import serializers

from store.models import StoreItem
from store.selectors import Hit

OPERATIONS_HELP = (
    'Each operation is an object with "op": "get" (namespace, key, refresh_ttl), "search" (namespace_prefix, '
    'query, filter, limit, offset, refresh_ttl), "put" (namespace, key, value, index, ttl; a null value deletes), '
    '"delete" (namespace, key) or "list_namespaces" (prefix, suffix or match_conditions, max_depth, limit, offset).'
)


class StoreBatchInSerializer(serializers.Serializer):
    operations = serializers.ListField(child=serializers.DictField(), help_text=OPERATIONS_HELP)


class StorePutInSerializer(serializers.Serializer):
    namespace = serializers.ListField(child=serializers.CharField(), help_text='The item\'s namespace, e.g. ["users", "42"].')
    key = serializers.CharField()
    value = serializers.DictField(help_text="A JSON object.")
    index = serializers.JSONField(required=False, help_text="false, null (the whole value) or field paths to search by.")
    ttl = serializers.FloatField(required=False, allow_null=True, help_text="Minutes to live; null: never expires.")


class StoreSearchInSerializer(serializers.Serializer):
    namespace_prefix = serializers.ListField(child=serializers.CharField(), required=False)
    query = serializers.CharField(required=False, allow_null=True, help_text="Ranks the items (hybrid search) when given.")
    filter = serializers.DictField(required=False, allow_null=True, help_text="Value fields: a value or {$eq,$ne,$gt,...}.")
    limit = serializers.IntegerField(required=False, min_value=0)
    offset = serializers.IntegerField(required=False, min_value=0)
    refresh_ttl = serializers.BooleanField(required=False)


class StoreNamespacesQuerySerializer(serializers.Serializer):
    prefix = serializers.ListField(child=serializers.CharField(), required=False, help_text='Repeat per label; "*" is any.')
    suffix = serializers.ListField(child=serializers.CharField(), required=False, help_text='Repeat per label; "*" is any.')
    max_depth = serializers.IntegerField(required=False, min_value=1)
    limit = serializers.IntegerField(required=False, min_value=0)
    offset = serializers.IntegerField(required=False, min_value=0)


class StoreItemOutSerializer(serializers.Serializer):
    namespace = serializers.ListField(child=serializers.CharField())
    key = serializers.CharField()
    value = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True, help_text="When the item expires; null: never.")


class StoreSearchItemOutSerializer(StoreItemOutSerializer):
    score = serializers.FloatField(allow_null=True, help_text="The fused ranking score, best first; null without a query.")


class StoreSearchOutSerializer(serializers.Serializer):
    items = StoreSearchItemOutSerializer(many=True)


class StoreNamespacesOutSerializer(serializers.Serializer):
    namespaces = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))


class StoreBatchOutSerializer(serializers.Serializer):
    results = serializers.ListField(
        child=serializers.JSONField(),
        help_text="One per operation, in order: an item or null (get), items with scores (search), null (put, delete), "
        "namespaces as arrays (list_namespaces).",
    )


def item_json(item: StoreItem) -> dict[str, Any]:
    return StoreItemOutSerializer(item).data


def hit_json(hit: Hit) -> dict[str, Any]:
    return {**item_json(hit.item), "score": hit.score}


def result_json(result: Any) -> Any:
    """One batch result as JSON."""
    if isinstance(result, StoreItem):
        return item_json(result)
    if isinstance(result, list):
        return [hit_json(entry) if isinstance(entry, Hit) else list(entry) for entry in result]
    return None
