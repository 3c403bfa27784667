"""``/api/v1/status/`` by role: a tenant's key sees whether the backends answer and its own figures;
the deployment's figures and the backends' error texts need the metrics token or a superuser's session."""

import json
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import override_settings
from rest_framework.test import APIClient

from conversations.models import CacheRepair
from tests.conversations.test_api import redis_unreachable
from tests.factories import message_payload

STATUS = "/api/v1/status/"
SCRAPER = {"HTTP_AUTHORIZATION": "Bearer test-metrics-token"}
# What only an operator may read: the queues and their depths, every tenant's fallbacks, latencies.
DEPLOYMENT_ONLY = ("queue", "queue_depth", "derived_queue", "consumers", "fallbacks", "latency_ms", "error")


def keys_of(value: Any) -> set[str]:
    """Every key anywhere in a JSON document."""
    if isinstance(value, dict):
        return set(value) | set().union(*(keys_of(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(keys_of(item) for item in value))
    return set()


def read_messages(api: APIClient, conversation_id: str, times: int) -> None:
    for _ in range(times):
        assert api.get(f"/api/v1/conversations/{conversation_id}/messages/").status_code in (200, 404)


def test_a_tenants_key_sees_only_up_or_down_and_its_own_figures(api, other_api, tenant, other_tenant, no_worker):
    api.post("/api/v1/conversations/c1/messages/", message_payload(), format="json")
    other_api.post("/api/v1/conversations/g1/messages/", message_payload(), format="json")
    read_messages(other_api, "g1", 5)  # globex's lookups
    CacheRepair.objects.for_tenant(other_tenant).create(tenant=other_tenant, conversation_id="g1")

    answer = api.get(STATUS)

    assert answer.status_code == 200, answer.content
    status = answer.json()
    assert status["scope"] == "tenant"
    assert status["tenant"] == "acme"
    assert status["ok"] is True
    assert status["database"] == {"ok": True}
    assert status["cache"] == {"ok": True}
    assert status["broker"] == {"ok": True}
    assert not keys_of(status) & set(DEPLOYMENT_ONLY), status
    assert status["flags"]["fallback_sessions"] == 0  # globex's repair is not acme's
    assert settings.MEMORY_QUEUE not in answer.content.decode()


def test_each_tenant_counts_only_its_own_cache_lookups(api, other_api, no_worker):
    api.post("/api/v1/conversations/c1/messages/", message_payload(), format="json")
    other_api.post("/api/v1/conversations/g1/messages/", message_payload(), format="json")
    acme_before = api.get(STATUS).json()["metrics"]
    globex_before = other_api.get(STATUS).json()["metrics"]

    read_messages(other_api, "g1", 4)

    acme_after = api.get(STATUS).json()["metrics"]
    globex_after = other_api.get(STATUS).json()["metrics"]
    assert acme_after["cache_hits"] + acme_after["cache_misses"] == acme_before["cache_hits"] + acme_before["cache_misses"]
    assert globex_after["cache_hits"] + globex_after["cache_misses"] == (
        globex_before["cache_hits"] + globex_before["cache_misses"] + 4
    )


def test_a_tenant_counts_its_own_conversations_awaiting_a_cache_repair(api, tenant, other_tenant):
    CacheRepair.objects.for_tenant(tenant).create(tenant=tenant, conversation_id="c1")
    CacheRepair.objects.for_tenant(other_tenant).create(tenant=other_tenant, conversation_id="g1")
    CacheRepair.objects.for_tenant(other_tenant).create(tenant=other_tenant, conversation_id="g2")

    assert api.get(STATUS).json()["flags"]["fallback_sessions"] == 1


def test_during_an_outage_a_tenant_learns_the_cache_is_down_but_not_the_error(api, tenant):
    with redis_unreachable():
        answer = api.get(STATUS)

    assert answer.status_code == 200
    status = answer.json()
    assert status["cache"] == {"ok": False}
    assert status["ok"] is False
    assert status["flags"]["degraded"] is True
    assert "error" not in keys_of(status)
    assert "127.0.0.1" not in answer.content.decode()


def test_the_metrics_token_sees_the_whole_deployment(client, api, other_api, tenant, other_tenant, no_worker):
    api.post("/api/v1/conversations/c1/messages/", message_payload(), format="json")
    other_api.post("/api/v1/conversations/g1/messages/", message_payload(), format="json")
    CacheRepair.objects.for_tenant(tenant).create(tenant=tenant, conversation_id="c1")
    CacheRepair.objects.for_tenant(other_tenant).create(tenant=other_tenant, conversation_id="g1")

    answer = client.get(STATUS, **SCRAPER)

    assert answer.status_code == 200, answer.content
    status = answer.json()
    assert status["scope"] == "deployment"
    assert status["broker"]["queue"] == settings.MEMORY_QUEUE
    assert status["broker"]["queue_depth"] == 2
    assert "fallbacks" in status["metrics"]
    assert "latency_ms" in status["database"]
    assert status["flags"]["fallback_sessions"] == 2


def test_the_metrics_token_sees_the_error_text_during_an_outage(client, db):
    with redis_unreachable():
        answer = client.get(STATUS, **SCRAPER)

    assert answer.status_code == 200
    assert answer.json()["cache"]["ok"] is False
    assert answer.json()["cache"]["error"]


@pytest.mark.parametrize(
    "authorization",
    ["Bearer not-the-token", "Bearer ", "Bearer test-metrics-token-and-more"],
)
def test_a_wrong_bearer_token_is_a_401_json_error(client, db, authorization):
    answer = client.get(STATUS, HTTP_AUTHORIZATION=authorization)

    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "authentication_failed"


@override_settings(MEMORY_METRICS_TOKEN="")
def test_with_no_metrics_token_set_no_bearer_is_accepted(client, db):
    answer = client.get(STATUS, HTTP_AUTHORIZATION="Bearer ")

    assert answer.status_code == 401


def test_anonymous_callers_are_refused(client, db):
    answer = client.get(STATUS)

    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "not_authenticated"


def test_a_superusers_admin_session_sees_the_whole_deployment(client, db):
    superuser = get_user_model().objects.create_superuser(username="root", password="a-long-password-1")
    client.force_login(superuser)

    answer = client.get(STATUS)

    assert answer.status_code == 200, answer.content
    assert answer.json()["scope"] == "deployment"
    assert "queue_depth" in answer.json()["broker"]


def test_a_staff_user_bound_to_a_tenant_sees_only_that_tenants_status(operator_client, tenant, other_tenant):
    CacheRepair.objects.for_tenant(other_tenant).create(tenant=other_tenant, conversation_id="g1")

    answer = operator_client.get(STATUS)

    assert answer.status_code == 200, answer.content
    status = answer.json()
    assert status["scope"] == "tenant"
    assert status["tenant"] == "acme"
    assert not keys_of(status) & set(DEPLOYMENT_ONLY)
    assert status["flags"]["fallback_sessions"] == 0


def test_a_staff_user_bound_to_no_tenant_sees_nothing(client, db):
    staff = get_user_model().objects.create_user(username="loose", password="a-long-password-1", is_staff=True)
    client.force_login(staff)

    assert client.get(STATUS).status_code in (401, 403)


def test_the_schema_documents_both_shapes(client, db):
    schema = json.loads(client.get("/api/schema/", {"format": "json"}).content)

    documented = schema["paths"][STATUS]["get"]
    assert "200" in documented["responses"]
    assert "metrics token" in documented["description"]
