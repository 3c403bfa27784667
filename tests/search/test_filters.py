"""Search filters through the API, with the real embedding model: each filter alone and combined, on
the conversation and the user search, in every mode; ``top_k`` among the matching messages; bounds;
the memory bundle's filters. Another tenant holds the very same world (ids, users, words), and not
one of its messages ever answers."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from conversations.models import Message
from search import filters, services
from tests.factories import conversation_with_messages

pytestmark = pytest.mark.django_db

START = datetime(2023, 5, 8, 14, 0, tzinfo=UTC)
MELANIE_LANGCHAIN = {"langchain": {"data": {"name": "Melanie"}}}
# conversation id -> (user_id, agent_id, rows of (role, metadata, content, days after START))
WORLD = {
    "s1": (
        "caroline",
        "planner",
        [
            ("user", {"name": "Caroline", "topic": "pets", "lang": "en"}, "I adopted a puppy last Saturday, his name is Rex!", 0),
            ("assistant", {**MELANIE_LANGCHAIN, "topic": "pets", "lang": "en"}, "Wonderful! What breed is Rex?", 0),
            ("user", {"name": "Caroline", "topic": "pets", "lang": "es"}, "Rex is a golden retriever, three months old.", 10),
            ("assistant", {"name": "Melanie", "topic": "travel", "lang": "en"}, "Rex could come to Lisbon in March.", 10),
            ("user", {"name": "Caroline", "topic": "travel", "lang": "fr"}, "Rex loves the beach at Lisbon.", 20),
        ],
    ),
    "s2": (
        "caroline",
        "coach",
        [
            ("user", {"name": "Caroline", "topic": "pets", "lang": "en"}, "The training class for Rex starts on Monday.", 30),
            ("assistant", {"name": "Coach", "topic": "pets"}, "Bring treats so that Rex stays focused.", 30),
        ],
    ),
    "b1": ("bob", "planner", [("user", {"name": "Bob", "topic": "pets", "lang": "en"}, "My dog Rex ran away.", 0)]),
}
ALL_OF_CAROLINE = {("s1", 1), ("s1", 2), ("s1", 3), ("s1", 4), ("s1", 5), ("s2", 1), ("s2", 2)}


def build_world(tenant):
    for conversation_id, (user_id, agent_id, rows) in WORLD.items():
        conversation_with_messages(
            tenant,
            conversation_id,
            rows=[
                (role, content, metadata, START + timedelta(days=days, minutes=seq))
                for seq, (role, metadata, content, days) in enumerate(rows, start=1)
            ],
            user_id=user_id,
            agent_id=agent_id,
        )
        services.conversation_embed(tenant=tenant, conversation_id=conversation_id)


@pytest.fixture
def worlds(tenant, other_tenant):
    build_world(tenant)
    build_world(other_tenant)
    return {str(pk) for pk in Message.objects.for_tenant(tenant).values_list("message_id", flat=True)}


# Every search here asks for all it may find: the answer is then exactly the matching messages.
EVERYTHING = {"top_k": 50, "min_similarity": -1.0}
MODES = [{"mode": "hybrid"}, {"mode": "keyword"}, {"mode": "semantic", "min_similarity": -1.0}]
PATHS = {"user": "/api/v1/users/caroline/search/", "conversation": "/api/v1/conversations/s1/search/"}


def found(answer, own_ids):
    assert answer.status_code == 200, answer.content
    results = answer.json()["results"]
    assert {hit["message_id"] for hit in results} <= own_ids, "another tenant's message answered"
    return {(hit["conversation_id"], hit["seq"]) for hit in results}


def get(api, path, **params):
    if isinstance(params.get("metadata"), dict):
        params["metadata"] = json.dumps(params["metadata"])
    return api.get(path, {"q": "Rex", **EVERYTHING, **params})


def post(api, path, **body):
    return api.post(path, {"q": "Rex", **EVERYTHING, **body}, format="json")


ALONE = [
    ({"role": ["user"]}, {("s1", 1), ("s1", 3), ("s1", 5), ("s2", 1)}),
    ({"role": ["user", "assistant"]}, ALL_OF_CAROLINE),
    ({"name": ["Melanie"]}, {("s1", 2), ("s1", 4)}),  # one in metadata, one in the LangChain message
    ({"name": ["Melanie", "Coach"]}, {("s1", 2), ("s1", 4), ("s2", 2)}),
    ({"agent_id": ["coach"]}, {("s2", 1), ("s2", 2)}),
    ({"agent_id": ["coach", "planner"]}, ALL_OF_CAROLINE),
    ({"conversation_id": ["s2"]}, {("s2", 1), ("s2", 2)}),
    ({"conversation_id": ["b1"]}, set()),  # bob's: never part of caroline's search
    ({"conversation_id": ["s2", "b1", "nope"]}, {("s2", 1), ("s2", 2)}),
    ({"start_date": "2023-05-18T00:00:00Z"}, {("s1", 3), ("s1", 4), ("s1", 5), ("s2", 1), ("s2", 2)}),
    ({"end_date": "2023-05-18T14:04:00Z"}, {("s1", 1), ("s1", 2), ("s1", 3), ("s1", 4)}),  # both ends included
    ({"start_date": "2023-05-18T00:00:00Z", "end_date": "2023-05-28T23:59:59Z"}, {("s1", 3), ("s1", 4), ("s1", 5)}),
    ({"metadata": {"topic": "travel"}}, {("s1", 4), ("s1", 5)}),
    ({"metadata": {"lang": {"in": ["es", "fr"]}}}, {("s1", 3), ("s1", 5)}),
    ({"metadata": {"topic": "pets", "lang": "en"}}, {("s1", 1), ("s1", 2), ("s2", 1)}),  # s2's coach has no lang
    ({"metadata": {"topic": "cooking"}}, set()),
]
COMBINED = [
    ({"role": ["user"], "agent_id": ["planner"], "metadata": {"lang": {"in": ["en", "fr"]}}}, {("s1", 1), ("s1", 5)}),
    ({"name": ["Caroline"], "start_date": "2023-05-18T00:00:00Z", "conversation_id": ["s1"]}, {("s1", 3), ("s1", 5)}),
    ({"role": ["assistant"], "metadata": {"topic": "pets"}, "agent_id": ["coach"]}, {("s2", 2)}),
]


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode["mode"])
@pytest.mark.parametrize(
    ("given", "expected"), ALONE + COMBINED, ids=lambda value: json.dumps(value) if isinstance(value, dict) else ""
)
def test_a_user_search_finds_exactly_the_messages_that_match(api, worlds, mode, given, expected):
    assert found(get(api, PATHS["user"], **mode, **given), worlds) == expected
    assert found(post(api, PATHS["user"], **mode, **given), worlds) == expected


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode["mode"])
@pytest.mark.parametrize(
    ("given", "expected"), ALONE + COMBINED, ids=lambda value: json.dumps(value) if isinstance(value, dict) else ""
)
def test_a_conversation_search_over_the_users_conversations_finds_exactly_the_messages_that_match(
    api, worlds, mode, given, expected
):
    assert found(get(api, PATHS["conversation"], scope="user", **mode, **given), worlds) == expected


def test_a_conversation_search_of_its_own_conversation_is_narrowed_too(api, worlds):
    path = PATHS["conversation"]

    assert found(get(api, path, scope="conversation", role=["assistant"]), worlds) == {("s1", 2), ("s1", 4)}
    assert found(get(api, path, scope="conversation", conversation_id=["s2"]), worlds) == set()
    assert found(get(api, path, scope="conversation", agent_id=["coach"]), worlds) == set()


def test_without_filters_the_same_search_finds_every_message_of_the_user(api, worlds):
    assert found(get(api, PATHS["user"]), worlds) == ALL_OF_CAROLINE


def test_the_other_tenant_finds_its_own_world_with_the_same_filters(other_api, other_tenant, worlds):
    own = {str(pk) for pk in Message.objects.for_tenant(other_tenant).values_list("message_id", flat=True)}

    assert found(get(other_api, PATHS["user"], role=["user"], agent_id=["planner"]), own) == {("s1", 1), ("s1", 3), ("s1", 5)}


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode["mode"])
def test_top_k_is_the_best_among_the_matching_messages_not_a_filtered_top_k(api, worlds, mode):
    query = {"q": "Is Rex a golden retriever, three months old?", "top_k": 1, **mode}
    best = api.get(PATHS["user"], query).json()["results"]
    assert [(hit["conversation_id"], hit["seq"]) for hit in best] == [("s1", 3)]  # lang es

    english = api.get(PATHS["user"], {**query, "metadata": json.dumps({"lang": "en"})})
    two = api.get(PATHS["user"], {**query, "top_k": 2, "metadata": json.dumps({"lang": "en"})})

    assert len(found(english, worlds)) == 1  # a top 1 filtered afterwards would be empty
    assert len(found(two, worlds)) == 2
    assert all(hit["metadata"]["lang"] == "en" for hit in two.json()["results"])
    assert english.json()["results"][0]["message_id"] == two.json()["results"][0]["message_id"]


def test_the_candidates_counted_are_the_matching_messages(api, worlds):
    answer = get(api, PATHS["user"], mode="semantic", agent_id=["coach"])

    assert answer.json()["candidates"] == 2
    assert answer.json()["conversations"] == 1


# --- bounds and refusals ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize(
    ("given", "field", "size", "limit"),
    [
        ({"role": ["user"] * 51}, "role", 51, filters.MAX_FILTER_VALUES),
        ({"agent_id": [f"a{index}" for index in range(51)]}, "agent_id", 51, filters.MAX_FILTER_VALUES),
        ({"conversation_id": [f"c{index}" for index in range(51)]}, "conversation_id", 51, filters.MAX_FILTER_VALUES),
        ({"name": ["n" * 201]}, "name", 201, filters.MAX_FILTER_CHARS),
        ({"metadata": {f"k{index}": 1 for index in range(11)}}, "metadata", 11, filters.MAX_METADATA_KEYS),
        ({"metadata": {"lang": {"in": list(range(51))}}}, "metadata.lang", 51, filters.MAX_FILTER_VALUES),
        ({"metadata": {"k" * 201: 1}}, "metadata", 201, filters.MAX_FILTER_CHARS),
        ({"metadata": {"topic": "t" * 201}}, "metadata.topic", 201, filters.MAX_FILTER_CHARS),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_a_filter_out_of_bounds_is_a_400_naming_the_field_and_the_bound(api, worlds, method, given, field, size, limit):
    answer = get(api, PATHS["user"], **given) if method == "get" else post(api, PATHS["user"], **given)

    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "limit_exceeded"
    assert error["details"] == {"field": field, "size": size, "limit": limit}
    assert str(limit) in error["message"]


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"role": ["tool"]}, "role"),
        ({"role": ["system"]}, "role"),
        ({"metadata": '{"topic": '}, "metadata"),
        ({"metadata": '["travel"]'}, "metadata"),
        ({"metadata": json.dumps({"topic": {"eq": "travel"}})}, "metadata.topic"),
        ({"metadata": json.dumps({"topic": {"in": []}})}, "metadata.topic"),
        ({"metadata": json.dumps({"topic": ["travel"]})}, "metadata.topic"),
        ({"metadata": json.dumps({"topic": "a\u0000b"})}, "metadata"),
        ({"start_date": "2023-06-01T00:00:00Z", "end_date": "2023-05-01T00:00:00Z"}, "start_date"),
        ({"start_date": "yesterday"}, "start_date"),
    ],
)
def test_a_malformed_filter_is_a_400_naming_it(api, worlds, given, named):
    answer = api.get(PATHS["user"], {"q": "Rex", **given})

    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert named in error["message"] or named in json.dumps(error["details"])


def test_an_unknown_name_in_a_json_body_is_refused_not_ignored(api, worlds):
    answer = post(api, PATHS["user"], roles=["user"])

    assert answer.status_code == 400
    assert "roles" in answer.json()["error"]["message"]


# --- the memory bundle -----------------------------------------------------------------------


def context(api, **body):
    return api.post("/api/v1/conversations/s1/context/", {"use_memory": True, "query": "Rex", "top_k": 20, **body}, format="json")


def test_the_memory_bundle_searches_within_its_filters(api, worlds):
    everything = context(api)
    coach = context(api, memory_filters={"agent_id": ["coach"]})
    mine = context(api, memory_filters={"role": ["user"], "metadata": {"lang": {"in": ["es", "fr"]}}})

    assert everything.status_code == coach.status_code == mine.status_code == 200
    sessions = {item["session_id"] for item in everything.json()["memory"]["context"]}
    assert sessions == {"s1", "s2"}
    assert {item["session_id"] for item in coach.json()["memory"]["context"]} == {"s2"}
    assert {(item["session_id"], item["seq"]) for item in mine.json()["memory"]["context"]} == {("s1", 3), ("s1", 5)}
    own = {item["message_id"] for item in everything.json()["memory"]["context"]}
    assert own <= worlds


@pytest.mark.parametrize(
    ("memory_filters", "named"),
    [({"roles": ["user"]}, "roles"), ({"name": ["x"] * 51}, "name"), ({"metadata": {"a": {"in": "en"}}}, "metadata.a")],
)
def test_the_memory_bundle_refuses_a_bad_filter_naming_it(api, worlds, memory_filters, named):
    answer = context(api, memory_filters=memory_filters)

    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert named in error["message"] or named in json.dumps(error["details"])
