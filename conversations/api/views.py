"""API v1 views: validate, call one service or selector, serialise.

``TenantAPIView`` is the only base: the tenant comes from the API key (``request.user``), never from
the path or the body, and subclasses cannot replace that.
"""

import json
from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import content_parts, selectors, services
from conversations.api import parsers, renderers, serializers
from core.exceptions import NotFound
from tenants import authentication, piggyback
from tenants.models import Tenant


class JsonOnly(DefaultContentNegotiation):
    """The API answers JSON whatever the client asks, so ``?format=`` is free to name an LLM message
    format (openai, langchain) instead of a renderer."""

    def select_renderer(self, request: Request, renderers: list, format_suffix: str | None = None) -> tuple:
        return renderers[0], renderers[0].media_type


class TenantAPIView(APIView):
    """Base of every tenant API view: ``self.tenant`` is the API key's tenant."""

    _sealed = ("initial", "tenant")
    content_negotiation_class = JsonOnly
    parser_classes = [parsers.JSONParser]
    renderer_classes = [renderers.JSONRenderer]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in cls._sealed:
            if name in cls.__dict__:
                raise TypeError(f"{cls.__name__} must not override {name}: the tenant comes from the API key only.")

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # A body over DATA_UPLOAD_MAX_MEMORY_SIZE was refused before any view (memoryproject.middleware).
        super().initial(request, *args, **kwargs)
        _refuse_nul(request, kwargs)

    @property
    def tenant(self) -> Tenant:
        return self.request.user.tenant


def _refuse_nul(request: Request, path_values: dict[str, Any]) -> None:
    """PostgreSQL text cannot hold NUL, so no id or filter containing one can match or make a row. Like
    any id that could never be stored, one in the path is a 404 to a read and a 400 to a write; a query
    parameter is a 400 naming it. Checked here once, before any view reaches the database."""
    for name, value in path_values.items():
        if isinstance(value, str) and "\x00" in value:
            if request.method in ("POST", "PUT", "PATCH"):
                raise ValidationError({name: f"A {name} must not contain NUL characters."})
            raise NotFound(f"No {name} contains a NUL character.", details={"field": name})
    for name, values in request.query_params.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            raise ValidationError({name.replace("\x00", ""): "Query parameters must not contain NUL characters."})


def _window_json(conversation_id: str, elements: list[bytes], *, source: str) -> renderers.EncodedJSON:
    """The window answer around the messages' cached JSON, each given its ``conversation_id``: the
    same document the serialised answer would be, without decoding and re-encoding 50 messages.
    Every cached message is an object whose first member is ``seq`` (``cache.message_json``)."""
    encoded_id = json.dumps(conversation_id, ensure_ascii=False).encode()
    tagged = b'{"conversation_id":' + encoded_id + b","
    elements = [_as_sent(element) if content_parts.may_have_parts(element) else element for element in elements]
    messages = b",".join([tagged + element[1:] for element in elements])
    return renderers.EncodedJSON(
        b'{"conversation_id":%s,"messages":[%s],"count":%d,"source":"%s"}'
        % (encoded_id, messages, len(elements), source.encode())
    )


def _as_sent(element: bytes) -> bytes:
    """A cached message's JSON with its content as it was sent (``content_parts.api_message``)."""
    message = content_parts.api_message(json.loads(element))
    return json.dumps({"seq": message.pop("seq"), **message}, ensure_ascii=False, separators=(",", ":")).encode()


def _conversation_id(value: str) -> str:
    """A conversation id read from the URL: one that could never be stored does not exist (404)."""
    if len(value) > settings.MEMORY_MAX_ID_LENGTH or not serializers.CONVERSATION_ID.fullmatch(value):
        raise NotFound(f"Conversation {value} does not exist.")
    return value


def _new_conversation_id(value: str) -> str:
    """A conversation id a write may create: one that could never be stored is a 400 naming the rule."""
    try:
        return serializers.validate_conversation_id(value)
    except ValidationError as error:
        raise ValidationError({"conversation_id": error.detail}) from error


