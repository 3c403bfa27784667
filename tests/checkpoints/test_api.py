"""The checkpoint API end to end (save_checkpoint / load_checkpoint, LangGraph's checkpointer
storage), against the real PostgreSQL.

``api`` is a client of acme (``tenant``); ``other_api`` one of globex, which must never see or change
acme's checkpoints.
"""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext

from checkpoints import services
from checkpoints.models import Checkpoint, CheckpointWrite
from conversations.models import Conversation
from tenants.managers import TenantScopeError
from tests.faults import free_port


def checkpoints_url(conversation_id: str = "c1") -> str:
    return f"/api/v1/conversations/{conversation_id}/checkpoints/"


def latest_url(conversation_id: str = "c1") -> str:
    return f"{checkpoints_url(conversation_id)}latest/"


def checkpoint_url(checkpoint_id: str, conversation_id: str = "c1") -> str:
    return f"{checkpoints_url(conversation_id)}{checkpoint_id}/"


def writes_url(checkpoint_id: str, conversation_id: str = "c1") -> str:
    return f"{checkpoint_url(checkpoint_id, conversation_id)}writes/"


def save(api: Any, checkpoint_id: str | None = None, conversation_id: str = "c1", **body: Any) -> dict[str, Any]:
    body.setdefault("state", {"channel_values": {"messages": [f"state of {checkpoint_id}"]}, "v": 1})
    if checkpoint_id is not None:
        body["checkpoint_id"] = checkpoint_id
    answer = api.post(checkpoints_url(conversation_id), body, format="json")
    assert answer.status_code in (200, 201), answer.content
    return answer.json()


def put_writes(api: Any, checkpoint_id: str, task_id: str, writes: list[dict[str, Any]], **body: Any) -> Any:
    return api.post(writes_url(checkpoint_id), {"task_id": task_id, "writes": writes, **body}, format="json")


def listed(api: Any, conversation_id: str = "c1", **query: Any) -> list[str]:
    answer = api.get(checkpoints_url(conversation_id), query)
    assert answer.status_code == 200, answer.content
    assert answer.json()["count"] == len(answer.json()["checkpoints"])
    return [checkpoint["checkpoint_id"] for checkpoint in answer.json()["checkpoints"]]


def stored_ids(tenant: Any, namespace: str = "", conversation_id: str = "c1") -> list[str]:
    rows = Checkpoint.objects.for_tenant(tenant).filter(conversation__conversation_id=conversation_id, namespace=namespace)
    rows = rows.order_by("id")
    return list(rows.values_list("checkpoint_id", flat=True))


# --- Save and load -----------------------------------------------------------------------------------


def test_saving_a_checkpoint_answers_201_with_it_and_creates_the_conversation(api, tenant):
    answer = api.post(
        checkpoints_url("agent-7"),
        {"checkpoint_id": "1ef4f797-8335-6428-8001-8a1503f9b875", "state": {"step": 1}, "metadata": {"source": "loop"}},
        format="json",
    )

    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert {key: body[key] for key in body if key != "created_at"} == {
        "conversation_id": "agent-7",
        "namespace": "",
        "checkpoint_id": "1ef4f797-8335-6428-8001-8a1503f9b875",
        "parent_id": None,
        "state": {"step": 1},
        "metadata": {"source": "loop"},
        "writes": [],
    }
    assert body["created_at"].endswith("+00:00")
    assert Conversation.objects.for_tenant(tenant).filter(conversation_id="agent-7").exists()


def test_a_checkpoint_sent_without_an_id_gets_a_uuid(api, tenant):
    saved = save(api)

    assert len(saved["checkpoint_id"]) == 36
    assert api.get(checkpoint_url(saved["checkpoint_id"])).json()["checkpoint_id"] == saved["checkpoint_id"]


def test_the_latest_is_the_last_saved_whatever_the_order_of_the_ids(api, tenant):
    save(api, "zzz", state={"n": 1})
    save(api, "aaa", state={"n": 2}, parent_id="zzz")

    answer = api.get(latest_url())

    assert answer.status_code == 200, answer.content
    assert (answer.json()["checkpoint_id"], answer.json()["parent_id"], answer.json()["state"]) == ("aaa", "zzz", {"n": 2})


