"""A window read sends its ``LRANGE`` with the API key's round trip (``tenants.piggyback``): one round
trip to Redis instead of two, and an answer read for a guessed tenant is never shown to another."""

from typing import Any

import pytest
import redis.connection
from rest_framework.test import APIClient

from tenants.models import TenantApiKey
from tests.conftest import client_for

MESSAGES = "/api/v1/conversations/{}/messages/"


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every command (or pipeline) this process sends to Redis, one entry per round trip."""
    sent: list[bytes] = []
    send = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> None:
        sent.append(b"".join(command) if isinstance(command, list) else bytes(command))
        return send(self, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
    return sent


def append(api: APIClient, conversation_id: str, content: str) -> None:
    response = api.post(MESSAGES.format(conversation_id), {"role": "user", "content": content}, format="json")
    assert response.status_code == 201, response.content


def contents(response: Any) -> list[str]:
    return [message["content"] for message in response.json()["messages"]]


def test_a_cached_window_read_costs_one_round_trip_once_the_key_is_known(api, round_trips):
    append(api, "trip", "first")
    append(api, "trip", "second")
    api.get(MESSAGES.format("trip"))  # the key's tenant is known from here on in this process
    round_trips.clear()
    response = api.get(MESSAGES.format("trip") + "?limit=5")
    assert response.status_code == 200
    assert contents(response) == ["first", "second"]
    assert response.json()["source"] == "cache"
    assert len(round_trips) == 1, round_trips
    assert b"LRANGE" in round_trips[0]
    assert b"EVALSHA" in round_trips[0]


def test_a_filtered_or_archived_read_sends_nothing_with_the_key(api, round_trips):
    append(api, "trip", "first")
    api.get(MESSAGES.format("trip"))
    round_trips.clear()
    assert api.get(MESSAGES.format("trip") + "?role=user").status_code == 200
    assert b"LRANGE" not in round_trips[0]


def test_a_key_moved_to_another_tenant_never_sees_the_window_read_for_its_old_one(tenant, other_tenant, round_trips):
    acme, globex = client_for(tenant), client_for(other_tenant)
    append(acme, "shared-name", "acme's secret plan")
    append(globex, "shared-name", "globex's own words")
    assert contents(acme.get(MESSAGES.format("shared-name"))) == ["acme's secret plan"]  # acme's key known

    key = TenantApiKey.objects.get(prefix=acme.api_key.partition(".")[0])
    key.tenant = other_tenant
    key.save()  # its cached record is forgotten; this process still guesses acme for it
    round_trips.clear()
    response = acme.get(MESSAGES.format("shared-name"))
    assert response.status_code == 200
    assert contents(response) == ["globex's own words"]
    assert any(b"acme:shared-name:messages" in sent for sent in round_trips)  # read for the guess, thrown away


def test_a_wrong_secret_after_a_right_one_is_refused_and_shown_nothing(api, tenant):
    append(api, "trip", "first")
    api.get(MESSAGES.format("trip"))
    prefix = api.api_key.partition(".")[0]
    thief = APIClient()
    thief.credentials(HTTP_AUTHORIZATION=f"Api-Key {prefix}.{'x' * 32}")
    response = thief.get(MESSAGES.format("trip"))
    assert response.status_code == 401
    assert b"first" not in response.content


def test_an_id_no_conversation_can_have_is_still_a_404(api):
    append(api, "trip", "first")
    api.get(MESSAGES.format("trip"))
    response = api.get(MESSAGES.format("x" * 1000))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert api.get(MESSAGES.format("trip") + "?limit=nope").status_code == 400


def test_after_redis_forgets_its_scripts_the_read_still_answers(api):
    from django_redis import get_redis_connection

    append(api, "trip", "first")
    api.get(MESSAGES.format("trip"))
    get_redis_connection("default").script_flush()
    response = api.get(MESSAGES.format("trip"))
    assert response.status_code == 200
    assert contents(response) == ["first"]


def test_a_tenant_setting_changed_since_the_guess_is_the_one_the_read_follows(api, tenant):
    for number in range(5):
        append(api, "trip", f"m{number}")
    assert len(contents(api.get(MESSAGES.format("trip")))) == 5  # the guess holds the settings of now
    tenant.settings = {**(tenant.settings or {}), "MEMORY_HISTORY_LIMIT": 2}
    tenant.save()
    assert contents(api.get(MESSAGES.format("trip"))) == ["m3", "m4"]
