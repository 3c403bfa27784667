"""Hostile input: every request below is answered with a 4xx whose error names the problem, and
nothing is written: no row of the tenant in any table, no cache key under its prefix, no task in
either queue.

What other files already hold is not repeated here: the MEMORY_MAX_* bounds and a first set of wrong
types (tests/conversations/test_limits.py), wrong, revoked and expired keys (tests/tenants/test_auth.py),
and another tenant's ids, message ids included, on every route (tests/security/test_isolation_api.py).

Every test takes ``no_worker`` so that a task published by mistake would still be in the queue.
"""

import json
import types
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.core.cache import cache as django_cache
from django.utils import timezone
from django_redis import get_redis_connection
from rest_framework.test import APIClient

from conversations.api.parsers import MAX_JSON_DEPTH
from conversations.models import Conversation, Message
from memoryproject.celery import app as celery_app
from tenants import authentication
from tenants import services as tenant_services
from tenants.models import Tenant, TenantApiKey
from tests.conftest import run_tasks, take_queued_tasks

CONVERSATIONS = "/api/v1/conversations/"
CONVERSATION = "/api/v1/conversations/c1/"
MESSAGES = "/api/v1/conversations/c1/messages/"
MEMORY = "/api/v1/conversations/c1/memory/"
CONTEXT = "/api/v1/conversations/c1/context/"
CHECKPOINTS = "/api/v1/conversations/c1/checkpoints/"
FACTS = "/api/v1/users/u1/facts/"


@pytest.fixture(autouse=True)
def queues_exist(no_worker: None) -> None:
    """No worker runs, and both test queues exist, so that anything published stays to be seen."""
    with celery_app.connection_for_write() as broker:
        for queue in (settings.MEMORY_QUEUE, settings.MEMORY_DERIVED_QUEUE):
            celery_app.amqp.queues[queue](broker.default_channel).declare()


def tenant_rows(tenant: Tenant) -> dict[str, int]:
    """Rows of the tenant in every table with a tenant column (found from the models)."""
    counts = {}
    for model in apps.get_models():
        if not any(field.name == "tenant" for field in model._meta.fields):
            continue
        manager = model._default_manager
        rows = manager.for_tenant(tenant) if hasattr(manager, "for_tenant") else manager.filter(tenant=tenant)
        counts[model._meta.label] = rows.count()
    return counts


def cache_entries(tenant: Tenant) -> dict[bytes, bytes | None]:
    redis = get_redis_connection("default")
    return {key: redis.dump(key) for key in redis.scan_iter(match=f"{tenant.slug}:*")}


@contextmanager
def nothing_written(tenant: Tenant) -> Iterator[None]:
    rows, entries = tenant_rows(tenant), cache_entries(tenant)
    yield
    assert tenant_rows(tenant) == rows
    assert cache_entries(tenant) == entries
    assert take_queued_tasks() == []
    assert take_queued_tasks(settings.MEMORY_DERIVED_QUEUE) == []


def send(client: APIClient, method: str, url: str, body: bytes, content_type: str = "application/json", **extra: str) -> Any:
    return client.generic(method, url, body, content_type=content_type, **extra)


def refused(answer: Any, status: int, code: str, *naming: str) -> bool:
    """The answer is a JSON error of this status and code whose message holds every ``naming``."""
    assert answer.status_code == status, answer.content
    assert answer["Content-Type"] == "application/json"
    error = answer.json()["error"]
    assert error["code"] == code, error
    assert all(name in error["message"] for name in naming), error["message"]
    return True


def nested(levels: int) -> str:
    """A JSON object ``levels`` levels deep: {"a": {"a": ... 1}}."""
    return '{"a":' * levels + "1" + "}" * levels


# --- Deeply nested and huge bodies --------------------------------------------------------------------

# Each body nests one JSON value of the route's own shape; %s is that value.
WRITE_ROUTES = [
    pytest.param("POST", MESSAGES, '{"role":"user","content":"hi","metadata":%s}', id="message metadata"),
    pytest.param("POST", MESSAGES, '{"messages":[{"role":"user","content":"hi","metadata":%s}]}', id="batch metadata"),
    pytest.param("PUT", MEMORY, '{"messages":[%s]}', id="memory document"),
    pytest.param("POST", CONVERSATIONS, '{"conversation_id":"c1","metadata":%s}', id="conversation metadata"),
    pytest.param("POST", CHECKPOINTS, '{"state":%s}', id="checkpoint state"),
    pytest.param("POST", FACTS, '{"facts":%s}', id="facts"),
    pytest.param("POST", CONTEXT, '{"query":"hi","format":%s}', id="context"),
]


