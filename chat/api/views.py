"""``POST /api/v1/conversations/{conversation_id}/chat/``: the memory-aware chat loop (``chat.services``)."""

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from chat import services
from chat.api import serializers
from conversations.api.views import TenantAPIView, _new_conversation_id

EVENT_STREAM = "text/event-stream"


class ChatView(TenantAPIView):
    @extend_schema(
        request=serializers.ChatInSerializer,
        responses={
            201: serializers.ChatOutSerializer,
            (200, "application/json"): OpenApiResponse(
                serializers.ChatOutSerializer,
                description="The message_id was sent before and answered: the stored pair, the model not asked again.",
            ),
            (200, EVENT_STREAM): OpenApiResponse(
                serializers.ChatEventSerializer,
                description="With stream (or Accept: text/event-stream): server-sent events, start, then token for each "
                "piece of the answer, then done or error.",
            ),
            409: OpenApiResponse(
                description="run_active: another chat turn of this conversation is running (one at a time, so each "
                "answer follows its question); chat_in_progress: this message_id is being answered; retry after "
                "Retry-After. user_mismatch: the conversation belongs to another user (error.details: conversation_id, "
                "conversation_user_id, user_id). Nothing stored."
            ),
            429: OpenApiResponse(
                description="chat_limit_reached: the tenant has MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT chat turns running; "
                "throttled: its MEMORY_RATE_LIMIT. Nothing stored; retry after Retry-After."
            ),
            502: OpenApiResponse(description="model_error or egress_refused: the user's message stays stored."),
            503: OpenApiResponse(
                description="chat_capacity: the web process's share of threads for chats is in use (nothing stored); "
                "chat_model_not_configured, chat_model_unavailable, provider_credential_missing, service_unavailable. "
                "Retry after Retry-After."
            ),
            504: OpenApiResponse(
                description="model_timeout: no answer within MEMORY_CHAT_TIMEOUT; the user's message stays stored."
            ),
        },
        description="The agent loop: store the user's message, build its context (recent turns, summary "
        "and, with use_memory, long-term memory), ask the tenant's chat model, store its answer and update the memory "
        "document. The model failing is 502 model_error, timing out 504 model_timeout (the user's message stays "
        "stored); no model configured is 503 chat_model_not_configured.",
    )
    def post(self, request: Request, conversation_id: str) -> Any:
        conversation_id = _new_conversation_id(conversation_id)
        serializer = serializers.ChatInSerializer(data=request.data, context={"tenant": self.tenant})
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
        chat = services.ChatInput(
            content=values["content"],
            system_prompt=values.get("system_prompt") or None,
            model=values.get("model"),
            temperature=values.get("temperature"),
            max_tokens=values.get("max_tokens"),
            use_memory=values.get("use_memory"),
            message_id=str(values["message_id"]) if values.get("message_id") else None,
            user_id=values["user_id"],
            agent_id=values["agent_id"],
            metadata=values["metadata"],
        )
        turn = services.chat_begin(tenant=self.tenant, conversation_id=conversation_id, chat=chat)
        if values["stream"] or EVENT_STREAM in request.headers.get("Accept", ""):
            response = StreamingHttpResponse(services.chat_stream(turn), content_type=EVENT_STREAM)
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"  # a proxy in front must pass each event on at once
            return response
        answer = services.chat_complete(turn)
        return Response(answer, status=status.HTTP_200_OK if answer["replayed"] else status.HTTP_201_CREATED)
