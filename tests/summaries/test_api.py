"""The summaries API end to end: list a conversation's summaries, ask for one now.

``api`` is a client of acme (``tenant``); ``other_api`` one of globex, which must never see or make
acme's summaries.
"""

import json
from typing import Any

from summaries import services
from summaries.models import Summary
from tests.summaries.conftest import pairs, store


def summaries_url(conversation_id: str = "c1") -> str:
    return f"/api/v1/conversations/{conversation_id}/summaries/"


def summarised_at(tenant: Any, conversation_id: str, *pair_counts: int) -> None:
    """A conversation with a periodic summary at each of ``pair_counts``."""
    done = 0
    for pair_count in pair_counts:
        store(tenant, conversation_id, pairs(done + 1, pair_count))
        done = pair_count
        assert services.conversation_summarize(tenant=tenant, conversation_id=conversation_id) is not None


def test_the_list_shows_the_conversations_summaries_newest_first(api, tenant):
    summarised_at(tenant, "c1", 10, 20)

    answer = api.get(summaries_url())

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["conversation_id"] == "c1"
    assert [summary["pair_count"] for summary in body["summaries"]] == [20, 10]
    newest = body["summaries"][0]
    assert set(newest) == {"text", "model", "message_count", "pair_count", "first_seq", "last_seq", "token_count", "created_at"}
    assert (newest["model"], newest["message_count"], newest["first_seq"], newest["last_seq"]) == ("rule_based", 12, 29, 40)
    assert "User: question 20\nAssistant: answer 20" in newest["text"]
    assert "question 14" not in newest["text"]
    assert newest["token_count"] > 0
    assert newest["created_at"].endswith("+00:00")


def test_a_conversation_without_summaries_lists_none(api, tenant):
    store(tenant, "c1", pairs(1, 3))

    answer = api.get(summaries_url())

    assert answer.status_code == 200, answer.content
    assert answer.json() == {"conversation_id": "c1", "summaries": []}


def test_limit_keeps_the_newest(api, tenant):
    tenant.settings = {"MEMORY_SUMMARY_EVERY": 1}
    tenant.save()
    summarised_at(tenant, "c1", 1, 2, 3)

    answer = api.get(summaries_url(), {"limit": 2})

    assert [summary["pair_count"] for summary in answer.json()["summaries"]] == [3, 2]


def test_a_limit_over_the_page_size_or_not_a_number_is_a_400_naming_it(api, tenant, settings):
    settings.MEMORY_MAX_PAGE_SIZE = 50
    store(tenant, "c1", pairs(1, 1))

    too_many = api.get(summaries_url(), {"limit": 51})
    zero = api.get(summaries_url(), {"limit": 0})
    words = api.get(summaries_url(), {"limit": "many"})

    assert (too_many.status_code, too_many.json()["error"]["code"]) == (400, "limit_exceeded")
    assert "MEMORY_MAX_PAGE_SIZE=50" in too_many.json()["error"]["message"]
    assert zero.status_code == 400
    assert "limit" in zero.content.decode()
    assert words.status_code == 400


def test_a_missing_conversation_is_a_404(api, tenant):
    missing = api.get(summaries_url("nobody"))
    malformed = api.get(summaries_url("x" * 300))

    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    assert malformed.status_code == 404


def test_post_summarises_the_last_window_now(api, tenant):
    store(tenant, "c1", [*pairs(1, 6), ("user", "question 7")])

    answer = api.post(summaries_url(), format="json")

    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert (body["conversation_id"], body["pair_count"], body["first_seq"], body["last_seq"], body["message_count"]) == (
        "c1",
        7,
        2,
        13,
        12,
    )
    assert body["model"] == "rule_based"
    assert "question 7" in body["text"]
    assert api.get(summaries_url()).json()["summaries"][0]["last_seq"] == 13


def test_post_again_at_the_same_pair_count_returns_the_same_summary(api, tenant):
    store(tenant, "c1", pairs(1, 2))

    first = api.post(summaries_url(), format="json")
    second = api.post(summaries_url(), format="json")

    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    assert Summary.objects.for_tenant(tenant).count() == 1


def test_post_uses_the_chat_model_of_the_settings(api, tenant, fake_model):
    store(tenant, "c1", pairs(1, 2))

    answer = api.post(summaries_url(), format="json")

    assert answer.status_code == 201, answer.content
    assert answer.json()["model"] == fake_model.MODEL_NAME
    assert answer.json()["text"].startswith("- The user is planning a trip to Lisbon")
    assert fake_model.calls.built[0]["temperature"] == 0.2


def test_post_for_a_missing_or_empty_conversation_writes_nothing(api, tenant):
    store(tenant, "empty", [])

    missing = api.post(summaries_url("nobody"), format="json")
    empty = api.post(summaries_url("empty"), format="json")

    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    assert (empty.status_code, empty.json()["error"]["code"]) == (409, "conflict")
    assert not Summary.objects.for_tenant(tenant).exists()


def test_the_api_needs_a_key(client, tenant):
    store(tenant, "c1", pairs(1, 1))

    assert client.get(summaries_url()).status_code in (401, 403)
    assert client.post(summaries_url()).status_code in (401, 403)
    assert not Summary.objects.for_tenant(tenant).exists()


# --- Two tenants ------------------------------------------------------------------------------------------


def test_another_tenants_conversation_answers_404_and_its_summaries_never_show(api, other_api, tenant, other_tenant):
    summarised_at(tenant, "acme-chat", 10)
    summarised_at(other_tenant, "shared-id", 10)
    summarised_at(tenant, "shared-id", 10)
    store(tenant, "shared-id", [("user", "acme's own question")])

    foreign_list = other_api.get(summaries_url("acme-chat"))
    foreign_post = other_api.post(summaries_url("acme-chat"), format="json")
    own = api.get(summaries_url("shared-id")).json()["summaries"]
    theirs = other_api.get(summaries_url("shared-id")).json()["summaries"]

    assert foreign_list.status_code == foreign_post.status_code == 404
    assert Summary.objects.for_tenant(other_tenant).count() == 1
    assert len(own) == len(theirs) == 1
    assert Summary.objects.for_tenant(tenant).count() == 2
    assert {row.tenant_id for row in Summary.objects.for_tenant(other_tenant)} == {other_tenant.pk}


def test_the_schema_documents_both_operations(client, db):
    schema = client.get("/api/schema/", {"format": "json"})

    assert schema.status_code == 200
    operations = json.loads(schema.content)["paths"]["/api/v1/conversations/{conversation_id}/summaries/"]
    assert operations["get"]["operationId"] == "conversations_summaries_list"
    assert operations["post"]["operationId"] == "conversations_summaries_create"
