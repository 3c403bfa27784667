"""Memories API v1 views: a user's extracted memories, searched, read with their history, corrected
and taken back.

Every view is a ``TenantAPIView``: the tenant comes from the API key only, so the same user id in
another tenant is another user, and another tenant's memory answers 404 like a missing one. The list
says whether the tenant extracts at all (``extraction``: enabled, model, and when not, why), so an
empty list is never a mystery.
"""

import uuid
from typing import Any

from django.db import DatabaseError
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.api.views import TenantAPIView
from core.exceptions import NotFound, ServiceUnavailable
from extraction import selectors, services
from extraction.api import serializers
from extraction.models import Memory
from tenants.models import Tenant


def _database_unavailable() -> ServiceUnavailable:
    return ServiceUnavailable("PostgreSQL does not answer: the memories cannot be read now.", retry_after=5)


def _memory_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise NotFound(f"No memory {value!r}: a memory id is a UUID.") from None


def memories_out(tenant: Tenant, memories: list[Memory], *, scores: dict[int, float | None] | None = None) -> list[dict]:
    context = {"conversation_ids": selectors.conversation_ids_of(tenant=tenant, memories=memories), "scores": scores or {}}
    return serializers.MemoryOutSerializer(memories, many=True, context=context).data


def memory_list_answer(*, tenant: Tenant, user_id: str, values: dict[str, Any]) -> dict[str, Any]:
    """The list's answer for the checked ``values`` of ``MemoryQuerySerializer`` (the endpoint's and
    the MCP tool's): the memories newest first, or with a query the best ``top_k``, and the status."""
    filters = selectors.MemoryFilters(
        kind=values.get("kind"),
        subject=values.get("subject"),
        valid_at=values.get("valid_at"),
        include_past=values["include_past"],
        conversation_ids=tuple(values.get("conversation_id", ())),
        start_date=values.get("start_date"),
        end_date=values.get("end_date"),
    )
    searched = selectors.MemorySearchResult(hits=[])
    try:
        if values.get("query"):
            top_k = values.get("top_k") or int(tenant.setting("MEMORY_TOP_K"))
            searched = selectors.memories_search_result(
                tenant=tenant, user_id=user_id, query=values["query"], top_k=top_k, filters=filters, rerank=values.get("rerank")
            )
            hits = searched.hits
            memories = [hit.memory for hit in hits]
            results = memories_out(tenant, memories, scores={hit.memory.pk: hit.score for hit in hits})
            count = len(memories)
        else:
            listed = selectors.user_memories(tenant=tenant, user_id=user_id, filters=filters)
            offset, limit = values["offset"], values.get("limit") or 50
            results = memories_out(tenant, list(listed[offset : offset + limit]))
            count = listed.count()
    except DatabaseError as error:
        raise _database_unavailable() from error
    return {
        "user_id": user_id,
        "extraction": selectors.extraction_status(tenant),
        "count": count,
        "results": results,
        "reranked": searched.reranked,
        "rerank_model": searched.rerank_model,
        "notices": searched.notices,
    }


class MemoryListView(TenantAPIView):
    @extend_schema(
        operation_id="users_memories_list",
        parameters=[serializers.MemoryQuerySerializer],
        responses=serializers.MemoryListOutSerializer,
        description="The user's memories extracted from their conversations: current ones, newest change first "
        "(limit, offset), or with query the top_k best matches by hybrid search (score set). kind, subject, "
        "valid_at, include_past, conversation_id, start_date and end_date filter either. extraction says "
        "whether memories are extracted for this tenant, and when not, why.",
    )
    def get(self, request: Request, user_id: str) -> Response:
        query = serializers.MemoryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(memory_list_answer(tenant=self.tenant, user_id=user_id, values=query.validated_data))


class MemoryDetailView(TenantAPIView):
    def _found(self, user_id: str, memory_id: str) -> Memory:
        memory = selectors.memory_get(tenant=self.tenant, user_id=user_id, memory_id=_memory_id(memory_id))
        if memory is None:
            raise NotFound(f"User {user_id!r} has no memory {memory_id}.")
        return memory

    def _answer(self, memory: Memory, *, code: int = status.HTTP_200_OK) -> Response:
        context = {
            "conversation_ids": selectors.conversation_ids_of(tenant=self.tenant, memories=[memory]),
            "history": selectors.memory_history(tenant=self.tenant, memory=memory),
        }
        return Response(serializers.MemoryDetailOutSerializer(memory, context=context).data, status=code)

    @extend_schema(
        operation_id="users_memories_get",
        responses=serializers.MemoryDetailOutSerializer,
        description="One memory with its history (every change, newest first: what it said before, when it "
        "stopped holding, which messages and which model or person changed it).",
    )
    def get(self, request: Request, user_id: str, memory_id: str) -> Response:
        return self._answer(self._found(user_id, memory_id))

    @extend_schema(
        operation_id="users_memories_correct",
        request=serializers.MemoryCorrectionSerializer,
        responses=serializers.MemoryDetailOutSerializer,
        description="Correct a memory by hand (kind, subject, text, valid_from, valid_to, confidence): the version "
        "replaced is kept in its history, recorded as made by the API. valid_to takes it back; null makes it "
        "current again.",
    )
    def patch(self, request: Request, user_id: str, memory_id: str) -> Response:
        correction = serializers.MemoryCorrectionSerializer(data=request.data)
        correction.is_valid(raise_exception=True)
        memory = services.memory_correct(
            tenant=self.tenant,
            user_id=user_id,
            memory_id=_memory_id(memory_id),
            changes=dict(correction.validated_data),
            by="api",
        )
        return self._answer(memory)

    @extend_schema(
        operation_id="users_memories_delete",
        responses={204: None},
        description="Take a memory back: it stops being current (valid_to now) and its history is kept. Erasing "
        "the user (DELETE /users/{id}/) or a conversation erases what was derived from it.",
    )
    def delete(self, request: Request, user_id: str, memory_id: str) -> Response:
        services.memory_invalidate(tenant=self.tenant, user_id=user_id, memory_id=_memory_id(memory_id), by="api")
        return Response(status=status.HTTP_204_NO_CONTENT)
