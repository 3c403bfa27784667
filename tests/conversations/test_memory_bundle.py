"""The context with long-term memory (``use_memory``): the bundle, the rendered prompt, and
the relevant past that joins the system message within the budget."""

from datetime import UTC, datetime

import pytest

from conversations.models import Conversation, Message
from memory import bundle
from search.services import conversation_embed
from summaries.services import summary_create_now
from tests.conftest import run_queued_tasks
from tests.search.test_search import conversation_of_facts

pytestmark = pytest.mark.django_db


@pytest.fixture
def remembered(api, tenant):
    """Caroline: an old session full of facts, a stored fact, a summary, and today's short session."""
    conversation_of_facts(tenant, "old-session")
    summary_create_now(tenant=tenant, conversation_id="old-session")
    conversation_of_facts(
        tenant,
        "today",
        rows=[("user", "Caroline", "Morning! " + "I slept badly. " * 40), ("assistant", "Melanie", "Oh no, coffee time then.")],
    )
    conversation_embed(tenant=tenant, conversation_id="today")
    assert api.put("/api/v1/users/caroline/facts/diet/", {"value": "vegetarian"}, format="json").status_code == 201


def context(api, **body):
    response = api.post("/api/v1/conversations/today/context/", {"use_memory": True, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_bundle_carries_its_five_parts(api, remembered):
    answer = context(api, query="What is the name of my puppy?")
    memory = answer["memory"]
    assert set(memory) >= {"context", "recent_messages", "summaries", "memories", "query_embedding_dim"}
    top = memory["context"][0]
    assert "Rex" in top["content"]
    assert top["session_id"] == "old-session"
    assert isinstance(top["similarity"], float)
    assert top["timestamp"].startswith("2023-05-08")
    assert [message["role"] for message in memory["recent_messages"]] == ["user", "assistant"]
    assert memory["summaries"][0]["session_id"] == "old-session"
    assert memory["summaries"][0]["message_count"] > 0
    assert memory["memories"] == [
        {
            "key": "diet",
            "value": "vegetarian",
            "updated_at": memory["memories"][0]["updated_at"],
            "tokenCount": memory["memories"][0]["tokenCount"],
        }
    ]
    assert memory["memories"][0]["tokenCount"] > 0
    assert memory["query_embedding_dim"] == 384


def test_the_relevant_past_joins_the_system_message(api, remembered):
    answer = context(api, query="What is the name of my puppy?", system_prompt="You are Caroline's assistant.")
    system = answer["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You are Caroline's assistant.")
    assert "Stored user facts:\n- diet: vegetarian" in system["content"]
    assert "Rex" in system["content"]
    assert answer["messages"][-1] == {"role": "user", "content": "What is the name of my puppy?"}


def test_the_rendered_prompt_follows_its_order_and_truncation(api, remembered):
    prompt = context(api, query="What is the name of my puppy?")["rendered_prompt"]
    order = [
        "Recent conversation history:",
        "Relevant past context:",
        "Summaries of earlier conversation:",
        "Stored user facts:",
        "Relevant earlier messages:",
        "Recent turns:",
        "User query: What is the name of my puppy?",
    ]
    positions = [prompt.index(heading) for heading in order]
    assert positions == sorted(positions)
    history = prompt.split("Relevant past context:")[0]
    long_line = next(line for line in history.splitlines() if "slept badly" in line)
    assert len(long_line) <= len("- user: ") + 200
    recent = prompt.split("Recent turns:")[1].split("User query:")[0]
    assert all(len(line) <= len("- user: ") + 180 for line in recent.splitlines() if line)


def test_the_memory_never_breaks_the_budget(api, remembered):
    answer = context(api, query="What is the name of my puppy?", max_tokens=400)
    assert answer["estimated_tokens"] <= 400


def test_a_changed_fact_shows_at_once_because_memory_contexts_are_not_cached(api, remembered):
    assert context(api, query="dinner ideas?")["cached"] is False
    api.put("/api/v1/users/caroline/facts/diet/", {"value": "vegan"}, format="json")
    answer = context(api, query="dinner ideas?")
    assert answer["cached"] is False
    assert answer["memory"]["memories"][0]["value"] == "vegan"


def test_without_use_memory_the_answer_has_no_bundle(api, remembered):
    response = api.post("/api/v1/conversations/today/context/", {"query": "hi"}, format="json")
    assert "memory" not in response.json()
    assert "rendered_prompt" not in response.json()


def test_a_conversation_without_a_user_still_gets_its_own_past(api, tenant):
    conversation_of_facts(tenant, "today", user_id="")
    memory = context(api, query="Tomasz Denver")["memory"]
    assert memory["memories"] == []
    assert any("Denver" in item["content"] for item in memory["context"])


def test_the_query_stored_before_asking_is_not_its_own_relevant_past(api, remembered, tenant):
    question = "What is the name of my puppy, the one I adopted in May?"
    stored = api.post("/api/v1/conversations/today/messages/", {"role": "user", "content": question}, format="json")
    run_queued_tasks()  # persisted and embedded, as the workers would do before the context is built
    conversation_embed(tenant=tenant, conversation_id="today")

    memory = context(api, query=question)["memory"]

    assert stored.json()["messages"][0]["id"] not in [item["message_id"] for item in memory["context"]]
    assert "Rex" in memory["context"][0]["content"]


def test_the_question_of_a_tool_loop_in_progress_is_not_its_own_relevant_past(api, remembered, tenant):
    # An agent asks again at each step of its tool loop: its question is no longer the newest message.
    question = "What is the name of my puppy, the one I adopted in May?"
    loop = [{"role": "user", "content": question}]
    for step in range(12):
        call = {"id": f"call-{step}", "name": "lookup", "args": {"step": step}, "type": "tool_call"}
        loop += [
            {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}},
            {"role": "tool", "content": f"nothing found at step {step}", "metadata": {"tool_call_id": f"call-{step}"}},
        ]
    assert api.post("/api/v1/conversations/today/messages/", {"messages": loop}, format="json").status_code == 201
    run_queued_tasks()
    conversation_embed(tenant=tenant, conversation_id="today")

    answer = context(api, query=question, short_term_turns=1)

    system = answer["messages"][0]
    assert system["role"] == "system"
    assert "Rex" in system["content"]  # the relevant past is there...
    assert question not in system["content"]  # ...without the question being asked


# --- The relevant past within the budget ---------------------------------------------------------


def relevant_block(answer):
    system = answer["messages"][0]["content"]
    assert "Relevant earlier messages:\n" in system
    return system.split("Relevant earlier messages:\n", 1)[1]


def long_past(tenant, sessions=12, turns=20):
    """A user's many dated sessions, each about its own subject, the puppy's name said once."""
    for number in range(1, sessions + 1):
        rows = []
        for turn in range(1, turns + 1):
            if (number, turn) == (7, 10):
                rows.append(("user", "Caroline", "The puppy I adopted from the shelter is called Biscuit."))
            elif (number, turn) == (7, 11):
                rows.append(("assistant", "Melanie", "Biscuit! That is the sweetest name for him."))
            else:
                rows.append(
                    (
                        "user" if turn % 2 else "assistant",
                        "Caroline" if turn % 2 else "Melanie",
                        f"Session {number} talk {turn}: " + "words about the garden and the weather. " * 3,
                    )
                )
        conversation_of_facts(tenant, f"past-{number}", rows=rows, start=datetime(2023, number, 3, 18, 0, tzinfo=UTC))
    Conversation.objects.for_tenant(tenant).create(tenant=tenant, conversation_id="today", user_id="caroline")


def test_a_new_conversation_gives_memory_most_of_the_budget_and_never_more(api, tenant):
    long_past(tenant)
    for max_tokens in (300, 1000, 4000):
        answer = context(api, query="What is my puppy called?", max_tokens=max_tokens)
        assert answer["estimated_tokens"] <= max_tokens
        assert answer["estimated_tokens"] > max_tokens * 0.8  # not a quarter: the conversation needs nothing else
        assert "called Biscuit" in answer["messages"][0]["content"]


def test_relevant_messages_are_whole_with_their_speaker_under_their_conversations_date(api, tenant):
    long_past(tenant)
    block = relevant_block(context(api, query="What is my puppy called?", max_tokens=1000))
    stored = {" ".join(message.content.split()) for message in Message.objects.for_tenant(tenant)}
    headings = [line for line in block.splitlines() if line.startswith("[")]
    assert "[Monday 3 July 2023, conversation past-7]" in headings
    for line in block.splitlines():
        if line.startswith("[") or line == "...":
            continue
        speaker, _, said = line.partition(": ")
        assert speaker in ("Caroline", "Melanie")
        assert said in stored  # whole, never cut (its spacing folded)
    # The answer's turn, with the turn after it that answers the question it raises, in the order said.
    assert (
        "Caroline: The puppy I adopted from the shelter is called Biscuit.\nMelanie: Biscuit! That is the sweetest name for him."
        in block
    )


def test_conversations_are_shown_in_the_order_they_were_held(api, tenant):
    long_past(tenant)
    block = relevant_block(context(api, query="garden weather session talk", max_tokens=3000))
    months = [line.split(" ")[2] for line in block.splitlines() if line.startswith("[")]
    order = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ]
    assert len(months) > 1
    assert months == sorted(months, key=order.index)


