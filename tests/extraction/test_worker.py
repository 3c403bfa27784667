"""Extraction end to end on real parts: appends through the API, the persist worker, a derived worker
process calling a real OpenAI-compatible model server over HTTP; outages retried then dead-lettered,
a worker killed mid-call, two tenants on their own models, appends never waiting."""

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.model_server import ModelServer, ScriptedResponder
from conversations.models import Conversation, DeadLetter
from extraction.models import ExtractionUsage, ExtractionWatermark, Memory
from tenants import services as tenant_services
from tests.faults import CeleryWorker, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

LOOPBACK_ALLOWED = "127.0.0.1/32"


def remember_user_turns(messages: list[dict[str, Any]], model: str) -> str:
    """A model that keeps each user turn it is given as a fact about its speaker, sourced to it."""
    document = json.loads(messages[-1]["content"])
    operations = [
        {"op": "add", "kind": "fact", "subject": "Caroline", "text": turn["text"], "sources": [turn["id"]]}
        for turn in document["messages"]
        if turn["role"] == "user"
    ]
    return json.dumps({"operations": operations})


@pytest.fixture
def model_server() -> Iterator[tuple[ModelServer, ScriptedResponder]]:
    """The model server; each model answers its scripted steps first, then as ``remember_user_turns``."""
    responder = ScriptedResponder(fallback=remember_user_turns)
    with ModelServer(responder) as server:
        yield server, responder


@pytest.fixture
def extracting_worker(worker_env: dict[str, str], transactional_db: Any, settings: Any) -> Iterator[CeleryWorker]:
    """A derived worker that may call model servers on loopback, retrying a failed read twice."""
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = [LOOPBACK_ALLOWED]
    env = {**worker_env, "MEMORY_EGRESS_ALLOWED_NETWORKS": LOOPBACK_ALLOWED, "MEMORY_EXTRACTION_MAX_RETRIES": "2"}
    worker = CeleryWorker(env=env, name="extraction", queue_variable="MEMORY_DERIVED_QUEUE")
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()


def extracting(tenant: Any, server: ModelServer, model: str) -> None:
    tenant_services.tenant_update(
        tenant=tenant,
        settings={
            **tenant.settings,
            "MEMORY_EXTRACTION_ENABLED": True,
            "MEMORY_EXTRACTION_BATCH_TURNS": 2,
            "MEMORY_CHAT_MODEL": f"openai:{model}",
            "MEMORY_CHAT_BASE_URL": server.url,
            "MEMORY_EMBEDDING_MODEL": "",
        },
    )
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret=f"sk-{tenant.slug}-0001")