class ConversationPagination(LimitOffsetPagination):
    """Limit/offset pages whose parameters are validated (``PageQuerySerializer``): a limit or offset
    that is negative, not a number or past its bound is a 400 naming it, never a silent default."""

    default_limit = 50
    query_serializer = serializers.PageQuerySerializer

    @property
    def max_limit(self) -> int:  # read at request time so tests and deployments may change it
        return settings.MEMORY_MAX_PAGE_SIZE

    def page_values(self, request: Request) -> dict[str, Any]:
        query = self.query_serializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return query.validated_data

    def get_limit(self, request: Request) -> int | None:
        return self.page_values(request).get("limit") or min(self.default_limit, self.max_limit)

    def get_offset(self, request: Request) -> int:
        return self.page_values(request)["offset"]


class ConversationListView(TenantAPIView):
    @extend_schema(
        parameters=[serializers.ConversationListQuerySerializer],
        responses=serializers.ConversationPageSerializer,
        operation_id="conversations_list",
    )
    def get(self, request: Request) -> Response:
        query = serializers.ConversationListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        values = query.validated_data
        queryset = selectors.conversation_list(
            tenant=self.tenant, user_id=values.get("user_id"), agent_id=values.get("agent_id"), archived=values["archived"]
        )
        paginator = ConversationPagination()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response(serializers.ConversationSerializer(page, many=True).data)

    @extend_schema(request=serializers.ConversationSerializer, responses={201: serializers.ConversationSerializer})
    def post(self, request: Request) -> Response:
        serializer = serializers.ConversationSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        conversation = services.conversation_create(tenant=self.tenant, **serializer.validated_data)
        return Response(serializers.ConversationSerializer(conversation).data, status=status.HTTP_201_CREATED)


class ConversationDetailView(TenantAPIView):
    """A conversation: read, changed, erased. The route serves ``memory.api.views.ConversationDetailView``,
    whose answer adds the conversation's search coverage."""

    @extend_schema(responses=serializers.ConversationSerializer)
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_get(tenant=self.tenant, conversation_id=_conversation_id(conversation_id))
        return Response(serializers.ConversationSerializer(conversation).data)

    @extend_schema(request=serializers.ConversationUpdateSerializer, responses=serializers.ConversationSerializer)
    def patch(self, request: Request, conversation_id: str) -> Response:
        serializer = serializers.ConversationUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        conversation = services.conversation_update(
            tenant=self.tenant, conversation_id=_conversation_id(conversation_id), changes=serializer.validated_data
        )
        return Response(serializers.ConversationSerializer(conversation).data)

    @extend_schema(responses={200: serializers.EraseOutSerializer})
    def delete(self, request: Request, conversation_id: str) -> Response:
        result = services.conversation_erase(tenant=self.tenant, conversation_id=_conversation_id(conversation_id))
        return Response(
            {"conversation_id": conversation_id, "messages_erased": result.messages, "cache_keys_erased": result.cache_keys}
        )


class MemoryView(TenantAPIView):
    @extend_schema(responses=serializers.MemoryDocumentSerializer)
    def get(self, request: Request, conversation_id: str) -> Response:
        return Response(selectors.memory_get(tenant=self.tenant, conversation_id=_conversation_id(conversation_id)))

    @extend_schema(
        request=serializers.MemoryDocumentSerializer,
        responses={
            200: serializers.MemoryDocumentSerializer,
            409: OpenApiResponse(
                description="error.code user_mismatch: metadata.user_id names a user other than the conversation's "
                "(error.details: conversation_id, conversation_user_id, user_id); nothing stored"
            ),
        },
    )
    def put(self, request: Request, conversation_id: str) -> Response:
        conversation_id = _new_conversation_id(conversation_id)
        serializer = serializers.MemoryDocumentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        document = services.memory_save(tenant=self.tenant, conversation_id=conversation_id, document=serializer.validated_data)
        return Response(document)