def test_the_turns_beside_a_hit_obey_the_search_filters(api, tenant):
    long_past(tenant)
    answer = context(api, query="What is my puppy called?", max_tokens=4000, memory_filters={"name": ["Caroline"]})
    block = relevant_block(answer)
    assert "called Biscuit" in block
    assert "Melanie:" not in block


def test_a_long_conversation_keeps_its_recent_turns_and_memory_takes_the_rest(api, tenant):
    long_past(tenant)
    recent = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"today's line {n} " + "about the weather " * 10}
        for n in range(40)
    ]
    assert api.post("/api/v1/conversations/today/messages/", {"messages": recent}, format="json").status_code == 201
    run_queued_tasks()
    answer = context(api, query="What is my puppy called?", max_tokens=2000, short_term_turns=3)
    assert answer["estimated_tokens"] <= 2000
    assert answer["turns_in_full"] >= 3
    assert "called Biscuit" in answer["messages"][0]["content"]
    assert answer["messages"][-1]["content"] == "What is my puppy called?"


def test_the_turns_beside_the_hits_come_with_their_speakers_in_one_query(api, tenant, django_assert_num_queries):
    long_past(tenant)
    hits = [
        {"session_id": "past-7", "seq": 10, "message_id": "hit-a", "name": None},
        {"session_id": "past-7", "seq": 12, "message_id": "hit-b", "name": None},
        {"session_id": "past-2", "seq": 1, "message_id": "hit-c", "name": None},
    ]
    with django_assert_num_queries(1):
        found = bundle._with_neighbours(tenant=tenant, hits=hits, filters=None)
    order = [(item["session_id"], item["seq"], item["name"]) for item in found]
    # Each neighbour right after its hit, once (seq 11 is beside both hits of past-7), with the
    # speaker its metadata names; the first turn has none before it.
    assert order == [
        ("past-7", 10, None),
        ("past-7", 9, "Caroline"),
        ("past-7", 11, "Melanie"),
        ("past-7", 12, None),
        ("past-7", 13, "Caroline"),
        ("past-2", 1, None),
        ("past-2", 2, "Melanie"),
    ]
