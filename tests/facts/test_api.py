"""The user facts API end to end (the memory bundle's ``memories``), against the real PostgreSQL.

``api`` is a client of acme (``tenant``); ``other_api`` one of globex, whose user "u1" is another
user than acme's "u1" and must never see or change acme's facts.
"""

import json
from typing import Any
from urllib.parse import quote

import pytest

from conversations import tokens
from facts.models import UserFact, UserFactChange


def facts_url(user_id: str = "u1") -> str:
    return f"/api/v1/users/{quote(user_id, safe='')}/facts/"


def fact_url(key: str, user_id: str = "u1") -> str:
    return f"{facts_url(user_id)}{quote(key, safe='')}/"


def history_url(key: str | None = None, user_id: str = "u1") -> str:
    return f"{fact_url(key, user_id)}history/" if key is not None else f"{facts_url(user_id)}history/"


def put(api: Any, key: str, value: Any, user_id: str = "u1") -> Any:
    return api.put(fact_url(key, user_id), {"value": value}, format="json")


def listed(api: Any, user_id: str = "u1", **query: Any) -> dict[str, str]:
    answer = api.get(facts_url(user_id), query)
    assert answer.status_code == 200, answer.content
    return {fact["key"]: fact["value"] for fact in answer.json()["facts"]}


def history(api: Any, key: str | None = None, user_id: str = "u1", **query: Any) -> list[tuple[str, str, str, str | None]]:
    answer = api.get(history_url(key, user_id), query)
    assert answer.status_code == 200, answer.content
    return [(change["key"], change["action"], change["value"], change["previous_value"]) for change in answer.json()["results"]]


def stored_rows(tenant: Any) -> tuple[int, int]:
    return UserFact.objects.for_tenant(tenant).count(), UserFactChange.objects.for_tenant(tenant).count()


# --- Create, read, update, delete -------------------------------------------------------------------


def test_putting_a_new_fact_answers_201_with_it_and_its_token_count(api, tenant):
    answer = put(api, "favourite_language", "Python")

    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert (body["key"], body["value"]) == ("favourite_language", "Python")
    assert body["token_count"] == tokens.count("favourite_language: Python")
    assert body["created_at"] == body["updated_at"]
    assert api.get(fact_url("favourite_language")).json() == body


def test_putting_a_new_value_answers_200_and_the_fact_holds_it(api, tenant):
    put(api, "city", "Lisbon")

    answer = put(api, "city", "Porto")

    assert answer.status_code == 200, answer.content
    assert answer.json()["value"] == "Porto"
    assert answer.json()["token_count"] == tokens.count("city: Porto")
    assert answer.json()["updated_at"] > answer.json()["created_at"]
    assert listed(api) == {"city": "Porto"}


def test_the_list_is_most_recently_updated_first_with_the_total_of_tokens(api, tenant):
    put(api, "name", "Ada")
    put(api, "city", "London")
    put(api, "name", "Ada Lovelace")

    answer = api.get(facts_url())

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["user_id"] == "u1"
    assert [fact["key"] for fact in body["facts"]] == ["name", "city"]
    assert set(body["facts"][0]) == {"key", "value", "token_count", "created_at", "updated_at"}
    assert body["total_tokens"] == tokens.count("name: Ada Lovelace") + tokens.count("city: London")
    assert list(listed(api, limit=1)) == ["name"]


def test_a_user_without_facts_has_an_empty_list(api, tenant):
    answer = api.get(facts_url("nobody"))

    assert answer.status_code == 200
    assert answer.json() == {"user_id": "nobody", "facts": [], "total_tokens": 0}


def test_deleting_a_fact_answers_204_and_it_is_gone_but_a_second_delete_is_a_404(api, tenant):
    put(api, "city", "Lisbon")

    deleted = api.delete(fact_url("city"))
    again = api.delete(fact_url("city"))

    assert deleted.status_code == 204
    assert api.get(fact_url("city")).status_code == 404
    assert (again.status_code, again.json()["error"]["code"]) == (404, "not_found")
    assert listed(api) == {}


def test_an_unknown_fact_is_a_404(api, tenant):
    answer = api.get(fact_url("never-set"))

    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")


