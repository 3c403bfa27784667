"""User facts API v1 views: validate, call one service or selector, answer.

Every view is a ``TenantAPIView``: the tenant comes from the API key only, so the same user id in
another tenant is another user, and another tenant's fact answers 404 like a missing one. A key in
the path is one URL segment, percent-encoded as needed (spaces, non-ASCII, "?", "%"); the services
refuse keys containing "/" so that every key has such a path. The history endpoints page like the
conversation list (``limit``, ``offset``; ``count``, ``next``, ``previous``, ``results``).
"""

from django.db import DatabaseError
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.api.serializers import PageQuerySerializer
from conversations.api.views import ConversationPagination, TenantAPIView
from core.exceptions import NotFound
from facts import selectors, services
from facts.api import serializers
from facts.models import UserFact, UserFactChange

PAGE_PARAMETERS = [PageQuerySerializer]


def _fact(fact: UserFact) -> dict:
    return serializers.FactOutSerializer(fact).data


def _history_page(view: TenantAPIView, request: Request, user_id: str, key: str | None = None) -> Response:
    paginator = ConversationPagination()
    try:
        changes = selectors.fact_changes(tenant=view.tenant, user_id=user_id, key=key)
        page: list[UserFactChange] = paginator.paginate_queryset(changes, request, view=view)
    except DatabaseError as error:
        raise selectors.database_unavailable() from error
    if key is not None and paginator.count == 0:
        raise NotFound(f"The user has no fact {selectors.stored_key(key)!r} and never had one.")
    return paginator.get_paginated_response(serializers.FactChangeOutSerializer(page, many=True).data)


class FactListView(TenantAPIView):
    @extend_schema(
        operation_id="users_facts_list",
        parameters=[serializers.FactListQuerySerializer],
        responses=serializers.FactListOutSerializer,
        description="The user's facts, most recently updated first. A user without facts has an empty list.",
    )
    def get(self, request: Request, user_id: str) -> Response:
        query = serializers.FactListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        facts = selectors.facts_list(tenant=self.tenant, user_id=user_id, limit=query.validated_data.get("limit"))
        return Response(
            {
                "user_id": user_id,
                "facts": [_fact(fact) for fact in facts],
                "total_tokens": sum(fact.token_count for fact in facts),
            }
        )

    @extend_schema(
        operation_id="users_facts_set",
        request=serializers.FactsInSerializer,
        responses={201: serializers.FactsWrittenOutSerializer, 200: serializers.FactsWrittenOutSerializer},
        description="Set one fact or a batch, all or nothing: 201 when any fact was new, else 200. A changed value "
        "is kept in the history; sending the value a fact already holds changes nothing. Values are strings: a "
        "number or boolean is a 400.",
    )
    def post(self, request: Request, user_id: str) -> Response:
        serializer = serializers.FactsInSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        writes = services.facts_upsert(tenant=self.tenant, user_id=user_id, facts=serializer.validated_data["facts"])
        created = [write.fact.key for write in writes if write.created]
        return Response(
            {"user_id": user_id, "facts": [_fact(write.fact) for write in writes], "created": created},
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class UserFactHistoryView(TenantAPIView):
    @extend_schema(
        operation_id="users_facts_history",
        parameters=PAGE_PARAMETERS,
        responses=serializers.FactHistoryPageOutSerializer,
        description="Every change of the user's facts (sets and deletes, of current and deleted facts), newest first.",
    )
    def get(self, request: Request, user_id: str) -> Response:
        return _history_page(self, request, user_id)


class FactDetailView(TenantAPIView):
    @extend_schema(
        operation_id="users_fact_retrieve",
        responses=serializers.FactOutSerializer,
        description="One fact of the user; 404 when the user has no fact with this key.",
    )
    def get(self, request: Request, user_id: str, key: str) -> Response:
        return Response(_fact(selectors.fact_get(tenant=self.tenant, user_id=user_id, key=key)))

    @extend_schema(
        operation_id="users_fact_set",
        request=serializers.FactValueInSerializer,
        responses={201: serializers.FactOutSerializer, 200: serializers.FactOutSerializer},
        description="Set the fact: 201 when it is new, 200 when it existed (its previous value goes to the history; "
        "the same value again changes nothing).",
    )
    def put(self, request: Request, user_id: str, key: str) -> Response:
        serializer = serializers.FactValueInSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fact, created = services.fact_set(tenant=self.tenant, user_id=user_id, key=key, value=serializer.validated_data["value"])
        return Response(_fact(fact), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(
        operation_id="users_fact_delete",
        responses={204: None},
        description="Delete the fact; its history keeps the deleted value.",
    )
    def delete(self, request: Request, user_id: str, key: str) -> Response:
        services.fact_delete(tenant=self.tenant, user_id=user_id, key=key)
        return Response(status=status.HTTP_204_NO_CONTENT)


class FactHistoryView(TenantAPIView):
    @extend_schema(
        operation_id="users_fact_history",
        parameters=PAGE_PARAMETERS,
        responses=serializers.FactHistoryPageOutSerializer,
        description="The changes of one key, newest first, also after the fact was deleted; 404 when it never existed.",
    )
    def get(self, request: Request, user_id: str, key: str) -> Response:
        return _history_page(self, request, user_id, key)