def append_pair(api: Any, conversation_id: str, user_text: str, *, user_id: str = "caroline") -> list[str]:
    """Two turns appended in one request; their message ids."""
    started = time.perf_counter()
    response = api.post(
        f"/api/v1/conversations/{conversation_id}/messages/",
        {"user_id": user_id, "messages": [{"role": "user", "content": user_text}, {"role": "assistant", "content": "Noted."}]},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert time.perf_counter() - started < 5  # the append never waits on the model
    return [message["id"] for message in response.json()["messages"]]


def memories(tenant: Any) -> list[Memory]:
    return list(Memory.objects.for_tenant(tenant).order_by("pk"))


def prompts(server: ModelServer, model: str) -> list[dict[str, Any]]:
    return [json.loads(request["messages"][-1]["content"]) for request in server.requests if request["model"] == model]


def test_turns_appended_through_the_api_become_memories_with_their_sources(api, tenant, worker, extracting_worker, model_server):
    server, _ = model_server
    extracting(tenant, server, "extractor")

    first = append_pair(api, "c1", "I moved to Boston last week.")
    wait_until(lambda: len(memories(tenant)) == 1, timeout=60, message="the first memory")
    second = append_pair(api, "c1", "My sister Ana lives here too.")
    wait_until(lambda: len(memories(tenant)) == 2, timeout=60, message="the second memory")

    boston, ana = memories(tenant)
    assert (boston.user_id, boston.text, [str(m) for m in boston.message_ids]) == (
        "caroline",
        "I moved to Boston last week.",
        [first[0]],
    )
    assert [str(m) for m in ana.message_ids] == [second[0]]
    assert boston.model == "openai:extractor"
    first_prompt, second_prompt = prompts(server, "extractor")
    assert [turn["id"] for turn in first_prompt["messages"]] == first
    assert [turn["id"] for turn in second_prompt["messages"]] == second  # read once, never again
    assert [memory["text"] for memory in second_prompt["memories"]] == ["I moved to Boston last week."]
    assert server.requests[0]["temperature"] == 0
    assert ExtractionUsage.objects.for_tenant(tenant).get().calls == 2


def test_a_model_outage_is_retried_and_then_the_read_applies(api, tenant, worker, extracting_worker, model_server):
    server, responder = model_server
    extracting(tenant, server, "flaky")
    responder.script("flaky", [{"status": 503, "message": "overloaded", "times": 2}])

    ids = append_pair(api, "c1", "I moved to Boston last week.")

    wait_until(lambda: len(memories(tenant)) == 1, timeout=90, message="the memory after two failed calls")
    assert [str(message_id) for message_id in memories(tenant)[0].message_ids] == [ids[0]]
    usage = ExtractionUsage.objects.for_tenant(tenant).get()
    assert (usage.calls, usage.failed_calls) == (3, 2)
    assert not DeadLetter.unscoped.exists()


def test_a_model_that_keeps_failing_ends_in_a_dead_letter_and_later_turns_are_still_read(
    api, tenant, worker, extracting_worker, model_server
):
    server, responder = model_server
    extracting(tenant, server, "broken")
    responder.script("broken", [{"answer": "this is not JSON", "times": 3}])

    append_pair(api, "c1", "I moved to Boston last week.")
    wait_until(lambda: DeadLetter.unscoped.filter(task_name="extraction.tasks.conversation_extract").exists(), timeout=90)

    dead = DeadLetter.unscoped.get(task_name="extraction.tasks.conversation_extract")
    assert dead.tenant_id == tenant.pk
    last_seq = Conversation.objects.for_tenant(tenant).get(conversation_id="c1").last_seq
    assert (dead.payload["conversation_id"], dead.payload["after_seq"], dead.payload["through_seq"]) == ("c1", 0, last_seq)
    assert "malformed" in dead.error
    assert dead.attempts == 3
    assert memories(tenant) == []
    wait_until(lambda: ExtractionUsage.objects.for_tenant(tenant).get().dead_letters == 1, timeout=10)
    later = append_pair(api, "c1", "My sister Ana lives here too.")
    wait_until(lambda: len(memories(tenant)) == 1, timeout=60, message="the later turns read past the dead letter")
    assert [str(m) for m in memories(tenant)[0].message_ids] == [later[0]]


def test_a_worker_killed_during_the_call_loses_nothing_and_adds_once(api, tenant, worker, extracting_worker, model_server):
    server, responder = model_server
    extracting(tenant, server, "slow")
    responder.script("slow", [{"sleep": 60}])
    append_pair(api, "c1", "I moved to Boston last week.")
    wait_until(lambda: prompts(server, "slow"), timeout=60, message="the call in flight")

    extracting_worker.kill()
    extracting_worker.start()

    wait_until(lambda: len(memories(tenant)) == 1, timeout=90, message="the read redelivered to the new worker")
    time.sleep(2)
    assert len(memories(tenant)) == 1
    last_seq = Conversation.objects.for_tenant(tenant).get(conversation_id="c1").last_seq
    assert ExtractionWatermark.objects.for_tenant(tenant).get().read_through_seq == last_seq


def test_two_tenants_extract_with_their_own_model_and_credential(
    api, other_api, tenant, other_tenant, worker, extracting_worker, model_server
):
    server, _ = model_server
    extracting(tenant, server, "model-a")
    extracting(other_tenant, server, "model-b")

    append_pair(api, "c1", "My secret word is heron.")
    append_pair(other_api, "c1", "I like tea.")
    wait_until(lambda: len(memories(tenant)) == 1 and len(memories(other_tenant)) == 1, timeout=60)

    assert "heron" not in json.dumps(prompts(server, "model-b"))
    assert "tea" not in json.dumps(prompts(server, "model-a"))
    assert memories(other_tenant)[0].text == "I like tea."
