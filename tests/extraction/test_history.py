"""What held when: a user's memories answer a question about a time with what was true then, through
several updates and deletes, each dated by the turn that said it; and the times that enter never
make the memories unreadable.

Every read goes through the API as a client would; every extraction through the derived worker's
run with a scripted model (``tests.chat.fakes``)."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from extraction import runs
from extraction.models import ExtractionUsage, ExtractionWatermark, Memory
from extraction.services import messages_read
from tests.chat import fakes
from tests.factories import conversation_with_messages

pytestmark = pytest.mark.django_db

JANUARY = datetime(2024, 1, 10, 9, tzinfo=UTC)
JUNE = datetime(2024, 6, 1, 9, tzinfo=UTC)
SEPTEMBER = datetime(2024, 9, 1, 9, tzinfo=UTC)
LISBON = {"op": "add", "kind": "fact", "subject": "user", "text": "The user lives in Lisbon."}
BICYCLE = {"op": "add", "kind": "fact", "subject": "user", "text": "The user owns a bicycle."}


@pytest.fixture
def extracting(tenant: Any) -> Any:
    tenant.settings = {"MEMORY_EXTRACTION_ENABLED": True, "MEMORY_CHAT_MODEL": "fake:scripted-model"}
    tenant.save()
    return tenant


def said(tenant: Any, conversation_id: str, text: str, at: datetime, *operations: dict[str, Any]) -> None:
    """The user says ``text`` at ``at`` in a new conversation, and the extractor answers ``operations``
    (their sources: that turn) when it reads it, now."""
    rows = [("user", text, {}, at), ("assistant", "Noted.", {}, at)]
    conversation = conversation_with_messages(tenant, conversation_id, rows=rows, user_id="ana")
    source = str(messages_read(tenant=tenant, conversation=conversation)[0].message_id)
    fakes.script(json.dumps({"operations": [{**operation, "sources": [source]} for operation in operations]}))
    result = runs.conversation_extract(tenant=tenant, conversation_id=conversation_id, quiet=True)
    assert result.stopped == "read", result


def memory_id_of(api: Any, text: str) -> str:
    [found] = [memory for memory in memories(api) if memory["text"] == text]
    return found["memory_id"]


def memories(api: Any, **query: Any) -> list[dict[str, Any]]:
    response = api.get("/api/v1/users/ana/memories/", query)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def texts(api: Any, **query: Any) -> set[str]:
    return {memory["text"] for memory in memories(api, **query)}


def a_life(api: Any, tenant: Any) -> str:
    """Lisbon from January, Porto from June (no date given: the turn's), Berlin from 2024-08-15 (the
    model's date, said in September). Returns the memory's id, which stays the current version's."""
    said(tenant, "c1", "I live in Lisbon.", JANUARY, LISBON)
    memory_id = memory_id_of(api, "The user lives in Lisbon.")
    said(tenant, "c2", "I moved to Porto.", JUNE, {"op": "update", "memory_id": memory_id, "text": "The user lives in Porto."})
    update = {"op": "update", "memory_id": memory_id, "text": "The user lives in Berlin.", "valid_from": "2024-08-15"}
    said(tenant, "c3", "Since mid-August I live in Berlin.", SEPTEMBER, update)
    return memory_id


def test_a_question_about_a_time_answers_what_held_then_through_several_updates(api, extracting):
    memory_id = a_life(api, extracting)

    assert texts(api, valid_at="2023-12-01T00:00:00Z") == set()
    assert texts(api, valid_at="2024-03-01T00:00:00Z") == {"The user lives in Lisbon."}
    assert texts(api, valid_at="2024-06-01T08:59:59Z") == {"The user lives in Lisbon."}
    assert texts(api, valid_at="2024-06-01T09:00:00Z") == {"The user lives in Porto."}
    assert texts(api, valid_at="2024-08-14T23:59:59Z") == {"The user lives in Porto."}
    assert texts(api, valid_at="2024-08-15T00:00:00Z") == {"The user lives in Berlin."}
    assert texts(api, valid_at="2030-01-01T00:00:00Z") == {"The user lives in Berlin."}
    [current] = memories(api)
    assert (current["memory_id"], current["text"], current["current"], current["version_of"]) == (
        memory_id,
        "The user lives in Berlin.",
        True,
        None,
    )


def test_include_past_lists_every_version_each_naming_the_memory_that_holds_on(api, extracting):
    memory_id = a_life(api, extracting)

    listed = {memory["text"]: memory for memory in memories(api, include_past="true")}

    assert set(listed) == {"The user lives in Lisbon.", "The user lives in Porto.", "The user lives in Berlin."}
    lisbon, porto = listed["The user lives in Lisbon."], listed["The user lives in Porto."]
    assert (lisbon["current"], lisbon["version_of"], lisbon["valid_from"], lisbon["valid_to"]) == (
        False,
        memory_id,
        "2024-01-10T09:00:00Z",
        "2024-06-01T09:00:00Z",
    )
    assert (porto["valid_from"], porto["valid_to"], porto["version_of"]) == (
        "2024-06-01T09:00:00Z",
        "2024-08-15T00:00:00Z",
        memory_id,
    )
    assert lisbon["conversation_ids"] == ["c1"]  # each version keeps the sources it was read from
    assert porto["conversation_ids"] == ["c1", "c2"]
    history = api.get(f"/api/v1/users/ana/memories/{memory_id}/").json()["history"]
    assert [(change["action"], change["previous_text"]) for change in history] == [
        ("update", "The user lives in Porto."),
        ("update", "The user lives in Lisbon."),
        ("add", None),
    ]


def test_a_search_at_a_time_ranks_what_held_then(api, extracting):
    a_life(api, extracting)

    found = memories(api, query="where does the user live", valid_at="2024-03-01T00:00:00Z")

    assert [memory["text"] for memory in found] == ["The user lives in Lisbon."]


def test_a_delete_is_dated_by_the_turn_that_said_it_not_by_when_it_was_read(api, extracting):
    said(extracting, "c1", "I bought a bicycle.", JANUARY, BICYCLE)
    memory_id = memory_id_of(api, "The user owns a bicycle.")

    said(extracting, "c2", "I sold my bicycle.", JUNE, {"op": "delete", "memory_id": memory_id})

    assert texts(api, valid_at="2024-05-31T00:00:00Z") == {"The user owns a bicycle."}
    assert texts(api, valid_at="2024-09-01T00:00:00Z") == set()
    [sold] = memories(api, include_past="true")
    assert sold["valid_to"] == "2024-06-01T09:00:00Z"


def test_a_delete_takes_the_date_the_model_gives_for_when_it_stopped(api, extracting):
    said(extracting, "c1", "I bought a bicycle.", JANUARY, BICYCLE)
    memory_id = memory_id_of(api, "The user owns a bicycle.")

    said(
        extracting,
        "c2",
        "I sold my bicycle last month.",
        JUNE,
        {"op": "delete", "memory_id": memory_id, "valid_to": "2024-05-03"},
    )

    assert texts(api, valid_at="2024-05-02T12:00:00Z") == {"The user owns a bicycle."}
    assert texts(api, valid_at="2024-05-03T00:00:00Z") == set()


def test_a_version_never_stops_before_it_began(api, extracting):
    said(extracting, "c1", "I live in Lisbon.", JUNE, LISBON)
    memory_id = memory_id_of(api, "The user lives in Lisbon.")

    said(
        extracting,
        "c2",
        "Oh and I sold the Lisbon flat.",
        SEPTEMBER,
        {"op": "delete", "memory_id": memory_id, "valid_to": "2020-01-01"},
    )

    [taken_back] = memories(api, include_past="true")
    assert taken_back["valid_from"] == taken_back["valid_to"] == "2024-06-01T09:00:00Z"


def test_a_past_version_cannot_be_made_current_again(api, extracting):
    a_life(api, extracting)
    lisbon = memory_id_of_past(api, "The user lives in Lisbon.")

    response = api.patch(f"/api/v1/users/ana/memories/{lisbon}/", {"valid_to": None}, format="json")

    assert response.status_code == 400
    assert "past version" in response.json()["error"]["message"]
    assert texts(api) == {"The user lives in Berlin."}


def memory_id_of_past(api: Any, text: str) -> str:
    [found] = [memory for memory in memories(api, include_past="true") if memory["text"] == text]
    return found["memory_id"]


def test_erasing_the_user_erases_every_version(api, extracting):
    a_life(api, extracting)

    assert api.delete("/api/v1/users/ana/").status_code in (200, 202, 204)

    assert Memory.objects.for_tenant(extracting).count() == 0


# --- Times that could not be read back never enter ---------------------------------------------------

OUT_OF_RANGE = ("0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00", "0001-01-01", "9999-12-31", "0001-01-01T23:59:59Z")


@pytest.mark.parametrize("moment", OUT_OF_RANGE)
def test_a_models_date_outside_what_can_be_read_back_refuses_its_answer_and_the_memories_stay_readable(api, extracting, moment):
    said(extracting, "c1", "I live in Lisbon.", JANUARY, LISBON)
    rows = [("user", "I was born long ago.", {}, JUNE), ("assistant", "Noted.", {}, JUNE)]
    conversation_with_messages(extracting, "c2", rows=rows, user_id="ana")
    fakes.script(json.dumps({"operations": [{**LISBON, "text": "The user is old.", "valid_from": moment, "sources": []}]}))

    with pytest.raises(runs.ExtractionFailed) as failed:
        runs.conversation_extract(tenant=extracting, conversation_id="c2", quiet=True)

    assert "outside the times that can be stored" in str(failed.value)
    assert texts(api) == {"The user lives in Lisbon."}
    assert texts(api, include_past="true") == {"The user lives in Lisbon."}


@pytest.mark.parametrize("moment", OUT_OF_RANGE)
@pytest.mark.parametrize("field", ["valid_from", "valid_to"])
def test_a_correction_with_a_time_outside_what_can_be_read_back_is_a_400_and_every_read_still_answers(
    api, extracting, field, moment
):
    said(extracting, "c1", "I live in Lisbon.", JANUARY, LISBON)
    memory_id = memory_id_of(api, "The user lives in Lisbon.")

    response = api.patch(f"/api/v1/users/ana/memories/{memory_id}/", {field: moment}, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "validation_error"
    assert "0001-01-02T00:00:00Z to 9999-12-30T23:59:59Z" in response.json()["error"]["message"]
    assert api.get(f"/api/v1/users/ana/memories/{memory_id}/").status_code == 200
    assert texts(api) == {"The user lives in Lisbon."}


@pytest.mark.parametrize("parameter", ["valid_at", "start_date", "end_date"])
def test_a_query_time_outside_what_can_be_read_back_is_a_400_naming_it(api, extracting, parameter):
    response = api.get("/api/v1/users/ana/memories/", {parameter: "0001-01-01T00:00:00+05:00"})

    assert response.status_code == 400
    assert parameter in json.dumps(response.json())


def test_the_database_itself_refuses_a_time_that_could_not_be_read_back(extracting):
    """Whatever way a row is written, PostgreSQL keeps the bounds: a bad row cannot exist to break reads."""
    from django.db import IntegrityError, connection, transaction

    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO extracted_memories (tenant_id, memory_id, user_id, kind, subject, text, valid_from, confidence, "
            "message_ids, conversation_pks, model, embedding_model, created_at, updated_at) VALUES (%s, gen_random_uuid(), "
            "'ana', 'fact', 'user', 'x', '0001-01-01T00:00:00+05:00', 1, '{}', '{}', '', '', now(), now())",
            [extracting.pk],
        )


# --- A model that cannot be set up is no model ----------------------------------------------------------


@pytest.fixture
def own_server_without_credential(tenant: Any, settings: Any) -> Any:
    """A tenant that points extraction at its own OpenAI-compatible server and stored no credential."""
    from tenants import services as tenant_services

    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    tenant_services.tenant_update(
        tenant=tenant,
        settings={
            "MEMORY_EXTRACTION_ENABLED": True,
            "MEMORY_CHAT_MODEL": "openai:stub-echo",
            "MEMORY_CHAT_BASE_URL": "http://127.0.0.1:9/v1",
        },
    )
    return tenant


def test_a_model_that_cannot_be_set_up_is_reported_as_no_model_and_reads_nothing_into_a_dead_letter(
    api, own_server_without_credential
):
    from conversations.models import DeadLetter

    tenant = own_server_without_credential
    rows = [("user", "I live in Lisbon.", {}, JANUARY), ("assistant", "Noted.", {}, JANUARY)]
    conversation = conversation_with_messages(tenant, "c1", rows=rows, user_id="ana")

    extraction = api.get("/api/v1/users/ana/memories/").json()["extraction"]
    result = runs.conversation_extract(tenant=tenant, conversation_id="c1", quiet=True)

    assert (extraction["enabled"], extraction["reason"]) == (False, "no_model")
    assert "no openai credential" in extraction["detail"]
    assert api.get("/api/v1/status/").json()["extraction"]["reason"] == "no_model"
    assert result.stopped == "no_model"
    assert DeadLetter.objects.for_tenant(tenant).count() == 0
    assert not ExtractionWatermark.objects.for_tenant(tenant).filter(conversation=conversation, read_through_seq__gt=0).exists()
    assert not ExtractionUsage.objects.for_tenant(tenant).filter(calls__gt=0).exists()


def test_once_its_credential_is_stored_the_same_tenant_extracts(api, own_server_without_credential):
    from tenants import services as tenant_services

    tenant_services.provider_credential_set(tenant=own_server_without_credential, provider="openai", secret="sk-tenant")

    extraction = api.get("/api/v1/users/ana/memories/").json()["extraction"]

    assert (extraction["enabled"], extraction["reason"], extraction["model"]) == (True, None, "openai:stub-echo")


# --- Refusals are counted -----------------------------------------------------------------------------


def test_refused_operations_are_counted_in_the_days_usage_and_the_status(api, extracting, caplog):
    said(extracting, "c1", "I live in Lisbon.", JANUARY, LISBON)
    rows = [("user", "Forget everything about Bob.", {}, JUNE), ("assistant", "Noted.", {}, JUNE)]
    conversation_with_messages(extracting, "c2", rows=rows, user_id="ana")
    stranger = "00000000-0000-4000-8000-000000000000"
    fakes.script(json.dumps({"operations": [{"op": "delete", "memory_id": stranger}, {**LISBON, "sources": ["not-read"]}]}))

    runs.conversation_extract(tenant=extracting, conversation_id="c2", quiet=True)

    assert ExtractionUsage.objects.for_tenant(extracting).get().refused_operations == 2
    assert api.get("/api/v1/status/").json()["extraction"]["today"]["refused_operations"] == 2
    [warning] = [
        record.msg
        for record in caplog.records
        if isinstance(record.msg, dict) and record.msg.get("event") == "extraction_operations_refused"
    ]
    assert warning["refused"] == 2
    assert record_level(caplog, "extraction_operations_refused") == "WARNING"


def record_level(caplog: Any, event: str) -> str:
    return next(
        record.levelname for record in caplog.records if isinstance(record.msg, dict) and record.msg.get("event") == event
    )


# --- What the logs keep of a refused answer -------------------------------------------------------------

SECRET = "Ana's biopsy came back positive"


@pytest.mark.parametrize(
    "answer",
    [
        f"Sure! {SECRET}.",
        json.dumps({"operations": [{"op": SECRET}]}),
        json.dumps({"operations": [{**LISBON, "kind": SECRET}]}),
        json.dumps({"operations": [{**LISBON, "valid_from": SECRET}]}),
        json.dumps({"operations": [{"op": "update", "memory_id": SECRET, "text": "x"}]}),
    ],
)
def test_a_refused_answer_is_described_in_the_failure_without_what_it_says(extracting, answer):
    """The failure's text is what the task's retry warning logs and its dead letter keeps: after the
    user's erase, nothing of what the model said about them may remain there."""
    rows = [("user", "I have news.", {}, JUNE), ("assistant", "Tell me.", {}, JUNE)]
    conversation_with_messages(extracting, "c1", rows=rows, user_id="ana")
    fakes.script(answer)

    with pytest.raises(runs.ExtractionFailed) as failed:
        runs.conversation_extract(tenant=extracting, conversation_id="c1", quiet=True)

    assert "biopsy" not in str(failed.value)
    assert failed.value.reason == "malformed"


def test_a_providers_error_is_described_by_its_type_and_status_unless_the_deployment_logs_content(settings):
    class APIStatusError(Exception):
        status_code = 400
        code = "context_length_exceeded"

    error = APIStatusError(f"Your prompt '{SECRET}' is too long")

    assert runs.failure_described(error) == "APIStatusError (HTTP 400, context_length_exceeded)"
    settings.MEMORY_LOG_CONTENT = True
    assert "biopsy" in runs.failure_described(error)


# --- Memories stored before versions were kept ------------------------------------------------------------


def test_the_migration_gives_back_the_versions_earlier_updates_replaced(api, extracting):
    """Before, an update rewrote the memory in place and kept the replaced text in its change log only:
    the migration makes each such version a past version again, so that valid_at answers it."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("extraction.migrations.0005_memory_versions")
    memory_id = a_life(api, extracting)
    Memory.objects.for_tenant(extracting).filter(version_of__isnull=False).delete()  # as an older release left them
    assert texts(api, valid_at="2024-03-01T00:00:00Z") == set()

    migration.past_versions_restore(apps, None)

    assert texts(api, valid_at="2024-03-01T00:00:00Z") == {"The user lives in Lisbon."}
    assert texts(api, valid_at="2024-07-01T00:00:00Z") == {"The user lives in Porto."}
    assert texts(api, valid_at="2024-09-01T00:00:00Z") == {"The user lives in Berlin."}
    assert {memory["version_of"] for memory in memories(api, include_past="true")} == {None, memory_id}
    migration.past_versions_restore(apps, None)  # run again (a migration re-applied): nothing twice
    assert len(memories(api, include_past="true")) == 3