@pytest.mark.parametrize(("method", "url", "template"), WRITE_ROUTES)
def test_json_ten_thousand_levels_deep_is_a_400_naming_the_depth_limit(api, tenant, method, url, template):
    with nothing_written(tenant):
        answer = send(api, method, url, (template % nested(10_000)).encode())

    assert refused(answer, 400, "parse_error", "nested", f"the limit is {MAX_JSON_DEPTH}")


def test_json_one_level_past_the_depth_limit_is_refused_too(api, tenant):
    # The body is level 1 and the metadata object level 2: the deepest object is one past the limit.
    with nothing_written(tenant):
        answer = send(api, "POST", MESSAGES, b'{"role":"user","content":"hi","metadata":%s}' % nested(MAX_JSON_DEPTH).encode())

    assert refused(answer, 400, "parse_error", "nested")


def test_metadata_nested_up_to_the_depth_limit_is_accepted_and_persisted(api, tenant):
    # The body is level 1 and the metadata object level 2: the deepest object is at the limit.
    body = '{"role":"user","content":"deep","metadata":' + nested(MAX_JSON_DEPTH - 1) + "}"

    answer = send(api, "POST", MESSAGES, body.encode())
    run_tasks(take_queued_tasks())

    assert answer.status_code == 201, answer.content
    stored = Message.objects.for_tenant(tenant).get()
    depth, value = 0, stored.metadata
    while isinstance(value, dict):
        depth, value = depth + 1, value["a"]
    assert depth == MAX_JSON_DEPTH - 1


def test_a_number_of_five_thousand_digits_is_a_400_not_minutes_of_conversion(api, tenant):
    with nothing_written(tenant):
        answer = send(api, "POST", MESSAGES, b'{"role":"user","content":"hi","metadata":{"n":%s}}' % (b"9" * 5000))

    assert refused(answer, 400, "parse_error")


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("POST", MESSAGES),
        ("PUT", MEMORY),
        ("POST", CONVERSATIONS),
        ("PATCH", CONVERSATION),
        ("POST", CHECKPOINTS),
        ("POST", FACTS),
    ],
)
def test_a_body_one_byte_over_the_upload_limit_is_413_before_it_is_read(api, tenant, method, url):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    prefix, suffix = b'{"role":"user","content":"', b'"}'
    body = prefix + b"x" * (limit + 1 - len(prefix) - len(suffix)) + suffix
    assert len(body) == limit + 1

    with nothing_written(tenant):
        answer = send(api, method, url, body)

    assert refused(answer, 413, "payload_too_large", "DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE", str(limit))


@pytest.mark.parametrize(
    ("content_length", "status", "code"),
    [
        pytest.param("99999999999999999999", 413, "payload_too_large", id="claims more than the limit"),
        pytest.param("10", 400, "parse_error", id="claims less than it sends"),
        pytest.param("-1", 400, "parse_error", id="negative"),
        pytest.param("lots", 400, "validation_error", id="not a number"),
    ],
)
def test_a_lying_content_length_is_a_4xx(api, tenant, content_length, status, code):
    with nothing_written(tenant):
        answer = send(api, "POST", MESSAGES, b'{"role":"user","content":"hello"}', CONTENT_LENGTH=content_length)

    assert refused(answer, status, code)


# --- Bodies that are not JSON, or not UTF-8 --------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"role":"user","content":"\xff\xfe"}', id="bytes that are never UTF-8"),
        pytest.param(b'{"role":"user","content":"caf\xe9"}', id="latin-1"),
        pytest.param(b'{"role":"user","content":"\xc0\xaf"}', id="overlong encoding"),
        pytest.param(b'{"role":"user","content":"\xed\xa0\x80"}', id="an encoded surrogate"),
        pytest.param(b'{"role":"user","content":"\xe2\x82"}', id="truncated sequence"),
        pytest.param('{"role":"user","content":"hi"}'.encode("utf-16"), id="UTF-16"),
    ],
)
def test_a_body_that_is_not_utf8_is_a_400_parse_error(api, tenant, body):
    with nothing_written(tenant):
        answer = send(api, "POST", MESSAGES, body)

    assert refused(answer, 400, "parse_error", "utf-8")