def test_a_checkpoint_loads_by_id_and_an_unknown_id_is_a_404(api, tenant):
    save(api, "first", state={"n": 1})
    save(api, "second", state={"n": 2}, parent_id="first")

    found = api.get(checkpoint_url("first"))
    missing = api.get(checkpoint_url("third"))
    malformed = api.get(checkpoint_url("-not-an-id"))

    assert found.status_code == 200, found.content
    assert (found.json()["state"], found.json()["parent_id"]) == ({"n": 1}, None)
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    assert malformed.status_code == 404


def test_a_conversation_without_checkpoints_has_no_latest(api, tenant):
    save(api, "root-only")

    unknown_conversation = api.get(latest_url("never-seen"))
    empty_namespace = api.get(latest_url(), {"namespace": "sub:1"})

    assert (unknown_conversation.status_code, unknown_conversation.json()["error"]["code"]) == (404, "not_found")
    assert (empty_namespace.status_code, empty_namespace.json()["error"]["code"]) == (404, "not_found")


def test_the_list_is_newest_first_across_namespaces_unless_one_is_named(api, tenant):
    save(api, "r1")
    save(api, "s1", namespace="tools:6a1b|inner:9f2c")
    save(api, "r2")

    assert listed(api) == ["r2", "s1", "r1"]
    assert listed(api, namespace="") == ["r2", "r1"]
    assert listed(api, namespace="tools:6a1b|inner:9f2c") == ["s1"]
    assert listed(api, namespace="unknown") == []


def test_namespaces_are_isolated_even_for_the_same_checkpoint_id(api, tenant):
    save(api, "same", state={"where": "root"})
    save(api, "same", namespace="sub:1", state={"where": "sub"})
    save(api, "only-in-sub", namespace="sub:1")

    assert api.get(checkpoint_url("same")).json()["state"] == {"where": "root"}
    assert api.get(checkpoint_url("same"), {"namespace": "sub:1"}).json()["state"] == {"where": "sub"}
    assert api.get(checkpoint_url("only-in-sub")).status_code == 404
    assert api.get(latest_url()).json()["checkpoint_id"] == "same"
    assert api.get(latest_url(), {"namespace": "sub:1"}).json()["checkpoint_id"] == "only-in-sub"
    assert Checkpoint.objects.for_tenant(tenant).count() == 3


def test_before_and_limit_page_back_through_the_list(api, tenant):
    for number in range(1, 8):
        save(api, f"cp{number}")
    save(api, "elsewhere", namespace="sub:1")

    first = listed(api, namespace="", limit=3)
    second = listed(api, namespace="", limit=3, before=first[-1])
    third = listed(api, namespace="", limit=3, before=second[-1])

    assert (first, second, third) == (["cp7", "cp6", "cp5"], ["cp4", "cp3", "cp2"], ["cp1"])
    assert listed(api, before="elsewhere") == ["cp7", "cp6", "cp5", "cp4", "cp3", "cp2", "cp1"]
    assert listed(api, limit=2) == ["elsewhere", "cp7"]


def test_before_an_unknown_checkpoint_or_one_of_another_namespace_is_a_404(api, tenant):
    save(api, "cp1")
    save(api, "sub-cp", namespace="sub:1")

    unknown = api.get(checkpoints_url(), {"before": "nope"})
    other_namespace = api.get(checkpoints_url(), {"before": "sub-cp", "namespace": ""})

    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    assert other_namespace.status_code == 404


def test_a_page_size_over_the_limit_is_a_400_naming_it(api, tenant, settings):
    settings.MEMORY_MAX_PAGE_SIZE = 5
    save(api, "cp1")

    over = api.get(checkpoints_url(), {"limit": 6})
    zero = api.get(checkpoints_url(), {"limit": 0})

    assert over.status_code == 400
    assert (over.json()["error"]["code"], "MEMORY_MAX_PAGE_SIZE" in over.json()["error"]["message"]) == ("limit_exceeded", True)
    assert zero.status_code == 400
    assert listed(api, limit=5) == ["cp1"]


