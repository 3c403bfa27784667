"""API keys (``Authorization: Api-Key <key>``): hashed at rest, cached in Redis, and refused on the very
next request once revoked, expired or their tenant deactivated."""

import copy
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.cache import cache as django_cache
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from conversations import cache
from conversations.models import Conversation
from tenants import services
from tenants.models import TenantApiKey

CONVERSATIONS = "/api/v1/conversations/"


def client_with(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def refused(answer, *, says: str = "") -> bool:
    return (
        answer.status_code == 401
        and answer.json()["error"]["code"] == "authentication_failed"
        and says in answer.json()["error"]["message"]
    )


def redis_unreachable() -> override_settings:
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["LOCATION"] = "redis://127.0.0.1:1/0"
    return override_settings(CACHES=caches)


def test_a_valid_key_acts_for_its_tenant(tenant):
    _, key = services.api_key_create(tenant=tenant, name="k")

    answer = client_with(key).post(CONVERSATIONS, {"conversation_id": "c1"}, format="json")

    assert answer.status_code == 201, answer.content
    assert Conversation.objects.for_tenant(tenant).filter(conversation_id="c1").exists()


@pytest.mark.parametrize(
    "mangle", [lambda key: key[:-1] + ("A" if key[-1] != "A" else "B"), lambda key: "nope.nope", lambda key: "garbage"]
)
def test_a_wrong_key_is_refused_with_401(tenant, mangle):
    _, key = services.api_key_create(tenant=tenant, name="k")

    answer = client_with(mangle(key)).get(CONVERSATIONS)

    assert refused(answer, says="not valid")
    assert answer["WWW-Authenticate"] == "Api-Key"


def test_a_wrong_secret_is_refused_even_when_its_prefix_is_cached(tenant):
    _, key = services.api_key_create(tenant=tenant, name="k")
    assert client_with(key).get(CONVERSATIONS).status_code == 200
    prefix, _, secret = key.partition(".")
    assert django_cache.get(services.auth_cache_key(prefix)) is not None

    answer = client_with(f"{prefix}.{secret[::-1]}").get(CONVERSATIONS)

    assert refused(answer, says="not valid")


def test_a_revoked_key_is_refused_on_the_very_next_request_though_it_was_cached(tenant):
    api_key, key = services.api_key_create(tenant=tenant, name="k")
    client = client_with(key)
    assert client.get(CONVERSATIONS).status_code == 200
    assert django_cache.get(services.auth_cache_key(api_key.prefix)) is not None  # the record is cached

    services.api_key_revoke(api_key=api_key)

    assert refused(client.get(CONVERSATIONS), says="revoked")


def test_revoking_one_key_leaves_the_tenants_other_keys_working(tenant):
    revoked, revoked_key = services.api_key_create(tenant=tenant, name="old")
    _, kept_key = services.api_key_create(tenant=tenant, name="new")

    services.api_key_revoke(api_key=revoked)

    assert refused(client_with(revoked_key).get(CONVERSATIONS))
    assert client_with(kept_key).get(CONVERSATIONS).status_code == 200


def test_an_expired_key_is_refused(tenant):
    _, key = services.api_key_create(tenant=tenant, name="k", expiry_date=timezone.now() - timedelta(minutes=1))

    assert refused(client_with(key).get(CONVERSATIONS), says="expired")


def test_a_key_expiring_later_works(tenant):
    _, key = services.api_key_create(tenant=tenant, name="k", expiry_date=timezone.now() + timedelta(days=1))

    assert client_with(key).get(CONVERSATIONS).status_code == 200


def test_a_key_of_a_deactivated_tenant_is_refused_on_the_next_request_and_works_again_once_reactivated(tenant):
    _, key = services.api_key_create(tenant=tenant, name="k")
    client = client_with(key)
    assert client.get(CONVERSATIONS).status_code == 200

    services.tenant_update(tenant=tenant, active=False)
    while_inactive = client.get(CONVERSATIONS)
    services.tenant_update(tenant=tenant, active=True)

    assert refused(while_inactive)
    assert client.get(CONVERSATIONS).status_code == 200


def test_keys_are_stored_hashed(tenant):
    api_key, key = services.api_key_create(tenant=tenant, name="k")
    _, _, secret = key.partition(".")

    stored = TenantApiKey.objects.filter(pk=api_key.pk).values().get()

    assert all(secret not in str(value) for value in stored.values())
    assert stored["hashed_key"]
    assert stored["hashed_key"] != key
    assert TenantApiKey.objects.is_valid(key)


def test_the_cached_key_record_holds_no_plain_key(tenant):
    api_key, key = services.api_key_create(tenant=tenant, name="k")
    client_with(key).get(CONVERSATIONS)

    record = django_cache.get(services.auth_cache_key(api_key.prefix))

    assert record is not None
    assert key.partition(".")[2] not in str(record)


def test_last_used_at_is_set_after_use(tenant):
    api_key, key = services.api_key_create(tenant=tenant, name="k")
    assert api_key.last_used_at is None
    before = timezone.now()

    client_with(key).get(CONVERSATIONS)

    api_key.refresh_from_db()
    assert api_key.last_used_at is not None
    assert before <= api_key.last_used_at <= timezone.now()


def test_with_redis_unreachable_keys_are_checked_against_postgresql(tenant):
    api_key, key = services.api_key_create(tenant=tenant, name="k")
    revoked, revoked_key = services.api_key_create(tenant=tenant, name="revoked")
    services.api_key_revoke(api_key=revoked)

    with redis_unreachable():
        with pytest.raises(cache.CacheUnavailable):
            cache.ping()
        valid = client_with(key).get(CONVERSATIONS)
        wrong = client_with(key[:-1] + ("A" if key[-1] != "A" else "B")).get(CONVERSATIONS)
        was_revoked = client_with(revoked_key).get(CONVERSATIONS)

    assert valid.status_code == 200, valid.content
    assert refused(wrong)
    assert refused(was_revoked, says="revoked")
    api_key.refresh_from_db()
    assert api_key.last_used_at is not None


def test_a_refused_attempt_does_not_count_as_a_use_of_the_key(tenant):
    api_key, key = services.api_key_create(tenant=tenant, name="k")
    prefix, _, secret = key.partition(".")

    assert refused(client_with(f"{prefix}.{secret[::-1]}").get(CONVERSATIONS))

    api_key.refresh_from_db()
    assert api_key.last_used_at is None