@pytest.mark.parametrize("charset", ["zlib", "bz2", "base64"])
def test_a_charset_that_is_a_compression_or_binary_codec_is_refused_not_decoded(api, tenant, charset):
    with nothing_written(tenant):
        answer = send(
            api, "POST", MESSAGES, b'{"role":"user","content":"hi"}', content_type=f"application/json; charset={charset}"
        )

    assert refused(answer, 400, "parse_error", charset)


@pytest.mark.parametrize(
    "body", [b"hello", b"<message role='user'>hi</message>", b"{'role': 'user', 'content': 'hi'}", b'{"role":"user",}']
)
def test_a_body_that_is_not_json_is_a_400_parse_error(api, tenant, body):
    with nothing_written(tenant):
        answer = send(api, "POST", MESSAGES, body)

    assert refused(answer, 400, "parse_error", "JSON parse error")


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", ""]
)
def test_a_body_of_another_media_type_is_a_415_naming_it(api, tenant, content_type):
    with nothing_written(tenant):
        answer = send(api, "POST", MESSAGES, b"role=user&content=hi", content_type=content_type)

    assert refused(answer, 415, "unsupported_media_type", f'"{content_type}"')


@pytest.mark.parametrize("body", [b"[]", b'"a message"', b"42", b"null"])
def test_a_body_that_is_json_but_not_an_object_is_a_400(api, tenant, body):
    with nothing_written(tenant):
        answer = send(api, "POST", MESSAGES, body)

    assert refused(answer, 400, "validation_error")


# --- Wrong roles and wrong types ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url", "body", "naming"),
    [
        pytest.param("POST", MESSAGES, {"role": "User", "content": "hi"}, "role", id="role in another case"),
        pytest.param("POST", MESSAGES, {"role": "", "content": "hi"}, "role", id="empty role"),
        pytest.param("POST", MESSAGES, {"role": 1, "content": "hi"}, "role", id="role a number"),
        pytest.param(
            "POST", MESSAGES, {"messages": [{"role": "function", "content": "hi"}]}, "role", id="unknown role in a batch"
        ),
        pytest.param("POST", MESSAGES, {"role": "user", "content": 42}, "content", id="content a number"),
        pytest.param("POST", MESSAGES, {"role": "user", "content": 4.2}, "content", id="content a float"),
        pytest.param("POST", MESSAGES, {"role": "user", "content": True}, "content", id="content a boolean"),
        pytest.param("POST", MESSAGES, {"messages": [{"role": "user", "content": 7}]}, "content", id="batch content a number"),
        pytest.param("POST", MESSAGES, {"role": "user", "content": "hi", "metadata": "note"}, "metadata", id="metadata a string"),
        pytest.param(
            "POST",
            MESSAGES,
            {"messages": [{"role": "user", "content": "hi", "metadata": [1]}]},
            "metadata",
            id="batch metadata a list",
        ),
        pytest.param("POST", MESSAGES, {"messages": {"role": "user", "content": "hi"}}, "messages", id="messages an object"),
        pytest.param("POST", MESSAGES, {"messages": "hi"}, "messages", id="messages a string"),
        pytest.param("POST", MESSAGES, {"messages": [1, 2]}, "messages", id="messages of numbers"),
        pytest.param(
            "POST", MESSAGES, {"role": "user", "content": "hi", "user_id": {"id": 1}}, "user_id", id="user_id an object"
        ),
        pytest.param(
            "POST", MESSAGES, {"role": "user", "content": "hi", "created_at": 1700000000}, "created_at", id="created_at a number"
        ),
        pytest.param(
            "POST", CONVERSATIONS, {"conversation_id": "c1", "metadata": ["a"]}, "metadata", id="conversation metadata a list"
        ),
        pytest.param("POST", CONVERSATIONS, {"conversation_id": ["c1"]}, "conversation_id", id="conversation id a list"),
        pytest.param("PATCH", CONVERSATION, {"archived": "maybe"}, "archived", id="archived not a boolean"),
        pytest.param("PUT", MEMORY, {"messages": {"role": "user"}}, "messages", id="memory messages an object"),
        pytest.param("PUT", MEMORY, {"metadata": ["a"]}, "metadata", id="memory metadata a list"),
        pytest.param("POST", CONTEXT, {"max_tokens": "lots"}, "max_tokens", id="max_tokens a string"),
        pytest.param("POST", FACTS, {"facts": ["a", "b"]}, "facts", id="facts a list"),
        pytest.param("POST", CHECKPOINTS, {"state": ["a"]}, "state", id="checkpoint state a list"),
    ],
)
def test_a_wrong_role_or_type_is_a_400_naming_the_field(api, tenant, method, url, body, naming):
    if method == "PATCH":
        Conversation.objects.for_tenant(tenant).create(tenant=tenant, conversation_id="c1")

    with nothing_written(tenant):
        answer = getattr(api, method.lower())(url, body, format="json")

    assert refused(answer, 400, "validation_error", naming)