def test_the_list_reads_writes_in_one_query_whatever_the_number_of_checkpoints(api, tenant):
    def queries_for_list_of(count: int) -> int:
        Checkpoint.objects.for_tenant(tenant).delete()
        for number in range(count):
            save(api, f"cp{number}")
            assert put_writes(api, f"cp{number}", "t1", [{"idx": 0, "channel": "messages", "value": number}]).status_code == 200
        with CaptureQueriesContext(connection) as context:
            assert len(listed(api)) == count
        return len(context.captured_queries)

    assert queries_for_list_of(2) == queries_for_list_of(10)


# --- Upsert ---------------------------------------------------------------------------------------------


def test_saving_an_existing_id_replaces_it_in_place_and_keeps_its_writes(api, tenant):
    save(api, "cp1", state={"n": 1}, metadata={"step": 1})
    save(api, "cp2", state={"n": 2})
    put_writes(api, "cp1", "task-a", [{"idx": 0, "channel": "messages", "value": "hello"}])

    answer = api.post(
        checkpoints_url(),
        {"checkpoint_id": "cp1", "state": {"n": 10}, "metadata": {"step": 10}, "parent_id": "cp0"},
        format="json",
    )

    assert answer.status_code == 200, answer.content
    replaced = answer.json()
    assert (replaced["state"], replaced["metadata"], replaced["parent_id"]) == ({"n": 10}, {"step": 10}, "cp0")
    assert [write["value"] for write in replaced["writes"]] == ["hello"]
    assert listed(api) == ["cp2", "cp1"]
    assert api.get(latest_url()).json()["checkpoint_id"] == "cp2"
    assert Checkpoint.objects.for_tenant(tenant).count() == 2


def test_a_replaced_checkpoint_sent_without_a_parent_loses_it(api, tenant):
    save(api, "cp1", parent_id="cp0")

    replaced = save(api, "cp1", parent_id=None)

    assert replaced["parent_id"] is None
    assert Checkpoint.objects.for_tenant(tenant).get(checkpoint_id="cp1").parent_id == ""


# --- Pending writes ---------------------------------------------------------------------------------------


# Floats of 1e16 and more are written 1e+16, which jsonb alone would give back as ints.
NUMBERS = {"big": 1e16, "bigger": -2.5e17, "largest": 1.7976931348623157e308, "whole": 3.0, "count": 7, "text": "1e+16"}


def test_floats_of_1e16_and_more_come_back_as_floats_in_state_metadata_and_writes(api, tenant):
    save(api, "cp1", state={"channel_values": {"numbers": NUMBERS}}, metadata={"step": 1, "numbers": NUMBERS})
    put_writes(api, "cp1", "task-a", [{"idx": 0, "channel": "numbers", "value": NUMBERS}])

    loaded = api.get(checkpoint_url("cp1")).json()
    (listed_one,) = api.get(checkpoints_url()).json()["checkpoints"]

    for checkpoint in (loaded, listed_one, api.get(latest_url()).json()):
        for numbers in (
            checkpoint["state"]["channel_values"]["numbers"],
            checkpoint["metadata"]["numbers"],
            checkpoint["writes"][0]["value"],
        ):
            assert numbers == NUMBERS
            assert {name: type(number) for name, number in numbers.items()} == {
                name: type(number) for name, number in NUMBERS.items()
            }


def test_a_write_with_a_non_negative_idx_is_kept_first_write_wins(api, tenant):
    save(api, "cp1")

    task = {"task_id": "task-a", "task_path": "~__pregel_pull, agent"}

    first = put_writes(api, "cp1", writes=[{"idx": 0, "channel": "messages", "value": "first"}], **task)
    retry = put_writes(
        api,
        "cp1",
        writes=[{"idx": 0, "channel": "messages", "value": "second"}, {"idx": 1, "channel": "tools", "value": {"call": 1}}],
        **task,
    )

    assert first.status_code == 200, first.content
    assert first.json() == {"conversation_id": "c1", "checkpoint_id": "cp1", "namespace": "", "written": 1}
    assert retry.json()["written"] == 2
    writes = api.get(checkpoint_url("cp1")).json()["writes"]
    assert [(write["idx"], write["channel"], write["value"]) for write in writes] == [
        (0, "messages", "first"),
        (1, "tools", {"call": 1}),
    ]
    assert {write["task_path"] for write in writes} == {"~__pregel_pull, agent"}