def test_posting_a_batch_sets_every_fact_and_answers_201_when_one_is_new(api, tenant):
    put(api, "name", "Ada")

    answer = api.post(facts_url(), {"facts": {"name": "Ada", "city": "London", "pet": "cat"}}, format="json")

    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert [fact["key"] for fact in body["facts"]] == ["name", "city", "pet"]  # the order sent
    assert body["created"] == ["city", "pet"]
    assert listed(api) == {"name": "Ada", "city": "London", "pet": "cat"}


def test_posting_a_batch_of_existing_facts_answers_200(api, tenant):
    api.post(facts_url(), {"facts": {"name": "Ada", "city": "London"}}, format="json")

    answer = api.post(facts_url(), {"facts": {"name": "Ada", "city": "Paris"}}, format="json")

    assert answer.status_code == 200, answer.content
    assert answer.json()["created"] == []
    assert listed(api) == {"name": "Ada", "city": "Paris"}


def test_posting_one_key_and_value_sets_that_fact(api, tenant):
    answer = api.post(facts_url(), {"key": "diet", "value": "vegetarian"}, format="json")

    assert answer.status_code == 201, answer.content
    assert [fact["key"] for fact in answer.json()["facts"]] == ["diet"]
    assert listed(api) == {"diet": "vegetarian"}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"facts": {}},
        {"facts": {"a": "b"}, "key": "c", "value": "d"},
        {"key": "only-a-key"},
        {"value": "only-a-value"},
        {"facts": ["a", "b"]},
    ],
)
def test_a_post_that_is_neither_a_batch_nor_one_fact_is_a_400_and_writes_nothing(api, tenant, body):
    answer = api.post(facts_url(), body, format="json")

    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "validation_error"), answer.content
    assert stored_rows(tenant) == (0, 0)


def test_keys_with_spaces_and_non_ascii_letters_work_through_their_encoded_path(api, tenant):
    keys = ["favourite food", "café préféré", "名前", "a?b#c%d&e"]
    for key in keys:
        assert put(api, key, f"value of {key}").status_code == 201

    for key in keys:
        answer = api.get(fact_url(key))
        assert answer.status_code == 200, (key, answer.content)
        assert (answer.json()["key"], answer.json()["value"]) == (key, f"value of {key}")
    assert api.delete(fact_url("café préféré")).status_code == 204
    assert history(api, "café préféré")[0][:2] == ("café préféré", "delete")
    assert set(listed(api)) == set(keys) - {"café préféré"}


def test_surrounding_whitespace_of_a_key_is_dropped(api, tenant):
    answer = api.post(facts_url(), {"key": "  city ", "value": "Lisbon"}, format="json")

    assert answer.json()["facts"][0]["key"] == "city"
    assert api.get(fact_url(" city")).json()["value"] == "Lisbon"


# --- History: a changed value is superseded, not lost -----------------------------------------------


def test_every_change_and_delete_is_in_the_history_newest_first(api, tenant):
    put(api, "city", "Lisbon")
    put(api, "city", "Porto")
    api.delete(fact_url("city"))
    put(api, "city", "Faro")

    assert history(api, "city") == [
        ("city", "set", "Faro", None),
        ("city", "delete", "", "Porto"),
        ("city", "set", "Porto", "Lisbon"),
        ("city", "set", "Lisbon", None),
    ]


def test_setting_the_same_value_again_changes_nothing(api, tenant):
    first = put(api, "city", "Lisbon").json()

    again = put(api, "city", "Lisbon")
    batch = api.post(facts_url(), {"facts": {"city": "Lisbon"}}, format="json")

    assert again.status_code == 200
    assert again.json() == first  # updated_at unchanged
    assert batch.status_code == 200
    assert batch.json()["facts"] == [first]
    assert history(api, "city") == [("city", "set", "Lisbon", None)]


def test_the_history_of_a_deleted_fact_stays_readable(api, tenant):
    put(api, "pet", "cat")
    api.delete(fact_url("pet"))

    assert api.get(fact_url("pet")).status_code == 404
    assert history(api, "pet") == [("pet", "delete", "", "cat"), ("pet", "set", "cat", None)]


def test_the_history_of_a_key_never_set_is_a_404(api, tenant):
    put(api, "pet", "cat")

    answer = api.get(history_url("city"))

    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")


