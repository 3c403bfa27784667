"""The memory features' endpoints, on the API's base view (``conversations.api.views.TenantAPIView``):
the context with long-term memory, the conversation with its search coverage, the erase of a user,
the user search with the user's extracted memories (``memory.fused``) when asked."""

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from conversations import context, selectors
from conversations.api import views as conversation_views
from conversations.api.serializers import ConversationSerializer
from conversations.api.views import TenantAPIView, _conversation_id
from core.exceptions import LimitExceeded, NotFound
from memory import context as memory_context
from memory import erase, fused
from memory.api import serializers
from search import coverage as search_coverage
from search.api import coverage as search_coverage_api
from search.api import views as search_views
from search.selectors import SearchRequest
from tenants.models import Tenant
from tenants.usage import usage_record


class ConversationDetailView(conversation_views.ConversationDetailView):
    """The conversation (``conversations``) with how much of it search covers (``search``)."""

    @extend_schema(responses=search_coverage_api.ConversationDetailSerializer)
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_get(tenant=self.tenant, conversation_id=_conversation_id(conversation_id))
        found = search_coverage.conversation_coverage(tenant=self.tenant, conversation=conversation)
        return Response(
            ConversationSerializer(conversation).data | {"search_coverage": search_coverage_api.coverage_answer(found)}
        )


class UserSearchView(search_views.UserSearchView):
    """The user search (``search``), with the user's extracted memories ranked beside the turns when
    ``include_memories`` is true (``memory.fused``); without it, the search's own answer."""

    @extend_schema(
        parameters=[serializers.UserSearchQuerySerializer],
        responses=serializers.USER_SEARCH_OUT,
        description="Search every conversation of one user (the user_id given when its messages were appended); "
        "conversation_id narrows it to some of them. With include_memories=true the user's extracted memories are "
        "ranked with the turns, in one list whose results each say their kind (turn or memory).",
    )
    def get(self, request: Request, user_id: str) -> Response:
        return self._search(request, conversation_id=None, user_id=user_id)

    @extend_schema(
        request=serializers.UserSearchBodySerializer,
        responses=serializers.USER_SEARCH_OUT,
        description="The same search with its parameters and filters in a JSON body.",
    )
    def post(self, request: Request, user_id: str) -> Response:
        return self._search(request, conversation_id=None, user_id=user_id)

    def _search(self, request: Request, *, conversation_id: str | None, user_id: str | None) -> Response:
        if request.method == "POST":
            parameters = serializers.UserSearchBodySerializer(data=request.data)
        else:
            parameters = serializers.UserSearchQuerySerializer(data=request.query_params)
        parameters.is_valid(raise_exception=True)
        values = dict(parameters.validated_data)
        include_memories, include_past = values.pop("include_memories"), values.pop("include_past_memories")
        if not include_memories:
            return self._answer(values, conversation_id=conversation_id, user_id=user_id)
        text = values.pop("q")
        values.setdefault("scope", "user")
        search_request = SearchRequest.for_tenant(self.tenant, query=text, **values)
        result = fused.user_search_fused(tenant=self.tenant, request=search_request, user_id=user_id, include_past=include_past)
        usage_record(tenant=self.tenant, searches=1)
        return Response(serializers.fused_answer(text, result))


class UserView(TenantAPIView):
    @extend_schema(
        responses={200: serializers.UserEraseOutSerializer},
        description="Erase one user everywhere: their conversations, messages, vectors, summaries, checkpoints, "
        "facts, extracted memories, dead letters and cache keys, and writes of theirs still queued. Answers what was erased.",
    )
    def delete(self, request: Request, user_id: str) -> Response:
        if not user_id.strip() or len(user_id) > settings.MEMORY_MAX_ID_LENGTH:
            raise NotFound(f"User {user_id} does not exist.")
        result = erase.user_erase(tenant=self.tenant, user_id=user_id)
        return Response(
            {
                "user_id": user_id,
                "conversations_erased": result.conversations,
                "messages_erased": result.messages,
                "embeddings_erased": result.embeddings,
                "summaries_erased": result.summaries,
                "checkpoints_erased": result.checkpoints,
                "facts_erased": result.facts,
                "memories_erased": result.memories,
                "dead_letters_erased": result.dead_letters,
                "cache_keys_erased": result.cache_keys,
            }
        )


class ContextView(TenantAPIView):
    @extend_schema(
        request=serializers.ContextInSerializer,
        responses=serializers.ContextOutSerializer,
        description="build_agent_context: the messages to send to the LLM within a token budget (system "
        "prompt with the summary of older turns, recent turns in full, the query), with the figures behind them.",
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        serializer = serializers.ContextInSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(
            context_answer(
                tenant=self.tenant, conversation_id=_conversation_id(conversation_id), values=serializer.validated_data
            )
        )


def context_answer(*, tenant: Tenant, conversation_id: str, values: dict[str, Any]) -> dict[str, Any]:
    """The context endpoint's answer to ``values`` (``ContextInSerializer``'s), the tenant's settings as
    defaults; a budget the system prompt and query alone exceed is ``limit_exceeded``."""
    request = context.ContextRequest(
        query=values.get("query"),
        system_prompt=values.get("system_prompt") or None,
        max_tokens=values.get("max_tokens") or tenant.setting("MEMORY_MAX_TOKENS"),
        short_term_turns=values.get("short_term_turns", tenant.setting("MEMORY_SHORT_TERM_TURNS")),
        long_term_turns=values.get("long_term_turns", tenant.setting("MEMORY_LONG_TERM_TURNS")),
        compression_threshold=values.get("compression_threshold") or tenant.setting("MEMORY_COMPRESSION_THRESHOLD"),
        format=values["format"],
    )
    try:
        return memory_context.conversation_context(
            tenant=tenant,
            conversation_id=conversation_id,
            request=request,
            checkpoint_namespace=values.get("checkpoint_namespace"),
            use_memory=values["use_memory"],
            top_k=values.get("top_k"),
            memory_filters=values.get("memory_filters", {}).get("filters"),
        )
    except context.BudgetTooSmall as error:
        raise LimitExceeded(
            str(error), details={"field": "max_tokens", "size": error.needed, "limit": error.max_tokens}
        ) from error
