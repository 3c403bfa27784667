"""Admin forms that pass the door (``core.storable``) before anything is saved.

What an operator types into the admin is one more way into the write path: a value that could not
be stored (``Infinity`` or ``1e400`` in JSON, an escaped NUL or lone surrogate, JSON nested beyond
``MAX_JSON_DEPTH`` levels or beyond Python's stack, an integer too long to turn back into text) is a
form error naming the field and the path inside it, never a 500 and never a write that fails later.

``StorableModelForm`` is the base form of every admin that edits stored values: each of its JSON
fields is a ``StorableJSONField`` (with the admins' ``formfield_overrides``), each text field and each date and time field gets the door as
a validator (a time outside what can be read back, such as 0001-01-01 00:00, is a form error).
"""

import json
from datetime import datetime
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.forms.fields import InvalidJSONInput

from core.exceptions import Unstorable
from core.storable import MAX_JSON_DEPTH, storable_datetime, storable_json, storable_text


class StorableJSONField(forms.JSONField):
    """Django's JSON form field, whose value must be storable JSON.

    Django's field turns only a syntax error into a form error: JSON nested deeper than Python's
    stack (RecursionError) or an integer of more digits than Python converts (ValueError) would be a
    500, and ``Infinity`` or ``1e400`` parse as numbers that PostgreSQL refuses.
    """

    # The name refusals give the value: the form sets each field's own (``StorableModelForm``).
    path = "value"

    def to_python(self, value: Any) -> Any:
        try:
            converted = super().to_python(value)
        except (RecursionError, ValueError) as error:
            raise ValidationError(
                f"This JSON cannot be read: {type(error).__name__}. Send at most {MAX_JSON_DEPTH} levels of "
                "objects and arrays, and integers of at most 4300 digits.",
                code="invalid",
            ) from error
        try:
            return storable_json(converted, field=self.path)
        except Unstorable as error:
            raise ValidationError(error.message, code="unstorable") from error

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            return super().bound_data(data, initial)
        except (RecursionError, ValueError):
            return InvalidJSONInput(data)  # shown back as it was typed

    def prepare_value(self, value: Any) -> Any:
        shown = super().prepare_value(value)
        try:
            shown.encode()
        except UnicodeEncodeError:  # a lone surrogate typed as \ud800: shown escaped, as typed
            return json.dumps(value, cls=self.encoder)
        return shown


class StorableTextValidator:
    """The door as a form validator: text PostgreSQL, Redis and JSON can all hold."""

    def __init__(self, field: str) -> None:
        self.field = field

    def __call__(self, value: Any) -> None:
        if isinstance(value, str):
            try:
                storable_text(value, field=self.field)
            except Unstorable as error:
                raise ValidationError(error.message, code="unstorable") from error

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StorableTextValidator) and other.field == self.field

    def __hash__(self) -> int:
        return hash(self.field)


class StorableDateTimeValidator(StorableTextValidator):
    """The door as a form validator: a time that can be stored, read back and shown everywhere."""

    def __call__(self, value: Any) -> None:
        if isinstance(value, datetime):
            try:
                storable_datetime(value, field=self.field)
            except Unstorable as error:
                raise ValidationError(error.message, code="unstorable") from error


class StorableModelForm(forms.ModelForm):
    """A model form whose every value passes the door before it is saved."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():  # the form's own copies of the fields
            if isinstance(field, StorableJSONField):
                field.path = name
            elif isinstance(field, forms.CharField):
                field.validators.append(StorableTextValidator(name))
            elif isinstance(field, forms.DateTimeField | forms.SplitDateTimeField):
                field.validators.append(StorableDateTimeValidator(name))


# For an admin's ``formfield_overrides``: every JSON model field edited as storable JSON.
STORABLE_FORMFIELDS: dict[type[models.Field], dict[str, Any]] = {models.JSONField: {"form_class": StorableJSONField}}
