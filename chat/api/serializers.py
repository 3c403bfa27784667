"""The chat endpoint's input and its answer (the answer's shape is documented for the schema)."""

from typing import Any

from django.conf import settings
from rest_framework import serializers

from conversations.api.serializers import OWNER_ID_MAX, MessageOutSerializer, TextField, check_metadata, check_text
from core.exceptions import LimitExceeded

MAX_TEMPERATURE = 2.0


class ChatInSerializer(serializers.Serializer):
    """One chat turn: the user's message and how to answer it; each default is the tenant's setting."""

    content = TextField(trim_whitespace=False, help_text="The user's message.")
    system_prompt = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    model = serializers.RegexField(
        r"^[\w.:/@+-]{1,200}$",
        required=False,
        help_text="Another model of the tenant's provider (MEMORY_CHAT_MODEL's); the provider, server and credentials stay the tenant's.",
    )
    temperature = serializers.FloatField(
        required=False, min_value=0.0, max_value=MAX_TEMPERATURE, help_text="Default MEMORY_CHAT_TEMPERATURE."
    )
    max_tokens = serializers.IntegerField(
        required=False, min_value=1, help_text="The answer's bound in tokens; at most (and by default) MEMORY_CHAT_MAX_TOKENS."
    )
    use_memory = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Add long-term memory (summaries, the user's facts, relevant older messages). Unset: added when the "
        "message refers to earlier context.",
    )
    stream = serializers.BooleanField(
        required=False, default=False, help_text="Answer as server-sent events (or send Accept: text/event-stream)."
    )
    message_id = serializers.UUIDField(
        required=False,
        help_text="Your id for the user message: sending it again neither stores it twice nor asks the model twice.",
    )
    metadata = serializers.JSONField(required=False, default=dict, help_text="Stored with the user message.")
    user_id = serializers.CharField(required=False, allow_blank=True, max_length=OWNER_ID_MAX, default="")
    agent_id = serializers.CharField(required=False, allow_blank=True, max_length=OWNER_ID_MAX, default="")

    def validate_content(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("content is empty; send the user's message.")
        return check_text(value, field="content")

    def validate_system_prompt(self, value: str) -> str:
        return check_text(value, field="system_prompt")

    def validate_metadata(self, value: Any) -> dict:
        return check_metadata(value)

    def validate_max_tokens(self, value: int) -> int:
        ceiling = settings.MEMORY_CHAT_MAX_TOKENS
        tenant = self.context.get("tenant")
        if tenant is not None:
            ceiling = int(tenant.setting("MEMORY_CHAT_MAX_TOKENS"))
        if value > ceiling:
            raise LimitExceeded(
                f"max_tokens is {value}; the limit is MEMORY_CHAT_MAX_TOKENS={ceiling}.",
                details={"field": "max_tokens", "size": value, "limit": ceiling},
            )
        return value


class ChatHistorySerializer(serializers.Serializer):
    used = serializers.BooleanField(help_text="Whether the conversation's history went into the prompt.")
    messages = serializers.IntegerField(help_text="Earlier messages the model got in full.")
    error = serializers.CharField(allow_null=True, help_text="Why the history is missing, when it is.")


class ChatOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    user_message = MessageOutSerializer()
    assistant_message = MessageOutSerializer()
    model = serializers.CharField(help_text="provider:model")
    usage = serializers.DictField(
        help_text="input_tokens, output_tokens, total_tokens (estimated: true when the provider gave none)."
    )
    execution_time = serializers.FloatField(help_text="Seconds from the model's call to its whole answer.")
    history = ChatHistorySerializer()
    need_memory = serializers.BooleanField()
    memory_reason = serializers.CharField()
    memory_context = serializers.DictField(allow_null=True, help_text="The memory bundle, when memory was used.")
    context = serializers.DictField(allow_null=True, help_text="The built context's figures (tokens, turns, summary).")
    memory_updated = serializers.BooleanField()
    replayed = serializers.BooleanField(help_text="The message was sent before and already answered: nothing new was stored.")


class ChatEventSerializer(serializers.Serializer):
    """One server-sent event of a streamed answer (``event:`` and ``data:`` lines)."""

    event = serializers.ChoiceField(choices=["start", "token", "done", "error"])
    data = serializers.CharField(
        help_text="JSON. start: the stored user message and the context used; token: {text}; done: the whole answer, "
        "as the 201 body; error: {error: {code, message, details}}."
    )