def test_a_write_with_a_negative_idx_replaces_the_stored_one(api, tenant):
    save(api, "cp1")

    put_writes(api, "cp1", "task-a", [{"idx": -1, "channel": "__error__", "value": "first failure"}])
    put_writes(api, "cp1", "task-a", [{"idx": -1, "channel": "__error__", "value": "second failure"}])
    put_writes(api, "cp1", "task-a", [{"idx": -3, "channel": "__interrupt__", "value": None}])

    writes = api.get(checkpoint_url("cp1")).json()["writes"]
    assert [(write["idx"], write["channel"], write["value"]) for write in writes] == [
        (-3, "__interrupt__", None),
        (-1, "__error__", "second failure"),
    ]
    assert CheckpointWrite.objects.for_tenant(tenant).count() == 2


def test_writes_come_back_ordered_by_task_path_task_id_and_idx(api, tenant):
    save(api, "cp1")
    put_writes(
        api, "cp1", "task-b", [{"idx": 1, "channel": "c", "value": 1}, {"idx": 0, "channel": "c", "value": 0}], task_path="b"
    )
    put_writes(api, "cp1", "task-z", [{"idx": 0, "channel": "c", "value": 0}], task_path="a")
    put_writes(api, "cp1", "task-a", [{"idx": 0, "channel": "c", "value": 0}], task_path="b")

    writes = api.get(checkpoint_url("cp1")).json()["writes"]

    assert [(write["task_path"], write["task_id"], write["idx"]) for write in writes] == [
        ("a", "task-z", 0),
        ("b", "task-a", 0),
        ("b", "task-b", 0),
        ("b", "task-b", 1),
    ]


def test_writes_go_to_the_checkpoint_of_the_namespace_named(api, tenant):
    save(api, "same")
    save(api, "same", namespace="sub:1")

    answer = put_writes(api, "same", "task-a", [{"idx": 0, "channel": "c", "value": "sub"}], namespace="sub:1")

    assert answer.json()["namespace"] == "sub:1"
    assert api.get(checkpoint_url("same")).json()["writes"] == []
    assert [write["value"] for write in api.get(checkpoint_url("same"), {"namespace": "sub:1"}).json()["writes"]] == ["sub"]


def test_writes_to_a_missing_checkpoint_or_conversation_are_a_404_and_store_nothing(api, tenant):
    save(api, "cp1")
    write = [{"idx": 0, "channel": "c", "value": 1}]

    missing_checkpoint = put_writes(api, "cp2", "task-a", write)
    other_namespace = put_writes(api, "cp1", "task-a", write, namespace="sub:1")
    missing_conversation = api.post(writes_url("cp1", "c2"), {"task_id": "task-a", "writes": write}, format="json")

    assert [missing_checkpoint.status_code, other_namespace.status_code, missing_conversation.status_code] == [404, 404, 404]
    assert missing_checkpoint.json()["error"]["code"] == "not_found"
    assert CheckpointWrite.objects.for_tenant(tenant).count() == 0


# --- Retention -------------------------------------------------------------------------------------------


def test_retention_keeps_exactly_the_newest_n_of_each_conversation_and_namespace(api, tenant):
    tenant.settings = {"MEMORY_MAX_CHECKPOINTS": 3}
    tenant.save()
    for number in range(1, 5):
        save(api, f"sub{number}", namespace="sub:1")
    save(api, "other-conversation", conversation_id="c2")
    for number in range(1, 7):
        save(api, f"cp{number}")
        put_writes(api, f"cp{number}", "task-a", [{"idx": 0, "channel": "c", "value": number}])

    assert listed(api, namespace="") == ["cp6", "cp5", "cp4"]
    assert stored_ids(tenant) == ["cp4", "cp5", "cp6"]
    assert stored_ids(tenant, conversation_id="c2") == ["other-conversation"]
    assert stored_ids(tenant, namespace="sub:1") == ["sub2", "sub3", "sub4"]
    assert sorted(CheckpointWrite.objects.for_tenant(tenant).values_list("value", flat=True)) == [4, 5, 6]


