"""LangGraph store API v1 views: read the operations, run them through ``services.store_batch``, answer.

``POST store/batch/`` is what ``BaseStore.batch`` sends: every operation answered in order, all in
one transaction. The other routes are the same operations one at a time, for operators and curl:
an item by namespace and key (``GET``, ``PUT``, ``DELETE store/items/``, the namespace as one
``namespace`` query parameter per label), a search (``POST store/search/``) and the namespaces
(``GET store/namespaces/``). Every view is a ``TenantAPIView``: another tenant's items are not there.
"""

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.api.views import TenantAPIView
from core.exceptions import NotFound
from store import services
from store.api import serializers


def _integer(request: Request, name: str) -> Any:
    value = request.query_params.get(name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise services.InvalidStoreOperation(f"{name} must be an integer.", details={"field": name}) from None


def _run_one(view: TenantAPIView, body: dict[str, Any]) -> Any:
    operation = services.operation_parse(body, field="request")
    (result,) = services.store_batch(tenant=view.tenant, operations=[operation])
    return result


def _item_address(request: Request) -> dict[str, Any]:
    return {"namespace": request.query_params.getlist("namespace"), "key": request.query_params.get("key")}


class StoreBatchView(TenantAPIView):
    @extend_schema(
        operation_id="store_batch",
        request=serializers.StoreBatchInSerializer,
        responses=serializers.StoreBatchOutSerializer,
        description="Run a batch of store operations in order, in one transaction, and answer one result per "
        "operation. Any refused operation refuses the whole batch (400 naming operations[i] and its field); a 2xx "
        "means every write is stored.",
    )
    def post(self, request: Request) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        operations = services.operations_parse(body.get("operations"))
        results = services.store_batch(tenant=self.tenant, operations=operations)
        return Response({"results": [serializers.result_json(result) for result in results]})


ADDRESS = [
    OpenApiParameter("namespace", str, many=True, required=True, description="One per label, in order."),
    OpenApiParameter("key", str, required=True),
]


class StoreItemView(TenantAPIView):
    @extend_schema(
        operation_id="store_item_retrieve",
        parameters=[*ADDRESS, OpenApiParameter("refresh_ttl", bool, description="Start its TTL again (default true).")],
        responses=serializers.StoreItemOutSerializer,
        description="One item; 404 when there is none (or it expired).",
    )
    def get(self, request: Request) -> Response:
        refresh = request.query_params.get("refresh_ttl", "true").lower() not in ("false", "0", "no")
        item = _run_one(self, {"op": "get", **_item_address(request), "refresh_ttl": refresh})
        if item is None:
            raise NotFound("No item has this namespace and key.")
        return Response(serializers.item_json(item))

    @extend_schema(
        operation_id="store_item_put",
        request=serializers.StorePutInSerializer,
        responses=serializers.StoreItemOutSerializer,
        description="Create or replace the item (an upsert by namespace and key).",
    )
    def put(self, request: Request) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        operation = services.operation_parse({**body, "op": "put"}, field="request")
        get = services.GetOperation(namespace=operation.namespace, key=operation.key, refresh_ttl=False)
        _, item = services.store_batch(tenant=self.tenant, operations=[operation, get])
        return Response(serializers.item_json(item))

    @extend_schema(
        operation_id="store_item_delete",
        parameters=ADDRESS,
        responses={204: None},
        description="Delete the item; deleting one that does not exist is a no-op.",
    )
    def delete(self, request: Request) -> Response:
        _run_one(self, {"op": "delete", **_item_address(request)})
        return Response(status=status.HTTP_204_NO_CONTENT)


class StoreSearchView(TenantAPIView):
    @extend_schema(
        operation_id="store_search",
        request=serializers.StoreSearchInSerializer,
        responses=serializers.StoreSearchOutSerializer,
        description="Items under a namespace prefix that pass the filter: ranked by hybrid search (BM25 and "
        "embeddings, fused by reciprocal rank) when a query is given, else in the order they were first written.",
    )
    def post(self, request: Request) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        hits = _run_one(self, {**body, "op": "search"})
        return Response({"items": [serializers.hit_json(hit) for hit in hits]})


class StoreNamespacesView(TenantAPIView):
    @extend_schema(
        operation_id="store_namespaces_list",
        parameters=[serializers.StoreNamespacesQuerySerializer],
        responses=serializers.StoreNamespacesOutSerializer,
        description="The namespaces holding items, sorted, cut to max_depth labels.",
    )
    def get(self, request: Request) -> Response:
        query = request.query_params
        body = {
            "op": "list_namespaces",
            "prefix": query.getlist("prefix") or None,
            "suffix": query.getlist("suffix") or None,
            "max_depth": _integer(request, "max_depth"),
            "limit": _integer(request, "limit"),
            "offset": _integer(request, "offset"),
        }
        return Response({"namespaces": [list(namespace) for namespace in _run_one(self, body)]})
