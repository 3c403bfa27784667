"""The circuit breaker of the model servers (``core.breaker``): shared by every process through Redis,
held by each process alone when Redis does not answer, never failing a call itself."""

import time
from unittest import mock

import pytest
import redis

from core import breaker, redis_client


@pytest.fixture(autouse=True)
def fresh() -> None:
    breaker.reset_all()


def test_a_failure_opens_the_circuit_for_its_interval_for_every_holder_of_the_name():
    first, second = breaker.Breaker("embeddings a", seconds=1.0), breaker.Breaker("embeddings a", seconds=1.0)
    assert first.open() is None
    first.failed("the server answered HTTP 503")
    refused = second.open()  # another process: the same name, the same Redis key
    assert refused is not None
    assert refused.reason == "the server answered HTTP 503"
    assert 0 < refused.seconds_left <= 1.0
    assert breaker.Breaker("embeddings b", seconds=1.0).open() is None  # another server is not concerned
    time.sleep(1.05)
    assert second.open() is None


def test_a_success_after_a_failure_closes_it_at_once():
    circuit = breaker.Breaker("embeddings a", seconds=30.0)
    circuit.failed("timed out")
    circuit.succeeded()
    assert circuit.open() is None


def test_the_key_holds_no_url_or_credential():
    circuit = breaker.Breaker("embeddings tenant 7 https://user:secret@models.example.com/v1 model", seconds=5.0)
    circuit.failed("x")
    keys = [key.decode() for key in redis_client.client().scan_iter(match=breaker.KEY_PREFIX + "*")]
    assert keys == [circuit.key]
    assert "secret" not in circuit.key
    assert "example" not in circuit.key


def test_with_redis_down_each_process_keeps_its_own_circuit_and_no_call_fails_for_it():
    circuit = breaker.Breaker("embeddings a", seconds=1.0)
    down = mock.Mock(side_effect=redis.ConnectionError("Redis is down"))
    broken = mock.Mock(pipeline=mock.Mock(return_value=mock.Mock(execute=down)), set=down, delete=down)
    with mock.patch.object(redis_client, "client", return_value=broken):
        assert circuit.open() is None
        circuit.failed("the server answered HTTP 500")
        refused = circuit.open()
        assert refused is not None
        assert refused.reason == "the server answered HTTP 500"
        time.sleep(1.05)
        assert circuit.open() is None


def test_an_interval_of_zero_never_opens_it():
    circuit = breaker.Breaker("embeddings a", seconds=0)
    circuit.failed("x")
    assert circuit.open() is None