def test_the_users_whole_history_covers_every_key_and_pages_with_limit_and_offset(api, tenant):
    put(api, "a", "1")
    put(api, "b", "1")
    put(api, "a", "2")
    api.delete(fact_url("b"))
    put(api, "a", "1", user_id="someone-else")

    first = api.get(history_url(), {"limit": 3})
    second = api.get(first.json()["next"])

    assert first.status_code == 200, first.content
    assert first.json()["count"] == 4
    assert first.json()["previous"] is None
    assert [(change["key"], change["action"]) for change in first.json()["results"]] == [
        ("b", "delete"),
        ("a", "set"),
        ("b", "set"),
    ]
    assert [(change["key"], change["value"]) for change in second.json()["results"]] == [("a", "1")]
    assert second.json()["next"] is None
    assert history(api, offset=3) == [("a", "set", "1", None)]


def test_a_history_page_over_the_limit_is_a_400_naming_it(api, tenant, settings):
    settings.MEMORY_MAX_PAGE_SIZE = 10
    put(api, "a", "1")

    answer = api.get(history_url(), {"limit": 11})

    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "limit_exceeded")
    assert "MEMORY_MAX_PAGE_SIZE=10" in answer.json()["error"]["message"]


# --- Bad input: a 400 naming the problem, nothing written -------------------------------------------


def test_a_value_over_the_limit_is_a_400_naming_it_and_nothing_is_written(api, tenant, settings):
    settings.MEMORY_MAX_FACT_VALUE_CHARS = 10

    answer = put(api, "bio", "x" * 11)

    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "limit_exceeded")
    assert "MEMORY_MAX_FACT_VALUE_CHARS=10" in answer.json()["error"]["message"]
    assert "11" in answer.json()["error"]["message"]
    assert stored_rows(tenant) == (0, 0)


def test_a_key_over_the_limit_is_a_400_naming_it_and_nothing_is_written(api, tenant, settings):
    settings.MEMORY_MAX_FACT_KEY_LENGTH = 8

    answer = api.post(facts_url(), {"facts": {"short": "ok", "much-too-long": "x"}}, format="json")

    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "limit_exceeded")
    assert "MEMORY_MAX_FACT_KEY_LENGTH=8" in answer.json()["error"]["message"]
    assert stored_rows(tenant) == (0, 0)


def test_a_user_id_over_the_limit_is_a_400_naming_it(api, tenant, settings):
    settings.MEMORY_MAX_ID_LENGTH = 5

    answer = put(api, "city", "Lisbon", user_id="user-123")

    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "limit_exceeded")
    assert "MEMORY_MAX_ID_LENGTH=5" in answer.json()["error"]["message"]
    assert stored_rows(tenant) == (0, 0)


def test_more_facts_than_a_user_may_hold_is_a_400_naming_the_limit_and_nothing_is_written(api, tenant, settings):
    settings.MEMORY_MAX_FACTS_PER_USER = 3
    api.post(facts_url(), {"facts": {"a": "1", "b": "1"}}, format="json")

    over = api.post(facts_url(), {"facts": {"a": "2", "c": "1", "d": "1"}}, format="json")
    updating_at_the_limit = api.post(facts_url(), {"facts": {"a": "2", "b": "2", "c": "1"}}, format="json")
    one_more = put(api, "d", "1")

    assert (over.status_code, over.json()["error"]["code"]) == (400, "limit_exceeded")
    assert "MEMORY_MAX_FACTS_PER_USER=3" in over.json()["error"]["message"]
    assert updating_at_the_limit.status_code == 201, updating_at_the_limit.content
    assert listed(api) == {"a": "2", "b": "2", "c": "1"}
    assert one_more.status_code == 400
    assert put(api, "d", "1", user_id="u2").status_code == 201  # the limit is per user


def test_a_batch_larger_than_the_batch_limit_is_a_400_naming_it(api, tenant, settings):
    settings.MEMORY_MAX_BATCH = 2

    answer = api.post(facts_url(), {"facts": {"a": "1", "b": "1", "c": "1"}}, format="json")

    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "limit_exceeded")
    assert "MEMORY_MAX_BATCH=2" in answer.json()["error"]["message"]
    assert stored_rows(tenant) == (0, 0)


