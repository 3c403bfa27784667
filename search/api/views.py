"""Search a conversation's past (``/conversations/{id}/search/``) or a user's (``/users/{id}/search/``)."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.api.views import TenantAPIView, _conversation_id
from search import selectors
from search.api import serializers
from tenants.usage import usage_record


class _SearchView(TenantAPIView):
    def _search(self, request: Request, *, conversation_id: str | None, user_id: str | None) -> Response:
        if request.method == "POST":
            query = serializers.SearchBodySerializer(data=request.data)
        else:
            query = serializers.SearchQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return self._answer(dict(query.validated_data), conversation_id=conversation_id, user_id=user_id)

    def _answer(self, values: dict[str, Any], *, conversation_id: str | None, user_id: str | None) -> Response:
        """The search of the validated ``values`` (the query serializers')."""
        text = values.pop("q")
        if user_id is not None:
            values.setdefault("scope", "user")
        search_request = selectors.SearchRequest.for_tenant(self.tenant, query=text, **values)
        result = selectors.memory_search(
            tenant=self.tenant, request=search_request, conversation_id=conversation_id, user_id=user_id
        )
        usage_record(tenant=self.tenant, searches=1)  # a search answered counts once, whatever it found
        return Response(serializers.search_answer(text, result))


class ConversationSearchView(_SearchView):
    @extend_schema(
        parameters=[serializers.SearchQuerySerializer],
        responses=serializers.SearchOutSerializer,
        description="Semantic search, fused with keyword (BM25) search by default: the messages of this "
        "conversation (and of the same user's other conversations, by scope) most relevant to q, best first. "
        "The filters narrow the messages ranked before ranking: top_k is the best among those that match.",
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        return self._search(request, conversation_id=_conversation_id(conversation_id), user_id=None)

    @extend_schema(
        request=serializers.SearchBodySerializer,
        responses=serializers.SearchOutSerializer,
        description="The same search with its parameters and filters in a JSON body.",
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        return self._search(request, conversation_id=_conversation_id(conversation_id), user_id=None)


class UserSearchView(_SearchView):
    @extend_schema(
        parameters=[serializers.SearchQuerySerializer],
        responses=serializers.SearchOutSerializer,
        description="Search every conversation of one user (the user_id given when its messages were appended); "
        "conversation_id narrows it to some of them.",
    )
    def get(self, request: Request, user_id: str) -> Response:
        return self._search(request, conversation_id=None, user_id=user_id)

    @extend_schema(
        request=serializers.SearchBodySerializer,
        responses=serializers.SearchOutSerializer,
        description="The same search with its parameters and filters in a JSON body.",
    )
    def post(self, request: Request, user_id: str) -> Response:
        return self._search(request, conversation_id=None, user_id=user_id)