def test_replacing_a_checkpoint_keeps_its_place_in_retention(api, tenant):
    tenant.settings = {"MEMORY_MAX_CHECKPOINTS": 2}
    tenant.save()
    save(api, "cp1")
    save(api, "cp2")

    save(api, "cp1", state={"replaced": True})
    save(api, "cp3")

    assert listed(api) == ["cp3", "cp2"]


def test_retention_keeps_at_least_the_checkpoint_just_saved(api, tenant):
    tenant.settings = {"MEMORY_MAX_CHECKPOINTS": 0}
    tenant.save()

    save(api, "cp1")
    save(api, "cp2")

    assert listed(api) == ["cp2"]


def test_retention_deletes_in_the_same_statements_whatever_the_number_expired(tenant):
    def statements_to_save_one_more(conversation_id: str, existing: int) -> int:
        tenant.settings = {}
        for number in range(existing):
            services.checkpoint_save(tenant=tenant, conversation_id=conversation_id, checkpoint_id=f"cp{number}", state={})
            services.checkpoint_writes_save(
                tenant=tenant,
                conversation_id=conversation_id,
                checkpoint_id=f"cp{number}",
                task_id="t",
                writes=[{"idx": 0, "channel": "c", "value": number}],
            )
        tenant.settings = {"MEMORY_MAX_CHECKPOINTS": 1}
        with CaptureQueriesContext(connection) as context:
            services.checkpoint_save(tenant=tenant, conversation_id=conversation_id, checkpoint_id="last", state={})
        return len(context.captured_queries)

    assert statements_to_save_one_more("small", 2) == statements_to_save_one_more("large", 12)
    remaining = Checkpoint.objects.for_tenant(tenant).values_list("conversation__conversation_id", "checkpoint_id")
    assert sorted(remaining) == [("large", "last"), ("small", "last")]
    assert CheckpointWrite.objects.for_tenant(tenant).count() == 0


# --- Bounded and well-formed input ----------------------------------------------------------------------


def test_a_checkpoint_over_the_size_limit_is_a_400_naming_it_and_nothing_is_written(api, tenant, settings):
    settings.MEMORY_MAX_CHECKPOINT_BYTES = 100
    state = {"text": "é" * 40}  # 80 bytes of UTF-8 for 40 characters
    size = len(json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode()) + len(
        json.dumps({"n": "1234567890"}, separators=(",", ":")).encode()
    )

    answer = api.post(checkpoints_url(), {"state": state, "metadata": {"n": "1234567890"}}, format="json")

    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "limit_exceeded"
    assert "MEMORY_MAX_CHECKPOINT_BYTES" in error["message"]
    assert str(size) in error["message"]
    assert not Conversation.objects.for_tenant(tenant).exists()
    assert not Checkpoint.objects.for_tenant(tenant).exists()


def test_writes_over_the_size_or_batch_limit_are_a_400_and_nothing_is_written(api, tenant, settings):
    save(api, "cp1")
    settings.MEMORY_MAX_CHECKPOINT_BYTES = 50
    settings.MEMORY_MAX_BATCH = 2

    too_big = put_writes(
        api, "cp1", "t", [{"idx": 0, "channel": "c", "value": "x" * 30}, {"idx": 1, "channel": "c", "value": "y" * 30}]
    )
    too_many = put_writes(api, "cp1", "t", [{"idx": n, "channel": "c", "value": n} for n in range(3)])

    assert (too_big.status_code, too_big.json()["error"]["code"]) == (400, "limit_exceeded")
    assert "MEMORY_MAX_CHECKPOINT_BYTES" in too_big.json()["error"]["message"]
    assert (too_many.status_code, too_many.json()["error"]["code"]) == (400, "limit_exceeded")
    assert "MEMORY_MAX_BATCH" in too_many.json()["error"]["message"]
    assert CheckpointWrite.objects.for_tenant(tenant).count() == 0


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"state": [1, 2]},
        {"state": "a string"},
        {"state": None},
        {"state": {}, "metadata": ["not", "an", "object"]},
        {"state": {}, "metadata": None},
        {"state": {"text": "nul \u0000 inside"}},
        {"state": {}, "checkpoint_id": "-starts-with-a-symbol"},
        {"state": {}, "checkpoint_id": "has space"},
        {"state": {}, "checkpoint_id": "x" * 65},
        {"state": {}, "checkpoint_id": ""},
        {"state": {}, "parent_id": "has/slash"},
        {"state": {}, "namespace": "line\nbreak"},
        {"state": {}, "namespace": "n" * 256},
    ],
)
def test_a_malformed_checkpoint_is_a_400_and_nothing_is_written(api, tenant, body):
    answer = api.post(checkpoints_url(), body, format="json")

    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["code"] == "validation_error"
    assert not Checkpoint.objects.for_tenant(tenant).exists()
    assert not Conversation.objects.for_tenant(tenant).exists()


