"""Search a conversation's past (``/conversations/{id}/search/``) or a user's (``/users/{id}/search/``)."""

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.api.views import TenantAPIView, _conversation_id
from search import selectors
from search.api import serializers


class _SearchView(TenantAPIView):
    def _search(self, request: Request, *, conversation_id: str | None, user_id: str | None) -> Response:
        query = serializers.SearchQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        values = dict(query.validated_data)
        text = values.pop("q")
        if user_id is not None:
            values.setdefault("scope", "user")
        search_request = selectors.SearchRequest.for_tenant(self.tenant, query=text, **values)
        result = selectors.memory_search(
            tenant=self.tenant, request=search_request, conversation_id=conversation_id, user_id=user_id
        )
        return Response(serializers.search_answer(text, result))


class ConversationSearchView(_SearchView):
    @extend_schema(
        parameters=[serializers.SearchQuerySerializer],
        responses=serializers.SearchOutSerializer,
        description="Seed 003's semantic search, fused with keyword (BM25) search by default: the messages of this "
        "conversation (and of the same user's other conversations, by scope) most relevant to q, best first.",
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        return self._search(request, conversation_id=_conversation_id(conversation_id), user_id=None)


class UserSearchView(_SearchView):
    @extend_schema(
        parameters=[serializers.SearchQuerySerializer],
        responses=serializers.SearchOutSerializer,
        description="Search every conversation of one user (the user_id given when its messages were appended).",
    )
    def get(self, request: Request, user_id: str) -> Response:
        return self._search(request, conversation_id=None, user_id=user_id)
