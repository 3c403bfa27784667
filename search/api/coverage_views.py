"""``/users/{id}/search/status/``: how much of one user's history search covers."""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.api.views import TenantAPIView
from core.exceptions import NotFound
from search import coverage
from search.api.coverage import UserSearchStatusSerializer, coverage_answer


class UserSearchStatusView(TenantAPIView):
    @extend_schema(
        responses=UserSearchStatusSerializer,
        description="How much of one user's history search covers: their persisted messages with and without a "
        "vector, and the writes not persisted yet. A user id with no messages answers zeros, not searchable, with "
        "reason no_messages (nothing to search: polling will not change it).",
    )
    def get(self, request: Request, user_id: str) -> Response:
        if not user_id.strip() or len(user_id) > settings.MEMORY_MAX_ID_LENGTH:
            raise NotFound(f"User {user_id} does not exist.")
        found = coverage.user_coverage(tenant=self.tenant, user_id=user_id)
        return Response({"user_id": user_id, **coverage_answer(found)})