@pytest.mark.parametrize(
    "body",
    [
        {"writes": [{"idx": 0, "channel": "c", "value": 1}]},
        {"task_id": "", "writes": [{"idx": 0, "channel": "c", "value": 1}]},
        {"task_id": "t", "writes": []},
        {"task_id": "t", "writes": [{"idx": "first", "channel": "c", "value": 1}]},
        {"task_id": "t", "writes": [{"idx": 0, "channel": "", "value": 1}]},
        {"task_id": "t", "writes": [{"idx": 0, "channel": "c"}]},
        {"task_id": "t", "writes": [{"idx": 0, "channel": "c", "value": ["nul \u0000"]}]},
        {"task_id": "t", "task_path": "p" * 513, "writes": [{"idx": 0, "channel": "c", "value": 1}]},
    ],
)
def test_malformed_writes_are_a_400_and_nothing_is_written(api, tenant, body):
    save(api, "cp1")

    answer = api.post(writes_url("cp1"), body, format="json")

    assert answer.status_code == 400, answer.content
    assert CheckpointWrite.objects.for_tenant(tenant).count() == 0


def test_a_checkpoint_id_may_use_every_allowed_symbol_and_64_characters(api, tenant):
    checkpoint_id = "A1._:=+-" + "x" * 56

    save(api, checkpoint_id)

    assert api.get(checkpoint_url(checkpoint_id)).json()["checkpoint_id"] == checkpoint_id
    assert put_writes(api, checkpoint_id, "t", [{"idx": 0, "channel": "c", "value": 1}]).status_code == 200


def test_an_invalid_conversation_id_is_a_400_on_save_and_a_404_on_reads(api, tenant):
    saved = api.post(checkpoints_url("has space"), {"state": {}}, format="json")
    read = api.get(latest_url("has space"))

    assert saved.status_code == 400
    assert "conversation_id" in saved.json()["error"]["details"]
    assert read.status_code == 404
    assert not Conversation.objects.for_tenant(tenant).exists()


# --- Tenancy ----------------------------------------------------------------------------------------------


def test_another_tenants_key_gets_404_everywhere_and_changes_nothing(api, other_api, tenant, other_tenant):
    save(api, "cp1", state={"secret": "acme"})
    put_writes(api, "cp1", "task-a", [{"idx": -1, "channel": "__error__", "value": "acme"}])
    before = (
        api.get(checkpoints_url()).json(),
        list(CheckpointWrite.objects.for_tenant(tenant).values_list("value", flat=True)),
    )

    answers = {
        "list": other_api.get(checkpoints_url()),
        "latest": other_api.get(latest_url()),
        "by id": other_api.get(checkpoint_url("cp1")),
        "writes": put_writes(other_api, "cp1", "task-a", [{"idx": -1, "channel": "__error__", "value": "globex"}]),
        "delete": other_api.delete(checkpoints_url()),
        "delete a namespace": other_api.delete(f"{checkpoints_url()}?namespace="),
    }

    assert {name: answer.status_code for name, answer in answers.items()} == dict.fromkeys(answers, 404)
    assert "acme" not in json.dumps([answer.json() for answer in answers.values()])
    after = (
        api.get(checkpoints_url()).json(),
        list(CheckpointWrite.objects.for_tenant(tenant).values_list("value", flat=True)),
    )
    assert after == before
    assert not Checkpoint.objects.for_tenant(other_tenant).exists()