def _window_query(request: Request, tenant: Tenant) -> selectors.WindowQuery:
    """The window the request asks for (its query as ``tenant``'s defaults complete it), read once per
    request: its piggybacked read and its view ask for it both."""
    kept: tuple[str, Any, selectors.WindowQuery] | None = getattr(request, "_window_query", None)
    if kept is not None and kept[:2] == (tenant.slug, tenant.settings):  # a guessed tenant's settings may be older
        return kept[2]
    values = serializers.window_query_values(request.query_params)
    query = selectors.WindowQuery(
        limit=values.get("limit") or tenant.setting("MEMORY_HISTORY_LIMIT"),
        skip=values["skip"],
        role=values.get("role"),
        start_date=values.get("start_date"),
        end_date=values.get("end_date"),
        include_archived=values["include_archived"],
    )
    request._window_query = (tenant.slug, tenant.settings, query)
    return query


class MessageListView(TenantAPIView):
    def redis_reads(self, request: Request, tenant: Tenant) -> list[tuple[Any, ...]]:
        """A GET's window read, sent with the API key's round trip (``tenants.piggyback``)."""
        if request.method != "GET":
            return []
        conversation_id = _conversation_id(request.parser_context["kwargs"]["conversation_id"])
        return selectors.window_reads(tenant=tenant, conversation_id=conversation_id, query=_window_query(request, tenant))

    @extend_schema(
        operation_id="conversations_messages_window",
        parameters=[serializers.WindowQuerySerializer],
        responses=serializers.WindowOutSerializer,
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        window = selectors.conversation_window(
            tenant=self.tenant,
            conversation_id=_conversation_id(conversation_id),
            query=_window_query(request, self.tenant),
            answered=piggyback.answers(request, self.tenant),
        )
        if window.elements is not None:
            return Response(_window_json(conversation_id, window.elements, source=window.source))
        messages = [content_parts.api_message(message) | {"conversation_id": conversation_id} for message in window.messages]
        return Response(
            {"conversation_id": conversation_id, "messages": messages, "count": len(messages), "source": window.source}
        )

    @extend_schema(
        request=serializers.AppendSerializer,
        responses={
            201: serializers.AppendOutSerializer,
            200: serializers.AppendOutSerializer,
            400: OpenApiResponse(description="error.code validation_error or limit_exceeded, naming the field"),
            409: OpenApiResponse(
                description="error.code conflict: a message id holds other content; user_mismatch: the conversation "
                "belongs to another user (error.details: conversation_id, conversation_user_id, user_id), nothing stored"
            ),
            503: OpenApiResponse(description="error.code broker_unavailable, write_indeterminate, idempotency_unknown, ..."),
        },
        description="Append one message or a batch. A 201 means the write is durable (broker-confirmed) and "
        "already in the window. Resending a message with the same id and content answers 200 with the stored message "
        "and the seq it was given the first time; send your own ids and resend the same body after any failure. "
        "A 503 carries Retry-After and error.code: broker_unavailable (nothing stored), write_indeterminate (the write "
        "may be stored: resend with the ids in error.details.messages, which keep their seqs), idempotency_unknown "
        "(the service cannot tell whether your ids were stored; nothing written; resend the same ids later), "
        "conversation_busy or backends_unavailable (nothing stored). user_id names the conversation's user: recorded "
        "while it has none, and a write naming another user is a 409 user_mismatch (nothing stored). agent_id is "
        "recorded when the conversation is new; several agents may append to one conversation.",
        examples=[
            OpenApiExample(
                "write_indeterminate",
                status_codes=["503"],
                response_only=True,
                value={
                    "error": {
                        "code": "write_indeterminate",
                        "message": "The message broker may or may not have stored the write (its confirm was lost). ...",
                        "details": {"messages": [{"id": "6f1c2a0e-3b7d-4c55-9d0e-0a1b2c3d4e5f", "seq": 1764107410123456}]},
                    }
                },
            )
        ],
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        conversation_id = _new_conversation_id(conversation_id)
        values = serializers.append_values(request.data)
        result = services.message_append(
            tenant=self.tenant,
            conversation_id=conversation_id,
            messages=values["messages"],
            user_id=values["user_id"],
            agent_id=values["agent_id"],
        )
        messages = [content_parts.api_message(message) | {"conversation_id": conversation_id} for message in result.messages]
        return Response(
            {"conversation_id": conversation_id, "messages": messages},
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )

    @extend_schema(
        operation_id="conversations_messages_clear",
        responses={200: serializers.EraseOutSerializer},
        description="Clear the conversation's messages (a chat history's clear()); the conversation, its memory "
        "document and its checkpoints stay.",
    )
    def delete(self, request: Request, conversation_id: str) -> Response:
        result = services.conversation_erase(
            tenant=self.tenant, conversation_id=_conversation_id(conversation_id), messages_only=True
        )
        return Response(
            {"conversation_id": conversation_id, "messages_erased": result.messages, "cache_keys_erased": result.cache_keys}
        )


class LlmWindowView(TenantAPIView):
    @extend_schema(
        parameters=[serializers.LlmWindowQuerySerializer],
        responses=serializers.LlmWindowOutSerializer,
        description="get_window_for_llm: the newest messages in an LLM format, starting at a turn.",
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        query = serializers.LlmWindowQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        format = query.validated_data["format"]
        window = selectors.conversation_llm_window(
            tenant=self.tenant,
            conversation_id=_conversation_id(conversation_id),
            limit=query.validated_data.get("limit") or self.tenant.setting("MEMORY_MAX_TURNS_PROMPT"),
            format=format,
        )
        return Response(
            {
                "conversation_id": conversation_id,
                "format": format,
                "messages": window.messages,
                "count": len(window.messages),
                "source": window.source,
            }
        )


class MessageDetailView(TenantAPIView):
    @extend_schema(responses=serializers.MessageOutSerializer)
    def get(self, request: Request, conversation_id: str, message_id: str) -> Response:
        message = selectors.message_get(
            tenant=self.tenant, conversation_id=_conversation_id(conversation_id), message_id=message_id
        )
        return Response(content_parts.api_message(message) | {"conversation_id": conversation_id})


CONVERSATION_ROUTES = ("memory", "messages", "window", "context", "chat", "checkpoints", "search", "summaries")


class SlashedConversationIdView(TenantAPIView):
    """Any conversation route whose id holds a ``/`` (sent as ``%2F``, which the server decodes into
    the path, so no route matches): a 400 naming the characters an id may hold, not a 404 page."""

    @extend_schema(exclude=True)
    def refuse(self, request: Request, conversation_id: str, rest: str | None = None) -> Response:
        raise ValidationError(
            {
                "conversation_id": f"A conversation id cannot contain '/' (got {conversation_id!r}). "
                f"{serializers.CONVERSATION_ID_RULE} If the part after the id was meant as a route, the routes of a "
                f"conversation are {', '.join(f'{route}/' for route in CONVERSATION_ROUTES)}."
            }
        )

    get = post = put = patch = delete = refuse


class ApiRootView(APIView):
    """What the API offers, for a person exploring it; every other endpoint needs an API key."""

    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        base = request.build_absolute_uri("/api/")
        return Response(
            {
                "version": "v1",
                "auth": "Authorization: Api-Key <key>",
                "conversations": f"{base}v1/conversations/",
                "status": f"{base}v1/status/",
                "usage": f"{base}v1/usage/",
                "docs": f"{base}docs/",
                "schema": f"{base}schema/",
            }
        )


class StatusView(TenantAPIView):
    """Status by role. A tenant's key sees whether each backend answers and its own figures only; the
    deployment's figures (queue depths, every tenant's cache and fallback counters, the backends'
    error texts) need the metrics token (``Authorization: Bearer <MEMORY_METRICS_TOKEN>``) or a
    superuser's admin session; a staff user bound to a tenant sees that tenant's, as its key would."""

    authentication_classes = [
        authentication.TenantApiKeyAuthentication,
        authentication.MetricsTokenAuthentication,
        authentication.StaffSessionAuthentication,
    ]
    permission_classes = [authentication.IsTenantOrOperator]

    @extend_schema(
        responses={200: serializers.StatusOutSerializer},
        description='With a tenant\'s API key: scope "tenant", whether the database, cache and broker answer, and '
        "the tenant's own cache figures and conversations awaiting a cache repair. With the metrics token "
        '(Authorization: Bearer) or a superuser\'s admin session: scope "deployment", with latencies, error texts, '
        "queue depths and every tenant's figures.",
    )
    def get(self, request: Request) -> Response:
        if isinstance(request.user, authentication.OperatorPrincipal):
            return Response(selectors.backend_status())
        return Response(selectors.tenant_status(tenant=self.tenant))
