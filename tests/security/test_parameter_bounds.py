"""Every integer parameter of every operation is bounded: walked from the OpenAPI schema (query
parameters and top-level body properties), each gets a huge value, a value below its minimum and a
non-number, and each answer is a 400 whose error names the parameter (and, for the huge value, the
bound): never a 500, never a query run with the value."""

import json
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from rest_framework.test import APIClient

from checkpoints import services as checkpoint_services
from facts import services as fact_services
from search import selectors as search_selectors
from tests.factories import conversation_with_messages

PATH_VALUES = {"conversation_id": "c1", "user_id": "u1", "key": "city", "checkpoint_id": "cp-1"}
# The least body each operation takes, so that only the parameter under test is wrong.
BASE_BODIES = {"/api/v1/conversations/{conversation_id}/chat/": {"content": "hi"}}
HUGE = 10**12


def api_schema() -> dict[str, Any]:
    return json.loads(Client().get("/api/schema/", {"format": "json"}).content)


def resolved(schema: dict[str, Any], declared: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in declared:
        return schema["components"]["schemas"][declared["$ref"].rsplit("/", 1)[1]]
    return declared


def integer_parameters() -> list[tuple[str, str, str, str, int | None]]:
    """(method, path, where, name, minimum) of every integer query parameter and body property."""
    schema = api_schema()
    found = []
    for path, operations in schema["paths"].items():
        for method, spec in operations.items():
            for parameter in spec.get("parameters", []):
                if parameter["in"] == "query" and parameter["schema"].get("type") == "integer":
                    found.append((method, path, "query", parameter["name"], parameter["schema"].get("minimum")))
            body = spec.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body:
                for name, declared in resolved(schema, body).get("properties", {}).items():
                    if declared.get("type") == "integer" and not declared.get("readOnly"):
                        found.append((method, path, "body", name, declared.get("minimum")))
    return found


@pytest.fixture
def own_data(tenant: Any) -> None:
    conversation_with_messages(tenant, "c1", 4, user_id="u1")
    checkpoint_services.checkpoint_save(tenant=tenant, conversation_id="c1", checkpoint_id="cp-1", state={"step": 1})
    fact_services.fact_set(tenant=tenant, user_id="u1", key="city", value="Lisbon")


def send(api: APIClient, method: str, path: str, where: str, name: str, value: Any) -> Any:
    url = path.format(**PATH_VALUES)
    if where == "query":
        query = {"q": "hello"} if "/search/" in path and name != "q" else {}
        return (
            getattr(api, method)(url, {**query, name: value})
            if method == "get"
            else getattr(api, method)(f"{url}?{name}={value}")
        )
    return getattr(api, method)(url, {**BASE_BODIES.get(path, {}), name: value}, format="json")


def test_the_walk_finds_the_parameters_the_attack_used(db):
    found = {(path, name) for _, path, _, name, _ in integer_parameters()}

    assert ("/api/v1/conversations/{conversation_id}/search/", "candidate_limit") in found
    assert ("/api/v1/conversations/{conversation_id}/search/", "vector_fetch_limit") in found
    assert ("/api/v1/conversations/", "offset") in found
    assert ("/api/v1/conversations/{conversation_id}/messages/", "skip") in found
    assert ("/api/v1/conversations/{conversation_id}/context/", "max_tokens") in found
    assert len(found) >= 20


def test_every_integer_parameter_refuses_huge_negative_and_non_numbers_with_a_400_naming_it(api, tenant, own_data, monkeypatch):
    def never(**kwargs: Any) -> None:
        raise AssertionError("a search ran with a value out of bounds")

    monkeypatch.setattr(search_selectors, "memory_search", never)
    api.raise_request_exception = False
    wrong = []

    for method, path, where, name, minimum in integer_parameters():
        below = min(-1, minimum - 1) if minimum is not None else -1
        for value in (HUGE, below, "many"):
            answer = send(api, method, path, where, name, value)
            label = f"{method.upper()} {path} {where} {name}={value!r}"
            if answer.status_code != 400:
                wrong.append(f"{label}: {answer.status_code} {answer.content[:200]!r}")
                continue
            error = answer.json()["error"]
            if name not in error["message"] and name not in json.dumps(error["details"]):
                wrong.append(f"{label}: the error does not name {name}: {error}")
            if value == HUGE and not any(char.isdigit() for char in error["message"]):
                wrong.append(f"{label}: the error does not say the bound: {error}")

    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("parameter", "setting"),
    [
        ("candidate_limit", "MEMORY_MAX_SEARCH_CANDIDATES"),
        ("vector_fetch_limit", "MEMORY_MAX_SEARCH_CANDIDATES"),
        ("cross_session_trigger", "MEMORY_MAX_SEARCH_CANDIDATES"),
        ("top_k", "MEMORY_MAX_PAGE_SIZE"),
    ],
)
def test_a_search_parameter_over_its_bound_is_a_limit_exceeded_naming_field_and_bound(api, tenant, own_data, parameter, setting):
    answer = api.get("/api/v1/conversations/c1/search/", {"q": "hello", parameter: HUGE})

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "limit_exceeded"
    assert error["details"] == {"field": parameter, "size": HUGE, "limit": getattr(settings, setting)}
    assert f"{setting}={getattr(settings, setting)}" in error["message"]


@pytest.mark.parametrize("path", ["/api/v1/conversations/", "/api/v1/users/u1/facts/history/"])
@pytest.mark.parametrize(
    ("query", "named"),
    [({"offset": HUGE}, "offset"), ({"limit": -1}, "limit"), ({"limit": "abc"}, "limit"), ({"offset": "x"}, "offset")],
)
def test_a_paged_list_refuses_a_bad_limit_or_offset_instead_of_a_silent_default(api, tenant, own_data, path, query, named):
    answer = api.get(path, query)

    assert answer.status_code == 400, answer.content
    assert named in answer.json()["error"]["message"]


def test_a_conversation_list_filter_over_the_id_length_is_a_400_naming_it(api, tenant):
    answer = api.get("/api/v1/conversations/", {"user_id": "u" * 201})

    assert answer.status_code == 400
    assert "user_id" in answer.json()["error"]["message"]


def test_a_conversation_list_still_pages_within_the_bounds(api, tenant):
    for index in range(3):
        conversation_with_messages(tenant, f"c{index}", 0)

    answer = api.get("/api/v1/conversations/", {"limit": 2, "offset": 1})

    assert answer.status_code == 200
    assert answer.json()["count"] == 3
    assert len(answer.json()["results"]) == 2
