"""The search filters as the API takes them: query parameters of a GET search (a list parameter is
repeated: ``role=user&role=assistant``; ``metadata`` is URL-encoded JSON), properties of a POST
search's JSON body, and the context endpoint's ``memory_filters`` object. Every value is bounded
(``search.filters``); in a JSON object an unknown name is refused rather than ignored, since a
misspelled filter would silently search everything."""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.utils import html

from conversations.api.fields import DateTimeField
from search import filters

FIELDS = ("start_date", "end_date", "role", "name", "agent_id", "conversation_id", "metadata")
METADATA_HELP = (
    'Equality or "in" on top-level keys of the message\'s metadata: {"topic": "travel", "lang": {"in": ["en", "es"]}}. '
    f"At most {filters.MAX_METADATA_KEYS} keys, {filters.MAX_FILTER_VALUES} values a key."
)
BOUNDS = f"At most {filters.MAX_FILTER_VALUES} values of at most {filters.MAX_FILTER_CHARS} characters."


class BoundedListField(serializers.ListField):
    """A list refused whole, naming its bound, before any item is read."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=filters.MAX_FILTER_VALUES, **kwargs)  # checked first, below; named in the schema

    def to_internal_value(self, data: Any) -> list[Any]:
        if isinstance(data, list | tuple):
            filters.check_count(self.field_name, len(data), filters.MAX_FILTER_VALUES)
        return super().to_internal_value(data)


def _text_list(help_text: str) -> BoundedListField:
    return BoundedListField(child=serializers.CharField(trim_whitespace=False), required=False, help_text=f"{help_text} {BOUNDS}")


@extend_schema_field({"type": "string", "pattern": f"^({'|'.join(filters.SEARCHED_ROLES)})$"})
class SearchedRoleField(serializers.ChoiceField):
    """A role searched (a pattern in the schema: an enum would collide with the message roles' enum)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=filters.SEARCHED_ROLES, **kwargs)


@extend_schema_field({"type": "object", "additionalProperties": True})
class MetadataFilterField(serializers.JSONField):
    """A JSON object in a body; in a query string, the same object as URL-encoded JSON."""


@extend_schema_field(OpenApiTypes.STR)
class MetadataQueryField(serializers.JSONField):
    pass


class SearchFiltersSerializer(serializers.Serializer):
    """Which messages a search ranks; AND across fields, OR within a list."""

    start_date = DateTimeField(required=False, help_text="Messages created at or after this time.")
    end_date = DateTimeField(required=False, help_text="Messages created at or before this time.")
    role = BoundedListField(child=SearchedRoleField(), required=False, help_text="user and/or assistant.")
    name = _text_list("The message's name (metadata name, or the LangChain message's name).")
    agent_id = _text_list("The conversation's agent_id.")
    conversation_id = _text_list("Only these conversations of the scope (never another user's or tenant's).")
    metadata = MetadataFilterField(required=False, help_text=METADATA_HELP)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict) and not html.is_html_input(data):
            unknown = set(data) - set(self.fields)
            if unknown:
                allowed = ", ".join(self.fields)
                raise serializers.ValidationError({name: [f"Unknown field; allowed: {allowed}."] for name in sorted(unknown)})
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = {name: attrs.pop(name) for name in FIELDS if name in attrs}
        attrs["filters"] = filters.search_filters(**given)
        return attrs