# --- NUL characters and lone surrogates -------------------------------------------------------------
# PostgreSQL stores neither a NUL nor half a surrogate pair, and UTF-8 cannot encode the latter:
# accepted, they would make a write no worker can ever persist, or crash the size checks.

NUL, SURROGATE = "nul \u0000 here", "half \ud800 a pair"


@pytest.mark.parametrize("text", [NUL, SURROGATE], ids=["NUL", "lone surrogate"])
@pytest.mark.parametrize(
    ("method", "url", "body", "naming"),
    [
        pytest.param(
            "POST",
            MESSAGES,
            lambda text: {"role": "user", "content": "hi", "metadata": {"k": text}},
            "metadata",
            id="in a metadata value",
        ),
        pytest.param(
            "POST",
            MESSAGES,
            lambda text: {"role": "user", "content": "hi", "metadata": {text: 1}},
            "metadata",
            id="in a metadata key",
        ),
        pytest.param(
            "POST",
            MESSAGES,
            lambda text: {"messages": [{"role": "user", "content": "hi", "metadata": {"deep": [{"k": text}]}}]},
            "metadata",
            id="deep in a batch item's metadata",
        ),
        pytest.param(
            "POST",
            MESSAGES,
            lambda text: {"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "1", "arguments": text}]}]},
            "metadata",
            id="in tool calls",
        ),
        pytest.param("POST", MESSAGES, lambda text: {"role": "user", "content": text}, "content", id="in content"),
        # An error quoting the value back must still render.
        pytest.param("POST", MESSAGES, lambda text: {"role": "user" + text, "content": "hi"}, "role", id="in a role"),
        pytest.param("POST", CONTEXT, lambda text: {"format": "openai" + text}, "format", id="in a context format"),
        pytest.param(
            "POST", MESSAGES, lambda text: {"role": "user", "content": "hi", "user_id": text}, "user_id", id="in user_id"
        ),
        pytest.param(
            "POST",
            CONVERSATIONS,
            lambda text: {"conversation_id": "c1", "metadata": {"k": text}},
            "metadata",
            id="in conversation metadata",
        ),
        pytest.param("PATCH", CONVERSATION, lambda text: {"metadata": {"k": text}}, "metadata", id="in a metadata change"),
        pytest.param(
            "PUT", MEMORY, lambda text: {"messages": [{"role": "user", "content": text}]}, "messages", id="in the memory messages"
        ),
        pytest.param("PUT", MEMORY, lambda text: {"metadata": {text: "v"}}, "metadata", id="in the memory metadata"),
        pytest.param("POST", CONTEXT, lambda text: {"query": text}, "query", id="in a context query"),
        pytest.param("POST", FACTS, lambda text: {"facts": {"k": text}}, "facts", id="in a fact value"),
    ],
)
def test_nul_and_lone_surrogates_in_json_are_a_400_naming_the_field(api, tenant, method, url, body, naming, text):
    if method == "PATCH":
        Conversation.objects.for_tenant(tenant).create(tenant=tenant, conversation_id="c1")

    # Escaped (ensure_ascii): the client sends the JSON text "\ud800", which is valid UTF-8.
    with nothing_written(tenant):
        answer = send(api, method, url, json.dumps(body(text)).encode())

    assert refused(answer, 400, "validation_error", naming)


@pytest.mark.parametrize(
    ("method", "url", "status", "code"),
    [
        ("GET", "/api/v1/conversations/c%00/", 404, "not_found"),
        ("DELETE", "/api/v1/conversations/c%00/", 404, "not_found"),
        ("GET", "/api/v1/conversations/c1/messages/a%00b/", 404, "not_found"),
        ("DELETE", "/api/v1/users/u%001/", 404, "not_found"),
        ("GET", "/api/v1/users/u%001/facts/", 404, "not_found"),
        ("GET", "/api/v1/users/u%001/search/?q=hello", 404, "not_found"),
        ("DELETE", "/api/v1/users/u1/facts/k%00/", 404, "not_found"),
        ("GET", "/api/v1/conversations/c1/checkpoints/a%00b/", 404, "not_found"),
        ("PUT", "/api/v1/conversations/c%00/memory/", 400, "validation_error"),
        ("POST", "/api/v1/conversations/c%00/messages/", 400, "validation_error"),
        ("PUT", "/api/v1/users/u1/facts/k%00/", 400, "validation_error"),
    ],
)
def test_a_nul_in_a_path_id_names_nothing_to_a_read_and_is_a_400_to_a_write(api, tenant, method, url, status, code):
    body = {"value": "v", "role": "user", "content": "hi", "messages": []}

    with nothing_written(tenant):
        answer = getattr(api, method.lower())(url, body if method in ("PUT", "POST") else None, format="json")

    assert refused(answer, status, code, "NUL")


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/api/v1/conversations/?user_id=a%00b", "user_id"),
        ("/api/v1/conversations/?agent_id=%00", "agent_id"),
        ("/api/v1/conversations/c1/messages/?role=user%00", "role"),
        ("/api/v1/conversations/c1/search/?q=a%00b", "q"),
        ("/api/v1/users/u1/search/?q=hello&mode=%00", "mode"),
    ],
)
def test_a_nul_in_a_query_parameter_is_a_400_naming_it(api, tenant, url, parameter):
    with nothing_written(tenant):
        answer = api.get(url)

    assert refused(answer, 400, "validation_error", parameter, "NUL")


