"""Summaries API v1 views: validate, call one service or selector, answer.

Every view is a ``TenantAPIView``: the tenant comes from the API key only, and another tenant's
conversation answers 404 like a missing one.
"""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.api.views import TenantAPIView, _conversation_id
from summaries import selectors, services
from summaries.api import serializers


class SummaryListView(TenantAPIView):
    @extend_schema(
        operation_id="conversations_summaries_list",
        parameters=[serializers.SummaryListQuerySerializer],
        responses=serializers.SummaryListOutSerializer,
        description="The conversation's summaries, newest first: one every MEMORY_SUMMARY_EVERY message pairs, "
        "over the last MEMORY_SUMMARY_WINDOW messages of that pair, and any made on request.",
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation_id = _conversation_id(conversation_id)
        query = serializers.SummaryListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        limit = query.validated_data.get("limit") or min(serializers.DEFAULT_PAGE_SIZE, settings.MEMORY_MAX_PAGE_SIZE)
        summaries = selectors.summaries_list(tenant=self.tenant, conversation_id=conversation_id, limit=limit)
        return Response(
            {"conversation_id": conversation_id, "summaries": [selectors.summary_to_dict(summary) for summary in summaries]}
        )

    @extend_schema(
        operation_id="conversations_summaries_create",
        request=None,
        responses={201: serializers.SummaryCreatedOutSerializer},
        description="Summarise the conversation's last MEMORY_SUMMARY_WINDOW persisted messages now, filed under "
        "its current pair count; if a summary is filed there already, that one is returned. The chat model "
        "is MEMORY_SUMMARY_MODEL, or the rule-based summary when it is unset or fails. 409 when the conversation "
        "has no persisted message.",
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        conversation_id = _conversation_id(conversation_id)
        summary = services.summary_create_now(tenant=self.tenant, conversation_id=conversation_id)
        return Response(
            {"conversation_id": conversation_id, **selectors.summary_to_dict(summary)}, status=status.HTTP_201_CREATED
        )