def test_another_tenant_saving_the_same_ids_gets_its_own_conversation_and_checkpoint(api, other_api, tenant, other_tenant):
    save(api, "cp1", state={"owner": "acme"})

    theirs = other_api.post(checkpoints_url(), {"checkpoint_id": "cp1", "state": {"owner": "globex"}}, format="json")

    assert theirs.status_code == 201, theirs.content
    assert api.get(checkpoint_url("cp1")).json()["state"] == {"owner": "acme"}
    assert other_api.get(checkpoint_url("cp1")).json()["state"] == {"owner": "globex"}
    assert Conversation.objects.for_tenant(other_tenant).count() == 1


def test_an_unscoped_checkpoint_query_raises(tenant):
    with pytest.raises(TenantScopeError):
        Checkpoint.objects.filter(checkpoint_id="cp1").count()
    with pytest.raises(TenantScopeError):
        list(CheckpointWrite.objects.all())


# --- Deleting ---------------------------------------------------------------------------------------------


def test_delete_removes_every_checkpoint_or_one_namespace_with_their_writes(api, tenant):
    save(api, "cp1")
    save(api, "cp2")
    save(api, "sub1", namespace="sub:1")
    save(api, "kept", conversation_id="c2")
    put_writes(api, "cp1", "t", [{"idx": 0, "channel": "c", "value": 1}])

    one_namespace = api.delete(f"{checkpoints_url()}?namespace=sub:1")
    root = api.delete(f"{checkpoints_url()}?namespace=")
    again = api.delete(checkpoints_url())

    assert one_namespace.json() == {"conversation_id": "c1", "deleted": 1}
    assert root.json() == {"conversation_id": "c1", "deleted": 2}
    assert again.json() == {"conversation_id": "c1", "deleted": 0}
    assert stored_ids(tenant) == []
    assert stored_ids(tenant, conversation_id="c2") == ["kept"]
    assert CheckpointWrite.objects.for_tenant(tenant).count() == 0


def test_delete_without_a_namespace_removes_every_namespace(api, tenant):
    save(api, "cp1")
    save(api, "sub1", namespace="sub:1")

    answer = api.delete(checkpoints_url())

    assert answer.json() == {"conversation_id": "c1", "deleted": 2}
    assert listed(api) == []


def test_delete_of_an_unknown_conversation_is_a_404(api, tenant):
    answer = api.delete(checkpoints_url("never-seen"))

    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")


def test_erasing_the_conversation_removes_its_checkpoints_and_writes(api, tenant):
    save(api, "cp1")
    save(api, "sub1", namespace="sub:1")
    save(api, "kept", conversation_id="c2")
    put_writes(api, "cp1", "t", [{"idx": 0, "channel": "c", "value": 1}])

    erased = api.delete("/api/v1/conversations/c1/")

    assert erased.status_code == 200, erased.content
    assert stored_ids(tenant) == []
    assert stored_ids(tenant, conversation_id="c2") == ["kept"]
    assert stored_ids(tenant, namespace="sub:1") == []
    assert CheckpointWrite.objects.for_tenant(tenant).count() == 0
    assert api.get(latest_url()).status_code == 404


# --- PostgreSQL unreachable ---------------------------------------------------------------------------


@contextmanager
def postgres_unreachable() -> Iterator[None]:
    """Point this process's database connection at a port where nothing listens."""
    db = connection.settings_dict
    original = (db["HOST"], db["PORT"])
    connection.close()
    db["HOST"], db["PORT"] = "127.0.0.1", str(free_port())
    try:
        with pytest.raises(OperationalError):
            connection.ensure_connection()  # the outage is real
        yield
    finally:
        connection.close()
        db["HOST"], db["PORT"] = original


def test_with_postgres_down_saves_and_reads_answer_503_and_nothing_is_stored(api, tenant, transactional_db):
    save(api, "before")  # also caches the API key, so that requests still authenticate

    with postgres_unreachable():
        saved = api.post(checkpoints_url(), {"checkpoint_id": "during", "state": {}}, format="json")
        read = api.get(latest_url())
        written = put_writes(api, "before", "t", [{"idx": 0, "channel": "c", "value": 1}])

    for answer in (saved, read, written):
        assert answer.status_code == 503, answer.content
        assert answer.json()["error"]["code"] == "database_unavailable"
        assert answer["Retry-After"]
    assert stored_ids(tenant) == ["before"]
    assert CheckpointWrite.objects.for_tenant(tenant).count() == 0
