"""Per-tenant throttling (tenants/throttling.py): MEMORY_RATE_LIMIT requests per MEMORY_RATE_WINDOW
seconds for each tenant, counted atomically in Redis; over it, 429 with Retry-After and the JSON error
``throttled`` naming the limit; Redis down, requests pass.

The throttle's clock is replaced by one the test moves, so windows begin and end on cue.
"""

import copy
import threading
from typing import Any

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import override_settings
from django_redis import get_redis_connection
from prometheus_client import REGISTRY
from rest_framework.test import APIClient

from benchmarks.compare import measure
from tenants import services as tenant_services
from tenants.models import TenantApiKey
from tenants.throttling import TenantRateThrottle, throttle_key
from tests.conftest import client_for, take_queued_tasks

CONVERSATIONS = "/api/v1/conversations/"
WINDOW = 60
# 45.5 seconds into a window: 14.5 seconds are left, so Retry-After is 15.
START = WINDOW * 20_000_000 + 45.5


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock(START)
    monkeypatch.setattr(TenantRateThrottle, "timer", staticmethod(clock))
    return clock


def limit(tenant: Any, requests: int, window: int = WINDOW) -> None:
    tenant_services.tenant_update(tenant=tenant, settings={"MEMORY_RATE_LIMIT": requests, "MEMORY_RATE_WINDOW": window})


def statuses(client: APIClient, count: int) -> list[int]:
    return [client.get(CONVERSATIONS).status_code for _ in range(count)]


def redis_unreachable() -> override_settings:
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["LOCATION"] = "redis://127.0.0.1:1/0"
    return override_settings(CACHES=caches)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_the_request_after_the_limit_is_429_with_retry_after_and_an_error_naming_the_limit(api, tenant, clock):
    limit(tenant, 3)

    assert statuses(api, 3) == [200, 200, 200]
    refused = api.get(CONVERSATIONS)

    assert refused.status_code == 429
    assert refused["Retry-After"] == "15"
    assert refused["Content-Type"] == "application/json"
    error = refused.json()["error"]
    assert error["code"] == "throttled"
    assert "MEMORY_RATE_LIMIT=3" in error["message"]
    assert "MEMORY_RATE_WINDOW=60" in error["message"]
    assert set(error) == {"code", "message", "details"}


def test_a_refused_write_writes_nothing(api, tenant, clock, no_worker):
    limit(tenant, 1)
    assert api.get(CONVERSATIONS).status_code == 200

    refused = api.post("/api/v1/conversations/c1/messages/", {"role": "user", "content": "hi"}, format="json")

    assert refused.status_code == 429
    assert list(get_redis_connection("default").scan_iter(match="acme:*")) == []
    assert take_queued_tasks() == []


def test_another_tenant_is_not_affected_by_a_throttled_one(api, tenant, other_api, other_tenant, clock):
    limit(tenant, 2)
    limit(other_tenant, 2)

    assert statuses(api, 3) == [200, 200, 429]

    assert statuses(other_api, 2) == [200, 200]
    assert other_api.get(CONVERSATIONS).status_code == 429


def test_every_key_of_a_tenant_spends_the_same_budget(api, tenant, clock):
    limit(tenant, 2)
    second_key = client_for(tenant)

    assert api.get(CONVERSATIONS).status_code == 200
    assert second_key.get(CONVERSATIONS).status_code == 200

    assert api.get(CONVERSATIONS).status_code == 429
    assert second_key.get(CONVERSATIONS).status_code == 429


def test_the_budget_comes_back_when_the_window_ends(api, tenant, clock):
    limit(tenant, 2)
    assert statuses(api, 3) == [200, 200, 429]

    clock.now += 14  # still the same window: half a second left
    assert api.get(CONVERSATIONS)["Retry-After"] == "1"

    clock.now += 1  # the next window
    assert statuses(api, 3) == [200, 200, 429]


