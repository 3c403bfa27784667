"""Serializer fields every app's API shares."""

from typing import Any

from rest_framework import serializers

from core.storable import storable_datetime


class DateTimeField(serializers.DateTimeField):
    """DRF's date-time, whose text must be the date-time alone (Python's parser accepts a trailing NUL
    or other control character, which would otherwise pass as part of a valid date), and whose value
    passes the storable door (``core.storable.storable_datetime``: a time that reads back and shows
    everywhere, else ``Unstorable`` naming the field), for a time stored or compared alike."""

    def to_internal_value(self, value: Any) -> Any:
        if isinstance(value, str) and any(ord(character) < 32 for character in value):
            self.fail("invalid", format="an ISO 8601 date-time without control characters, e.g. 2024-05-01T10:00:00Z")
        return storable_datetime(super().to_internal_value(value), field=self.field_name or "value")
