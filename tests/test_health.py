"""The probes (``memoryproject/health.py``): ``/healthz`` answers without I/O; ``/readyz`` checks
PostgreSQL, Redis and the broker and says whether a write can be accepted durably, each backend made
unreachable by pointing its setting at a closed port (refused at once: no waiting on a timeout).
Both answer on any Host over plain HTTP, reveal no address, and refuse other methods."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings

from memoryproject import health
from memoryproject.celery import app as celery_app
from memoryproject.settings.base import cache_settings
from tests.faults import free_port


@pytest.fixture(autouse=True)
def fresh_checks() -> Iterator[None]:
    """Every test runs its own round of checks (one round answers probes for a second)."""
    health.forget()
    yield
    health.forget()


@pytest.fixture
def database_down(django_db_setup: Any, django_db_blocker: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with django_db_blocker.unblock():
        connection.close()
        monkeypatch.setitem(connection.settings_dict, "PORT", str(free_port()))
        yield
        connection.close()


@pytest.fixture
def database_up(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    with django_db_blocker.unblock():
        yield
        connection.close()


@pytest.fixture
def cache_down() -> Iterator[None]:
    with override_settings(CACHES=cache_settings(f"redis://127.0.0.1:{free_port()}/0")):
        yield


@pytest.fixture
def broker_down(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(celery_app.conf, "broker_url", f"amqp://guest:guest@127.0.0.1:{free_port()}//")


def probe(client: Any, path: str, **headers: str) -> tuple[int, dict[str, Any]]:
    answer = client.get(path, headers=headers)
    assert answer["Content-Type"] == "application/json"
    assert answer["Cache-Control"] == "no-store"
    return answer.status_code, answer.json()


def test_liveness_answers_without_touching_any_backend(client, cache_down, broker_down):
    # No database access is allowed in this test, and Redis and the broker do not answer.
    assert probe(client, "/healthz") == (200, {"status": "alive"})


def test_ready_when_every_backend_answers(client, database_up):
    status, answer = probe(client, "/readyz")

    assert status == 200
    assert answer["status"] == "ready"
    assert "message" not in answer
    assert {name: check["ok"] for name, check in answer["checks"].items()} == {"database": True, "cache": True, "broker": True}
    assert all(check["latency_ms"] >= 0 for check in answer["checks"].values())


def test_postgresql_down_is_degraded_not_down_writes_go_through_redis_and_the_broker(client, database_down):
    status, answer = probe(client, "/readyz")

    assert status == 200
    assert answer["status"] == "degraded"
    assert answer["checks"]["database"]["ok"] is False
    assert answer["message"].startswith("PostgreSQL (DATABASE_URL) does not answer: writes are accepted through Redis")


def test_redis_down_is_degraded_writes_are_committed_to_postgresql(client, database_up, cache_down):
    status, answer = probe(client, "/readyz")

    assert status == 200
    assert answer["status"] == "degraded"
    assert answer["checks"]["cache"]["ok"] is False
    assert "committed to PostgreSQL in the request" in answer["message"]


def test_the_broker_down_with_redis_up_is_unavailable_no_write_can_be_confirmed(client, database_up, broker_down):
    status, answer = probe(client, "/readyz")

    assert status == 503
    assert answer["status"] == "unavailable"
    assert answer["checks"]["broker"]["ok"] is False
    assert answer["message"].startswith("the broker (CELERY_BROKER_URL) does not answer: no write can be accepted")
    assert "/api/v1/status/" in answer["message"]


def test_redis_and_postgresql_down_is_unavailable_naming_both(client, database_down, cache_down):
    status, answer = probe(client, "/readyz")

    assert status == 503
    assert answer["message"].startswith("PostgreSQL (DATABASE_URL) and Redis (REDIS_URL) do not answer")
    assert "Check that they run and that this process reaches them;" in answer["message"]


def test_the_answer_reveals_no_address_port_or_error_text(client, database_down, cache_down, broker_down):
    status, answer = probe(client, "/readyz")

    assert status == 503
    text = str(answer)
    for secret in ("127.0.0.1", "guest", "redis://", "amqp://", "postgres://", "refused", str(connection.settings_dict["PORT"])):
        assert secret not in text


def test_the_round_keeps_each_failed_checks_error_text_for_the_operators_only(database_up, cache_down, monkeypatch):
    pings = []
    real_ping = health.cache.ping
    monkeypatch.setattr(health.cache, "ping", lambda: pings.append(1) or real_ping())

    result = health.readiness_check()

    assert pings == [1]  # asked once: the operators' pages read the text from this round
    assert set(result.errors) == {"cache"}
    assert "refused" in result.errors["cache"].lower() or "connect" in result.errors["cache"].lower()
    assert "errors" not in result.as_json()
    assert result.errors["cache"] not in str(result.as_json())


def test_one_round_of_checks_answers_the_probes_of_the_next_second(client, database_up, broker_down, monkeypatch):
    assert probe(client, "/readyz")[0] == 503
    monkeypatch.undo()  # the broker answers again

    assert probe(client, "/readyz")[0] == 503  # the same round, under a second old
    health.forget()  # as a second later
    assert probe(client, "/readyz")[0] == 200


@override_settings(ALLOWED_HOSTS=["memory.example.com"], SECURE_SSL_REDIRECT=True)
def test_the_probes_answer_on_any_host_over_plain_http(client, database_up):
    for path in ("/healthz", "/readyz"):
        status, _ = probe(client, path, HOST="10.0.3.7:8000")
        assert status == 200
    assert client.get("/api/v1/", headers={"HOST": "10.0.3.7:8000"}).status_code == 400  # everything else: validated


def test_the_probes_refuse_other_methods(client):
    for path in ("/healthz", "/readyz"):
        answer = client.post(path)
        assert answer.status_code == 405
        assert answer["Allow"] == "GET, HEAD"