def test_the_counter_expires_with_its_window(api, tenant, clock):
    limit(tenant, 5)

    api.get(CONVERSATIONS)

    redis = get_redis_connection("default")
    key = throttle_key(tenant_id=tenant.pk, window=WINDOW, number=int(START // WINDOW))
    assert int(redis.get(key)) == 1
    assert 0 < redis.ttl(key) <= WINDOW + 1


def test_a_new_limit_applies_from_the_next_request(api, tenant, clock):
    assert statuses(api, 3) == [200, 200, 200]

    limit(tenant, 3)

    assert api.get(CONVERSATIONS).status_code == 429


def test_a_tenant_limit_of_zero_turns_throttling_off(api, tenant, clock):
    limit(tenant, 0)

    assert set(statuses(api, 20)) == {200}


@pytest.mark.parametrize(
    "overrides",
    [{"MEMORY_RATE_LIMIT": "lots"}, {"MEMORY_RATE_LIMIT": -1}, {"MEMORY_RATE_WINDOW": 1.5}, {"MEMORY_RATE_WINDOW": True}],
)
def test_a_tenant_limit_that_is_not_a_whole_number_is_refused(tenant, overrides):
    with pytest.raises(ValidationError):
        tenant_services.tenant_update(tenant=tenant, settings=overrides)


def test_requests_without_a_key_are_refused_before_they_are_counted(api, tenant, clock):
    limit(tenant, 1)

    assert APIClient().get(CONVERSATIONS).status_code == 401
    assert api.get(CONVERSATIONS).status_code == 200


@pytest.fixture
def acme_at_ten(transactional_db: Any, tenant: Any, clock: Clock) -> Any:
    limit(tenant, 10)
    return tenant


def test_concurrent_requests_are_counted_exactly_once_each(acme_at_ten):
    clients = [client_for(acme_at_ten) for _ in range(4)]
    threads_count = 24
    barrier = threading.Barrier(threads_count)
    answers: list[int] = []
    lock = threading.Lock()

    def fire(client: APIClient) -> None:
        try:
            barrier.wait(timeout=30)
            status = client.get(CONVERSATIONS).status_code
            with lock:
                answers.append(status)
        finally:
            connection.close()

    threads = [threading.Thread(target=fire, args=(clients[index % len(clients)],)) for index in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(answers) == threads_count
    assert answers.count(200) == 10
    assert answers.count(429) == threads_count - 10


def test_with_redis_unreachable_requests_pass_and_the_miss_is_counted(api, tenant, clock):
    limit(tenant, 1)
    errors_before = sample("memory_cache_errors_total", operation="throttle")
    fallbacks_before = sample("memory_fallbacks_total", kind="unthrottled")

    with redis_unreachable():
        answers = statuses(api, 3)

    assert answers == [200, 200, 200]
    assert sample("memory_cache_errors_total", operation="throttle") == errors_before + 3
    assert sample("memory_fallbacks_total", kind="unthrottled") == fallbacks_before + 3


def test_the_schema_and_the_api_root_are_not_counted(api, tenant, clock):
    limit(tenant, 1)

    assert APIClient().get("/api/schema/").status_code == 200
    assert APIClient().get("/api/v1/").status_code == 200
    assert api.get(CONVERSATIONS).status_code == 200


def test_the_deployment_default_is_generous_and_read_from_settings(tenant):
    assert tenant.setting("MEMORY_RATE_LIMIT") == settings.MEMORY_RATE_LIMIT >= 1000
    assert tenant.setting("MEMORY_RATE_WINDOW") == settings.MEMORY_RATE_WINDOW
    assert "tenants.throttling.TenantRateThrottle" in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"]


def window_count(tenant: Any) -> int:
    key = throttle_key(tenant_id=tenant.pk, window=WINDOW, number=int(START // WINDOW))
    return int(get_redis_connection("default").get(key) or 0)


def test_a_known_key_is_counted_in_the_round_trip_that_reads_its_record(api, tenant, clock):
    limit(tenant, 100)
    api.post(f"{CONVERSATIONS}counted/messages/", {"role": "user", "content": "hi"}, format="json")

    with measure.counting() as counts:
        answer = api.get(f"{CONVERSATIONS}counted/messages/")

    assert answer.status_code == 200
    assert counts.redis == 1  # the key's record with the count, and the cached window in the same pipeline
    assert window_count(tenant) == 2


def test_a_key_moved_to_another_tenant_is_counted_there_and_taken_back_here(api, tenant, other_tenant, clock):
    limit(tenant, 100)
    limit(other_tenant, 100)
    assert statuses(api, 2) == [200, 200]
    key = TenantApiKey.objects.get(prefix=api.api_key.partition(".")[0])

    key.tenant = other_tenant
    key.save()
    tenant_services.auth_cache_forget(tenant=other_tenant)

    assert statuses(api, 1) == [200]
    assert (window_count(tenant), window_count(other_tenant)) == (2, 1)


def test_a_known_prefix_with_a_wrong_secret_spends_nothing(api, tenant, clock):
    limit(tenant, 100)
    assert statuses(api, 1) == [200]
    prefix = api.api_key.partition(".")[0]
    forged = APIClient()
    forged.credentials(HTTP_AUTHORIZATION=f"Api-Key {prefix}.not-the-secret")

    assert forged.get(CONVERSATIONS).status_code == 401
    assert window_count(tenant) == 1


# --- Requests without a valid key, per client address -------------------------------------------------


@pytest.fixture
def failures_limited(settings: Any, clock: Clock) -> int:
    settings.MEMORY_AUTH_FAILURE_LIMIT = 3
    settings.MEMORY_AUTH_FAILURE_WINDOW = WINDOW
    return 3


def keyed(key: str, **extra: str) -> APIClient:
    client = APIClient(**extra)
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def random_key() -> str:
    import secrets

    return f"{secrets.token_hex(4)}.{secrets.token_hex(16)}"


def assert_throttled_as_json(answer: Any) -> None:
    assert answer.status_code == 429, answer.content
    assert answer["Retry-After"] == "15"
    error = answer.json()["error"]
    assert error["code"] == "throttled"
    assert "MEMORY_AUTH_FAILURE_LIMIT=3" in error["message"]


def test_requests_without_a_key_from_one_address_are_throttled_past_the_limit(db, failures_limited):
    answers = [APIClient().get(CONVERSATIONS) for _ in range(5)]

    assert [answer.status_code for answer in answers] == [401, 401, 401, 429, 429]
    assert_throttled_as_json(answers[-1])
    assert APIClient(REMOTE_ADDR="198.51.100.4").get(CONVERSATIONS).status_code == 401  # another address


def test_wrong_keys_are_throttled_but_a_valid_key_from_the_same_address_still_works(api, tenant, failures_limited):
    prefix = api.api_key.partition(".")[0]
    wrong = [keyed(f"{prefix}.not-the-secret"), keyed(random_key()), keyed("not-a-key!"), keyed(random_key())]

    answers = [client.get(CONVERSATIONS) for client in wrong]

    assert [answer.status_code for answer in answers] == [401, 401, 401, 429]
    assert_throttled_as_json(answers[-1])
    assert api.get(CONVERSATIONS).status_code == 200


def test_the_budget_of_an_address_comes_back_when_its_window_ends(db, failures_limited, clock):
    assert [APIClient().get(CONVERSATIONS).status_code for _ in range(4)] == [401, 401, 401, 429]
    clock.now += WINDOW

    assert APIClient().get(CONVERSATIONS).status_code == 401


def test_an_unknown_prefix_costs_one_query_then_none_while_it_is_remembered(db, settings):
    from django.db import connection as default_connection
    from django.test.utils import CaptureQueriesContext

    client = keyed(random_key())
    with CaptureQueriesContext(default_connection) as first:
        assert client.get(CONVERSATIONS).status_code == 401
    with CaptureQueriesContext(default_connection) as again:
        assert [client.get(CONVERSATIONS).status_code for _ in range(5)] == [401] * 5

    assert len(first.captured_queries) == 1
    assert len(again.captured_queries) == 0


def test_past_the_limit_a_flood_of_random_keys_reaches_no_postgresql(db, failures_limited):
    from django.db import connection as default_connection
    from django.test.utils import CaptureQueriesContext

    assert [keyed(random_key()).get(CONVERSATIONS).status_code for _ in range(3)] == [401, 401, 401]
    with CaptureQueriesContext(default_connection) as flood:
        answers = [keyed(random_key()).get(CONVERSATIONS) for _ in range(20)]

    assert {answer.status_code for answer in answers} == {429}
    # One query, whatever the flood's size: the keys' prefixes, read once into Redis.
    assert [query["sql"].count("prefix") > 0 for query in flood.captured_queries] == [True]
    with CaptureQueriesContext(default_connection) as more:
        assert {keyed(random_key()).get(CONVERSATIONS).status_code for _ in range(20)} == {429}
    assert more.captured_queries == []


def over_the_limit(failures_limited: int) -> None:
    """This address spends its budget of failures, as a neighbour behind the same NAT would."""
    assert [keyed(random_key()).get(CONVERSATIONS).status_code for _ in range(failures_limited + 1)][-1] == 429


def test_a_valid_key_whose_record_is_not_cached_is_answered_from_an_address_over_its_limit(
    tenant, failures_limited, transactional_db
):
    from django.core.cache import cache as django_cache

    over_the_limit(failures_limited)
    _, new = tenant_services.api_key_create(tenant=tenant, name="new")  # never cached
    assert keyed(new).get(CONVERSATIONS).status_code == 200

    api_key, older = tenant_services.api_key_create(tenant=tenant, name="older")
    assert keyed(older).get(CONVERSATIONS).status_code == 200
    django_cache.delete(tenant_services.auth_cache_key(api_key.prefix))  # its record expired
    assert keyed(older).get(CONVERSATIONS).status_code == 200
    tenant.name = "renamed"
    tenant.save()  # a tenant's change forgets its keys' records
    assert keyed(older).get(CONVERSATIONS).status_code == 200

    # The keys pass; the address's made-up keys, and a real prefix with a wrong secret, do not.
    assert keyed(random_key()).get(CONVERSATIONS).status_code == 429
    assert keyed(f"{api_key.prefix}.not-the-secret").get(CONVERSATIONS).status_code == 429


def test_a_key_created_while_the_prefixes_are_known_joins_them_at_once(tenant, failures_limited, transactional_db):
    over_the_limit(failures_limited)
    assert keyed(random_key()).get(CONVERSATIONS).status_code == 429  # the prefixes are read into Redis
    _, key = tenant_services.api_key_create(tenant=tenant, name="later")

    assert keyed(key).get(CONVERSATIONS).status_code == 200


def test_with_postgresql_unreachable_no_prefix_is_taken_for_unknown(tenant, monkeypatch):
    from django.db import OperationalError

    from tenants import throttling
    from tenants.models import TenantApiKey

    throttling.key_prefixes_forget()

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")

    monkeypatch.setattr(TenantApiKey.objects, "values_list", unreachable)
    assert throttling.key_prefix_known("deadbeef") is True  # not known to be absent: the lookup decides


def test_a_key_created_with_a_prefix_remembered_as_unknown_works_at_once(tenant):
    from django.core.cache import cache as django_cache

    from tenants.authentication import UNKNOWN

    api_key, key = tenant_services.api_key_create(tenant=tenant, name="k")
    django_cache.set(tenant_services.auth_cache_key(api_key.prefix), UNKNOWN, 60)  # as if guessed just before
    api_key.name = "renamed"
    api_key.save()  # any save of the key forgets what was cached under its prefix

    assert keyed(key).get(CONVERSATIONS).status_code == 200


def test_a_client_cannot_escape_its_address_with_x_forwarded_for(db, failures_limited):
    answers = [APIClient().get(CONVERSATIONS, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}") for n in range(5)]

    assert [answer.status_code for answer in answers] == [401, 401, 401, 429, 429]


def test_behind_a_trusted_proxy_each_client_is_counted_apart(db, failures_limited, settings):
    settings.MEMORY_TRUSTED_PROXIES = ["10.0.0.0/8"]

    def through_proxy(client_address: str, spoofed: str = "") -> int:
        forwarded = f"{spoofed}, {client_address}" if spoofed else client_address
        return APIClient(REMOTE_ADDR="10.0.0.2").get(CONVERSATIONS, HTTP_X_FORWARDED_FOR=forwarded).status_code

    flooding = [through_proxy("198.51.100.9", spoofed=f"203.0.113.{n}") for n in range(5)]

    assert flooding == [401, 401, 401, 429, 429]
    assert through_proxy("203.0.113.1") == 401  # the address the flood wrote in the header is not blamed
