"""The API fuzzed against its own OpenAPI schema (``/api/schema/``), through the WSGI application.

Every operation gets requests generated from its schema, valid and invalid (schemathesis, on
Hypothesis, derandomized: the same requests on every run), with a tenant's key. Whatever is sent:

* no answer is a 5xx;
* a documented answer (status, content type, headers, body) matches the schema;
* a success status is one the operation documents;
* an error is a 4xx JSON body ``{"error": {"code", "message", "details"}}`` with a stable code and a
  message, as the schema's ``ErrorDocument`` says (``test_error_answers_are_documented``).

Two passes: every id fuzzed (mostly unknown conversations, users, keys), and ids pinned to data the
tenant has (a conversation with messages, a checkpoint, facts), so that bodies and queries reach the
services. In the second pass each request is sent again with one string it declares made unstorable
(a NUL, or half a surrogate pair in JSON): that must always be a 4xx error, never a write nor a 5xx. ``SCHEMA_GAPS`` lists where the schema does not yet say what the API answers; each gap has a
strict ``xfail`` test below that starts passing once the schema is fixed, and then the gap goes.
"""

import zlib
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import checks
from schemathesis.generation.case import Case

from checkpoints import services as checkpoint_services
from facts import services as fact_services
from memoryproject.wsgi import application
from tests.conftest import client_for
from tests.factories import conversation_with_messages

# Examples per operation and pass: the whole file stays CI-sized (about a minute).
EXAMPLES = 10

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
schema.config.phases.update(phases=["examples", "fuzzing"])
schema.config.generation.update(modes=["positive", "negative"], deterministic=True)
schema.config.seed = 2718  # the same requests on every run and machine

FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# Where the schema does not say what the API answers (operation -> the check it cannot pass yet).
SCHEMA_GAPS: dict[str, set[str]] = {}
# Deletes that answer 200 with a JSON summary of what they erased (the schema must say so).
DELETES_WITH_A_SUMMARY = (
    "DELETE /api/v1/conversations/{conversation_id}/",
    "DELETE /api/v1/conversations/{conversation_id}/messages/",
    "DELETE /api/v1/conversations/{conversation_id}/checkpoints/",
    "DELETE /api/v1/users/{user_id}/",
)

# The tenant's own data that the pinned pass aims at.
PINNED = {
    "conversation_id": "c1",
    "checkpoint_id": "cp-1",
    "user_id": "u1",
    "key": "city",
}


def documented_success(ctx: Any, response: Any, case: Case) -> None:
    """A 2xx the operation does not document is a schema that lies about success."""
    documented = set(case.operation.responses.status_codes)
    if 200 <= response.status_code < 300 and str(response.status_code) not in documented and "default" not in documented:
        raise AssertionError(f"{case.operation.label} answered {response.status_code}; the schema documents {sorted(documented)}")


def error_envelope(ctx: Any, response: Any, case: Case) -> None:
    """Every error is the service's JSON error: a stable code and a message naming the problem."""
    if response.status_code < 400:
        return
    assert response.status_code < 500, f"{case.operation.label} answered {response.status_code}"
    content_type = {name.lower(): values for name, values in response.headers.items()}.get("content-type", [""])[0]
    assert content_type.startswith("application/json"), response.headers
    error = response.json()["error"]
    assert isinstance(error["code"], str), error
    assert isinstance(error["message"], str), error
    assert error["code"], error
    assert error["message"], error
    assert isinstance(error["details"], dict | list), error


CHECKS = [
    checks.not_a_server_error,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
    documented_success,
    error_envelope,
]


def checks_for(case: Case) -> list[Any]:
    gaps = SCHEMA_GAPS.get(case.operation.label, set())
    return [check for check in CHECKS if check.__name__ not in gaps]


@pytest.fixture
def key(transactional_db: Any, tenant: Any, no_worker: None) -> str:
    """A key of acme, whose data the pinned ids name; nothing consumes the queue, so nothing fuzzed is
    persisted behind the test's back."""
    conversation_with_messages(tenant, PINNED["conversation_id"], 4, user_id=PINNED["user_id"])
    checkpoint_services.checkpoint_save(
        tenant=tenant, conversation_id=PINNED["conversation_id"], checkpoint_id=PINNED["checkpoint_id"], state={"step": 1}
    )
    fact_services.fact_set(tenant=tenant, user_id=PINNED["user_id"], key=PINNED["key"], value="Lisbon")
    return client_for(tenant).api_key


@schema.parametrize()
@FUZZ_SETTINGS
def test_every_operation_answers_as_documented_whatever_the_ids(case: Case, key: str) -> None:
    case.call_and_validate(headers={"Authorization": f"Api-Key {key}"}, checks=checks_for(case))