@pytest.mark.parametrize("value", [42, 4.5, True, None, ["a"], {"a": "b"}])
def test_a_value_that_is_not_a_string_is_a_400_and_is_not_converted(api, tenant, value):
    single = put(api, "age", value)
    batch = api.post(facts_url(), {"facts": {"name": "Ada", "age": value}}, format="json")

    assert (single.status_code, single.json()["error"]["code"]) == (400, "validation_error")
    assert single.json()["error"]["message"].startswith("value:")
    assert (batch.status_code, batch.json()["error"]["code"]) == (400, "validation_error")
    assert "age" in batch.json()["error"]["message"]
    assert stored_rows(tenant) == (0, 0)


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("   ", "empty"),
        ("tab\there", "control character"),
        ("a/b", '"/"'),
        ("history", "reserved"),
        ("..", "reserved"),
    ],
)
def test_a_key_that_breaks_a_rule_is_a_400_naming_the_rule(api, tenant, key, problem):
    answer = api.post(facts_url(), {"facts": {"fine": "1", key: "x"}}, format="json")

    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "validation_error"), answer.content
    assert problem in answer.json()["error"]["message"]
    assert stored_rows(tenant) == (0, 0)


@pytest.mark.parametrize(("value", "problem"), [("   ", "blank"), ("a\x00b", "Null characters"), ("\ud800", "surrogate")])
def test_a_value_that_cannot_be_stored_is_a_400(api, tenant, value, problem):
    # Sent as a client's JSON would: json.dumps escapes the lone surrogate as \ud800.
    answer = api.post(facts_url(), json.dumps({"key": "k", "value": value}), content_type="application/json")

    assert answer.status_code == 400, answer.content
    assert problem.lower() in answer.json()["error"]["message"].lower()
    assert stored_rows(tenant) == (0, 0)


def test_two_keys_of_a_batch_that_are_the_same_fact_are_a_400(api, tenant):
    answer = api.post(facts_url(), {"facts": {"city": "Lisbon", " city": "Porto"}}, format="json")

    assert answer.status_code == 400
    assert "city" in answer.json()["error"]["message"]
    assert stored_rows(tenant) == (0, 0)


# --- Tenants ------------------------------------------------------------------------------------------


def test_another_tenants_key_never_sees_or_changes_the_users_facts(api, other_api, tenant, other_tenant):
    put(api, "secret", "acme-only")
    before = stored_rows(tenant)

    answers = {
        "fact": other_api.get(fact_url("secret")),
        "delete": other_api.delete(fact_url("secret")),
        "history of the key": other_api.get(history_url("secret")),
    }
    their_list = other_api.get(facts_url())
    their_history = other_api.get(history_url())

    assert {name: answer.status_code for name, answer in answers.items()} == dict.fromkeys(answers, 404)
    assert their_list.json() == {"user_id": "u1", "facts": [], "total_tokens": 0}
    assert their_history.json()["count"] == 0
    assert "acme-only" not in json.dumps([answer.json() for answer in [*answers.values(), their_list, their_history]])
    assert stored_rows(tenant) == before
    assert stored_rows(other_tenant) == (0, 0)


def test_the_same_user_id_in_two_tenants_is_two_users(api, other_api, tenant, other_tenant):
    put(api, "city", "Lisbon")

    theirs = put(other_api, "city", "Oslo")

    assert theirs.status_code == 201  # new for globex's u1
    assert listed(api) == {"city": "Lisbon"}
    assert listed(other_api) == {"city": "Oslo"}
    assert history(api, "city") == [("city", "set", "Lisbon", None)]


# --- Schema -------------------------------------------------------------------------------------------


def test_the_openapi_schema_lists_the_facts_paths(client, db):
    answer = client.get("/api/schema/", {"format": "json"})

    assert answer.status_code == 200
    assert {
        "/api/v1/users/{user_id}/facts/",
        "/api/v1/users/{user_id}/facts/history/",
        "/api/v1/users/{user_id}/facts/{key}/",
        "/api/v1/users/{user_id}/facts/{key}/history/",
    } <= set(json.loads(answer.content)["paths"])
