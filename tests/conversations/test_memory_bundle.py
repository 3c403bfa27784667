"""The context with long-term memory (``use_memory``): the bundle, the rendered prompt, and
the relevant past that joins the system message within the budget."""

import pytest

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