@schema.parametrize()
@FUZZ_SETTINGS
def test_every_operation_answers_as_documented_on_the_tenants_own_data(case: Case, key: str) -> None:
    headers = {"Authorization": f"Api-Key {key}"}
    for name in case.path_parameters or {}:
        case.path_parameters[name] = PINNED.get(name, case.path_parameters[name])
    case.call_and_validate(headers=headers, checks=checks_for(case))

    # The same request once more with one of its strings made unstorable: always a 4xx error.
    if make_one_string_hostile(case):
        answer = case.call(headers=headers)
        assert 400 <= answer.status_code < 500, (
            f"{case.operation.label} answered {answer.status_code} to {answer.request.url!r} with the body {case.body!r}"
        )
        error_envelope(None, answer, case)


# What PostgreSQL cannot store or match: a NUL anywhere, and (in JSON, where it can be escaped) half of
# a surrogate pair.
NUL, SURROGATE = "\x00", "\ud800"


def make_one_string_hostile(case: Case) -> bool:
    """Put a NUL or a lone surrogate into one string the operation declares (a path or query parameter,
    or anywhere inside a body property), chosen from the request itself so the choice is the same on
    every run; False when there is none. Undeclared body fields are left alone: the API ignores them."""
    spec = operation(case.operation.label)
    places: list[tuple[Any, Any, bool]] = []  # (container, key or index, inside the JSON body)

    def nested_strings(value: Any, declared: dict[str, Any]) -> None:
        """The strings inside ``value`` that its schema declares: an object's documented properties
        (every key of a free-form object, which the API stores as it is), an array's items."""
        declared = resolved(declared)
        if isinstance(value, dict):
            properties = declared.get("properties")
            names = sorted(value) if properties is None else sorted(set(properties) & set(value))
            items = [(name, value[name], {} if properties is None else properties[name]) for name in names]
        else:
            items = [(index, item, declared.get("items", {})) for index, item in enumerate(value)]
        for name, item, item_schema in items:
            if isinstance(item, str):
                places.append((value, name, True))
            elif isinstance(item, dict | list):
                nested_strings(item, item_schema)

    path = case.path_parameters or {}
    places.extend((path, name, False) for name in sorted(path) if isinstance(path[name], str))
    query = case.query or {}
    for name in sorted(query_parameters(spec) & set(query)):
        if isinstance(query[name], str):
            places.append((query, name, False))
        elif isinstance(query[name], list):
            places.extend((query[name], index, False) for index, item in enumerate(query[name]) if isinstance(item, str))
    if isinstance(case.body, dict):
        nested_strings(case.body, body_schema(spec))
    if not places:
        return False
    choice = zlib.crc32(repr((case.path_parameters, case.query, case.body)).encode("utf-8", "backslashreplace"))
    container, name, in_body = places[choice % len(places)]
    container[name] += SURROGATE if in_body and choice % 2 else NUL
    return True


def query_parameters(spec: dict[str, Any]) -> set[str]:
    return {parameter["name"] for parameter in spec.get("parameters", []) if parameter["in"] == "query"}


def body_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """An operation's JSON body, as documented (an object of no declared property when it has none)."""
    body = spec.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    return resolved(body) if body else {"properties": {}}


def resolved(declared: dict[str, Any]) -> dict[str, Any]:
    """A schema with its reference (``$ref``, or a lone ``allOf`` entry) followed."""
    if len(declared.get("allOf", ())) == 1:
        declared = declared["allOf"][0]
    if "$ref" in declared:
        return resolved(schema.raw_schema["components"]["schemas"][declared["$ref"].rsplit("/", 1)[1]])
    return declared


# --- The gaps, each a test that passes once the schema is fixed ---------------------------------------


def operation(label: str) -> dict[str, Any]:
    method, path = label.split(" ", 1)
    return schema.raw_schema["paths"][path][method.lower()]


def test_the_conversation_list_is_documented_as_a_page():
    documented = operation("GET /api/v1/conversations/")["responses"]["200"]["content"]["application/json"]["schema"]

    assert documented.get("type") == "object" or "$ref" in documented


@pytest.mark.parametrize("label", DELETES_WITH_A_SUMMARY)
def test_deletes_are_documented_with_the_200_and_body_they_answer(label):
    assert "200" in operation(label)["responses"]


def test_error_answers_are_documented():
    undocumented = [
        f"{method.upper()} {path}"
        for path, operations in schema.raw_schema["paths"].items()
        for method, spec in operations.items()
        if not any(status.startswith("4") for status in spec.get("responses", {}))
    ]

    assert undocumented == []


def test_every_error_answer_documented_carries_the_error_body():
    without_body = [
        f"{method.upper()} {path} {status}"
        for path, operations in schema.raw_schema["paths"].items()
        for method, spec in operations.items()
        for status, answer in spec.get("responses", {}).items()
        if status.startswith(("4", "5"))
        and answer.get("content", {}).get("application/json", {}).get("schema") != {"$ref": "#/components/schemas/ErrorDocument"}
    ]

    assert without_body == []
    error = resolved(schema.raw_schema["components"]["schemas"]["ErrorDocument"]["properties"]["error"])
    assert set(error["required"]) == {"code", "message", "details"}