# --- Keys ---------------------------------------------------------------------------------------------


def client_with(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def test_a_key_that_expires_while_its_record_is_cached_is_refused_on_the_next_request(tenant, monkeypatch):
    api_key, key = tenant_services.api_key_create(tenant=tenant, name="k", expiry_date=timezone.now() + timedelta(hours=1))
    client = client_with(key)
    assert client.get(CONVERSATIONS).status_code == 200
    assert django_cache.get(tenant_services.auth_cache_key(api_key.prefix)) is not None

    later = timezone.now() + timedelta(hours=1, seconds=1)
    monkeypatch.setattr(authentication, "timezone", types.SimpleNamespace(now=lambda: later))

    with nothing_written(tenant):
        answer = client.post(MESSAGES, {"role": "user", "content": "hi"}, format="json")

    assert refused(answer, 401, "authentication_failed", "expired")


@pytest.mark.parametrize(
    "header",
    [
        "Api-Key",
        "Api-Key ",
        "Api-Key a.b.c",
        "Api-Key " + "x" * 10_000,
        "Api-Key " + "p" * 500 + "." + "s" * 500,
        "Api-Key caf\u00e9.secret",
        "Bearer abc.def",
        "Basic dXNlcjpwYXNz",
        "Api-Key  spaced  out",
    ],
)
def test_a_malformed_authorization_header_is_a_401_never_a_crash(tenant, header):
    with nothing_written(tenant):
        answer = APIClient().post(MESSAGES, {"role": "user", "content": "hi"}, format="json", HTTP_AUTHORIZATION=header)

    assert answer.status_code == 401, answer.content
    assert answer.json()["error"]["code"] in ("not_authenticated", "authentication_failed")


def test_a_nul_in_the_api_key_is_a_401(tenant):
    with nothing_written(tenant):
        answer = APIClient().get(CONVERSATIONS, HTTP_AUTHORIZATION="Api-Key \u0000.secret")

    assert refused(answer, 401, "authentication_failed")


def test_a_deleted_key_is_refused_on_the_next_request_though_it_was_cached(tenant):
    api_key, key = tenant_services.api_key_create(tenant=tenant, name="k")
    client = client_with(key)
    assert client.get(CONVERSATIONS).status_code == 200

    TenantApiKey.objects.filter(pk=api_key.pk).delete()

    assert client.get(CONVERSATIONS).status_code == 401


def test_the_keys_of_a_deleted_tenant_are_refused_on_the_next_request(db):
    doomed = tenant_services.tenant_create(slug="doomed")
    _, key = tenant_services.api_key_create(tenant=doomed, name="k")
    client = client_with(key)
    assert client.get(CONVERSATIONS).status_code == 200

    Tenant.objects.filter(pk=doomed.pk).delete()

    assert client.get(CONVERSATIONS).status_code == 401


# --- Mass assignment -------------------------------------------------------------------------------
# Fields the server owns are ignored or refused; they never move a row to another tenant, another
# conversation or another place in the order.

SERVER_OWNED = {
    "tenant": None,  # filled with globex's id in the test
    "tenant_id": None,
    "seq": 1_000_000,
    "persisted_at": "2001-01-01T00:00:00Z",
    "token_count": 999_999,
    "archived": True,
    "message_count": 77,
    "last_seq": 88,
    "updated_at": "2001-01-01T00:00:00Z",
    "pk": 1,
}


def server_owned(other_tenant: Tenant) -> dict[str, Any]:
    return SERVER_OWNED | {"tenant": other_tenant.pk, "tenant_id": other_tenant.pk}


def test_a_message_sent_with_server_owned_fields_is_acmes_own_with_the_servers_values(api, tenant, other_tenant):
    globex_rows = tenant_rows(other_tenant)
    body = {"role": "user", "content": "one two three", "conversation_id": "elsewhere"} | server_owned(other_tenant)

    answer = api.post(MESSAGES, body, format="json")
    run_tasks(take_queued_tasks())

    assert answer.status_code == 201, answer.content
    [sent] = answer.json()["messages"]
    stored = Message.objects.for_tenant(tenant).select_related("conversation").get()
    assert (stored.conversation.conversation_id, stored.seq, stored.archived) == ("c1", sent["seq"], False)
    assert stored.seq != 1_000_000
    assert stored.token_count == sent["token_count"] == 3
    assert stored.persisted_at.year > 2001
    assert not Conversation.objects.for_tenant(tenant).filter(conversation_id="elsewhere").exists()
    assert tenant_rows(other_tenant) == globex_rows


def test_a_batch_item_with_server_owned_fields_gets_the_servers_order(api, tenant, other_tenant):
    items = [
        {"role": "user", "content": "first"} | server_owned(other_tenant),
        {"role": "assistant", "content": "second", "seq": 1},
    ]

    answer = api.post(MESSAGES, {"messages": items}, format="json")
    run_tasks(take_queued_tasks())

    assert answer.status_code == 201, answer.content
    seqs = [message["seq"] for message in answer.json()["messages"]]
    assert seqs[0] < seqs[1]
    assert 1_000_000 not in seqs
    stored = list(Message.objects.for_tenant(tenant).order_by("seq").values_list("content", "seq"))
    assert stored == [("first", seqs[0]), ("second", seqs[1])]
    assert Message.objects.for_tenant(other_tenant).count() == 0


def test_a_conversation_created_with_server_owned_fields_is_acmes_own_and_starts_empty(api, tenant, other_tenant):
    globex_rows = tenant_rows(other_tenant)

    answer = api.post(CONVERSATIONS, {"conversation_id": "c1"} | server_owned(other_tenant), format="json")

    assert answer.status_code == 201, answer.content
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")
    assert (conversation.archived, conversation.message_count, conversation.token_count, conversation.last_seq) == (
        False,
        0,
        0,
        0,
    )
    assert conversation.updated_at.year > 2001
    assert tenant_rows(other_tenant) == globex_rows


def test_changing_a_server_owned_field_of_a_conversation_is_a_400_naming_it(api, tenant, other_tenant):
    Conversation.objects.for_tenant(tenant).create(tenant=tenant, conversation_id="c1")

    with nothing_written(tenant):
        answer = api.patch(CONVERSATION, {"archived": True, "tenant": other_tenant.pk, "last_seq": 5}, format="json")

    assert refused(answer, 400, "validation_error", "tenant", "last_seq")


def test_a_memory_document_cannot_name_another_tenant_or_conversation(api, tenant, other_tenant):
    document = {"messages": [], "metadata": {"tenant_id": other_tenant.slug, "conversation_id": "elsewhere", "note": "kept"}}

    answer = api.put(MEMORY, document, format="json")
    run_tasks(take_queued_tasks())

    assert answer.status_code == 200, answer.content
    stored = api.get(MEMORY).json()["metadata"]
    assert (stored["tenant_id"], stored["conversation_id"], stored["note"]) == (tenant.slug, "c1", "kept")
    assert not Conversation.objects.for_tenant(tenant).filter(conversation_id="elsewhere").exists()
    assert not Conversation.objects.for_tenant(other_tenant).exists()
