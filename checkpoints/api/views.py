"""Checkpoint API v1 views: validate, call one service or selector, answer.

Every view is a ``TenantAPIView``: the tenant comes from the API key only, and another tenant's
conversation answers 404 like a missing one. A conversation id that could never be stored is a 404
on reads and a 400 on the save that may create the conversation; a checkpoint id that could never be
stored is a 404.
"""

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints import selectors, services
from checkpoints.api import serializers
from conversations.api.views import TenantAPIView, _conversation_id, _new_conversation_id
from core.exceptions import NotFound

NAMESPACE_DEFAULT_ROOT = OpenApiParameter("namespace", str, description='The graph namespace; "" (the root graph) when absent.')


def _checkpoint_id(value: str) -> str:
    """A checkpoint id read from the URL: one that could never be stored does not exist (404)."""
    if not serializers.is_checkpoint_id(value):
        raise NotFound(f"Checkpoint {value} does not exist.")
    return value


def _query(serializer_class: type, request: Request) -> dict:
    query = serializer_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


class CheckpointListView(TenantAPIView):
    @extend_schema(
        operation_id="conversations_checkpoints_list",
        parameters=[serializers.CheckpointListQuerySerializer],
        responses=serializers.CheckpointListOutSerializer,
        description="The conversation's checkpoints, newest first, each with its pending writes.",
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation_id = _conversation_id(conversation_id)
        values = _query(serializers.CheckpointListQuerySerializer, request)
        checkpoints = selectors.checkpoint_list(
            tenant=self.tenant,
            conversation_id=conversation_id,
            namespace=values.get("namespace"),
            before=values.get("before"),
            limit=values.get("limit") or min(serializers.DEFAULT_PAGE_SIZE, settings.MEMORY_MAX_PAGE_SIZE),
        )
        return Response({"conversation_id": conversation_id, "checkpoints": checkpoints, "count": len(checkpoints)})

    @extend_schema(
        operation_id="conversations_checkpoints_save",
        request=serializers.CheckpointInSerializer,
        responses={201: serializers.CheckpointOutSerializer, 200: serializers.CheckpointOutSerializer},
        description="Save a checkpoint (201), or replace the one with this id in this namespace (200: it keeps "
        "its place and its writes). Only the newest MEMORY_MAX_CHECKPOINTS of the namespace are kept. The "
        "conversation is created on its first write.",
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        conversation_id = _new_conversation_id(conversation_id)
        serializer = serializers.CheckpointInSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = services.checkpoint_save(tenant=self.tenant, conversation_id=conversation_id, **serializer.validated_data)
        return Response(result.checkpoint, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)

    @extend_schema(
        operation_id="conversations_checkpoints_delete",
        parameters=[serializers.NamespaceFilterSerializer],
        responses={200: serializers.CheckpointsDeleteOutSerializer},
        description="Delete the conversation's checkpoints and their writes: every namespace, or the one given.",
    )
    def delete(self, request: Request, conversation_id: str) -> Response:
        conversation_id = _conversation_id(conversation_id)
        values = _query(serializers.NamespaceFilterSerializer, request)
        deleted = services.checkpoints_delete(
            tenant=self.tenant, conversation_id=conversation_id, namespace=values.get("namespace")
        )
        return Response({"conversation_id": conversation_id, "deleted": deleted})


class CheckpointLatestView(TenantAPIView):
    @extend_schema(
        operation_id="conversations_checkpoints_latest",
        parameters=[NAMESPACE_DEFAULT_ROOT],
        responses=serializers.CheckpointOutSerializer,
        description="The newest checkpoint of the namespace; 404 when it has none.",
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation_id = _conversation_id(conversation_id)
        values = _query(serializers.NamespaceQuerySerializer, request)
        checkpoint = selectors.checkpoint_latest(
            tenant=self.tenant, conversation_id=conversation_id, namespace=values["namespace"]
        )
        return Response(checkpoint)


class CheckpointDetailView(TenantAPIView):
    @extend_schema(
        operation_id="conversations_checkpoints_retrieve",
        parameters=[NAMESPACE_DEFAULT_ROOT],
        responses=serializers.CheckpointOutSerializer,
    )
    def get(self, request: Request, conversation_id: str, checkpoint_id: str) -> Response:
        conversation_id = _conversation_id(conversation_id)
        checkpoint_id = _checkpoint_id(checkpoint_id)
        values = _query(serializers.NamespaceQuerySerializer, request)
        checkpoint = selectors.checkpoint_get(
            tenant=self.tenant, conversation_id=conversation_id, checkpoint_id=checkpoint_id, namespace=values["namespace"]
        )
        return Response(checkpoint)


class CheckpointWritesView(TenantAPIView):
    @extend_schema(
        operation_id="conversations_checkpoints_writes_save",
        request=serializers.WritesInSerializer,
        responses=serializers.WritesOutSerializer,
        description="Store a task's pending writes against a checkpoint. A write with idx >= 0 that is already "
        "stored for this task is kept (retries are idempotent); one with a negative idx (error, interrupt, "
        "scheduled, resume) replaces the stored one. written counts the distinct writes sent.",
    )
    def post(self, request: Request, conversation_id: str, checkpoint_id: str) -> Response:
        conversation_id = _conversation_id(conversation_id)
        checkpoint_id = _checkpoint_id(checkpoint_id)
        serializer = serializers.WritesInSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
        written = services.checkpoint_writes_save(
            tenant=self.tenant,
            conversation_id=conversation_id,
            checkpoint_id=checkpoint_id,
            namespace=values["namespace"],
            task_id=values["task_id"],
            task_path=values["task_path"],
            writes=values["writes"],
        )
        return Response(
            {
                "conversation_id": conversation_id,
                "checkpoint_id": checkpoint_id,
                "namespace": values["namespace"],
                "written": written,
            }
        )
