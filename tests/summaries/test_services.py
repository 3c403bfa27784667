"""When a periodic summary is due, which messages it covers, and that it is written once.

``tenant`` (acme) has ``MEMORY_SUMMARY_EVERY=10`` pairs and ``MEMORY_SUMMARY_WINDOW=12`` messages,
the defaults, unless a test says otherwise.
"""

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations import services as conversation_services
from core.exceptions import Conflict, NotFound
from summaries import services, summarizer
from summaries.models import Summary
from summaries.summarizer import RULE_BASED
from tenants.managers import TenantScopeError
from tests.summaries.conftest import pairs, store


def summaries_of(tenant: Any, conversation_id: str = "c1") -> list[tuple[int, int, int, int]]:
    """(pair_count, first_seq, last_seq, message_count) of each stored summary, oldest first."""
    rows = Summary.objects.for_tenant(tenant).filter(conversation__conversation_id=conversation_id).order_by("pair_count")
    return [(row.pair_count, row.first_seq, row.last_seq, row.message_count) for row in rows]


# --- Due ------------------------------------------------------------------------------------------


def test_nine_pairs_are_not_yet_due(tenant, conversation_of):
    conversation_of("c1", pairs(1, 9))

    assert services.conversation_summarize(tenant=tenant, conversation_id="c1") is None
    assert summaries_of(tenant) == []


def test_the_tenth_pair_makes_one_summary_of_the_last_twelve_messages(tenant, conversation_of):
    conversation_of("c1", pairs(1, 10))

    summary = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert summary is not None
    assert (summary.pair_count, summary.first_seq, summary.last_seq, summary.message_count) == (10, 9, 20, 12)
    assert summary.model == RULE_BASED
    assert "question 4" not in summary.text
    assert "User: question 10\nAssistant: answer 10" in summary.text
    assert summary.token_count > 0


def test_running_again_at_ten_pairs_writes_no_second_summary(tenant, conversation_of):
    conversation_of("c1", pairs(1, 10))
    services.conversation_summarize(tenant=tenant, conversation_id="c1")

    again = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert again is None
    assert summaries_of(tenant) == [(10, 9, 20, 12)]


def test_twenty_pairs_make_the_second_summary_and_twenty_five_none_new(tenant, conversation_of):
    conversation_of("c1", pairs(1, 10))
    services.conversation_summarize(tenant=tenant, conversation_id="c1")
    conversation_of("c1", pairs(11, 20))

    second = services.conversation_summarize(tenant=tenant, conversation_id="c1")
    conversation_of("c1", pairs(21, 25))
    at_twenty_five = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert second is not None
    assert at_twenty_five is None
    assert summaries_of(tenant) == [(10, 9, 20, 12), (20, 29, 40, 12)]


def test_a_missed_multiple_is_not_filled_in_only_the_newest_is_written(tenant, conversation_of):
    conversation_of("c1", pairs(1, 23))

    services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert summaries_of(tenant) == [(20, 29, 40, 12)]


def test_the_summary_waits_for_the_answer_to_the_tenth_question(tenant, conversation_of):
    conversation_of("c1", [*pairs(1, 9), ("user", "question 10")])
    assert services.conversation_summarize(tenant=tenant, conversation_id="c1") is None

    conversation_of(
        "c1",
        [
            ("assistant", "", {"tool_calls": [{"id": "call-1", "name": "lookup", "args": {}}]}),
            ("tool", "found it", {"tool_call_id": "call-1"}),
        ],
    )
    assert services.conversation_summarize(tenant=tenant, conversation_id="c1") is None

    conversation_of("c1", [("assistant", "answer 10")])
    summary = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert (summary.pair_count, summary.first_seq, summary.last_seq) == (10, 11, 22)
    assert "Assistant: answer 10" in summary.text
    assert summary.text.endswith("\nTools: lookup")


def test_a_pair_whose_answer_never_came_ends_at_the_next_question(tenant, conversation_of):
    conversation_of("c1", [*pairs(1, 9), ("user", "question 10"), ("user", "question 11")])

    summary = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert (summary.pair_count, summary.first_seq, summary.last_seq) == (10, 8, 19)
    assert "question 11" not in summary.text


def test_the_window_ends_where_the_tenth_pair_ends_even_when_later_messages_are_stored(tenant, conversation_of):
    conversation_of(
        "c1",
        [
            *pairs(1, 9),
            ("user", "question 10"),
            ("assistant", "answer 10, part one"),
            ("assistant", "And the flight to Oslo leaves at 09:40."),
            ("user", "question 11"),
            ("assistant", "answer 11"),
        ],
    )

    summary = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert (summary.pair_count, summary.first_seq, summary.last_seq, summary.message_count) == (10, 10, 21, 12)
    assert "question 11" not in summary.text
    assert "Assistant: And the flight to Oslo leaves at 09:40." in summary.text


def test_system_messages_count_in_the_window_but_not_as_pairs(tenant, conversation_of):
    conversation_of("c1", [("system", "You are a travel agent."), *pairs(1, 10)])

    summary = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert (summary.pair_count, summary.first_seq, summary.last_seq) == (10, 10, 21)


def test_a_short_window_covers_the_whole_conversation_when_it_is_shorter(tenant, conversation_of):
    tenant.settings = {"MEMORY_SUMMARY_EVERY": 2, "MEMORY_SUMMARY_WINDOW": 50}
    tenant.save()
    conversation_of("c1", pairs(1, 2))

    summary = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert (summary.pair_count, summary.first_seq, summary.last_seq, summary.message_count) == (2, 1, 4, 4)


def test_the_tenants_own_settings_decide_when_and_how_much(tenant, conversation_of):
    tenant.settings = {"MEMORY_SUMMARY_EVERY": 3, "MEMORY_SUMMARY_WINDOW": 4}
    tenant.save()
    conversation_of("c1", pairs(1, 3))

    summary = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert (summary.pair_count, summary.first_seq, summary.last_seq, summary.message_count) == (3, 3, 6, 4)


def test_summary_every_zero_turns_periodic_summaries_off(tenant, conversation_of):
    tenant.settings = {"MEMORY_SUMMARY_EVERY": 0}
    tenant.save()
    conversation_of("c1", pairs(1, 10))

    assert services.conversation_summarize(tenant=tenant, conversation_id="c1") is None


def test_the_deployments_chat_model_writes_the_summary(tenant, conversation_of, fake_model):
    conversation_of("c1", pairs(1, 10))

    summary = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert summary.model == fake_model.MODEL_NAME
    assert summary.text.startswith("- The user is planning a trip to Lisbon")
    [prompt] = fake_model.calls.prompts
    transcript = prompt[1].content
    assert "user: question 5\n\nassistant: answer 5" in transcript
    assert "question 4\n" not in transcript
    assert transcript.endswith("user: question 10\n\nassistant: answer 10")


def test_a_failing_chat_model_still_gets_a_rule_based_summary_stored(tenant, conversation_of, fake_model):
    fake_model.behaviour.error = TimeoutError("the provider is down")
    conversation_of("c1", pairs(1, 10))

    summary = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert summary.model == RULE_BASED
    assert summaries_of(tenant) == [(10, 9, 20, 12)]


# --- Erased, cleared, concurrent ----------------------------------------------------------------------


def test_an_erased_conversation_is_not_an_error(tenant):
    assert services.conversation_summarize(tenant=tenant, conversation_id="gone") is None


def test_erasing_a_conversation_erases_its_summaries(tenant, conversation_of):
    conversation_of("c1", pairs(1, 10))
    services.conversation_summarize(tenant=tenant, conversation_id="c1")

    conversation_services.conversation_erase(tenant=tenant, conversation_id="c1")

    assert not Summary.objects.for_tenant(tenant).exists()
    assert services.conversation_summarize(tenant=tenant, conversation_id="c1") is None


def test_after_a_cleared_history_the_next_tenth_pair_is_summarised_again(tenant, conversation_of):
    conversation_of("c1", pairs(1, 10))
    services.conversation_summarize(tenant=tenant, conversation_id="c1")
    conversation_services.conversation_erase(tenant=tenant, conversation_id="c1", messages_only=True)
    conversation_of("c1", pairs(101, 110))

    summary = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert summary is not None
    assert "question 110" in summary.text
    assert "question 10\n" not in summary.text
    assert summary.first_seq > 20
    assert [row[0] for row in summaries_of(tenant)] == [10]


def test_a_summary_written_meanwhile_by_another_run_stands(tenant, conversation_of, monkeypatch):
    """Two runs race: the first to store wins; the other stores nothing and raises nothing."""
    conversation = conversation_of("c1", pairs(1, 10))
    summarize = summarizer.summarize

    def answer_while_the_other_run_stores(*args: Any, **kwargs: Any) -> Any:
        written = summarize(*args, **kwargs)
        Summary.objects.for_tenant(tenant).create(
            tenant=tenant,
            conversation=conversation,
            text="- written by the other run",
            model="other",
            message_count=12,
            pair_count=10,
            first_seq=9,
            last_seq=20,
            token_count=6,
        )
        return written

    monkeypatch.setattr(summarizer, "summarize", answer_while_the_other_run_stores)

    result = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert result is None
    assert list(Summary.objects.for_tenant(tenant).values_list("text", flat=True)) == ["- written by the other run"]


@pytest.mark.django_db(transaction=True)
def test_a_conversation_erased_while_the_model_answers_gets_no_summary_and_no_error(tenant, conversation_of, monkeypatch):
    conversation_of("c1", pairs(1, 10))
    summarize = summarizer.summarize

    def answer_while_the_conversation_is_erased(*args: Any, **kwargs: Any) -> Any:
        written = summarize(*args, **kwargs)
        conversation_services.conversation_erase(tenant=tenant, conversation_id="c1")
        return written

    monkeypatch.setattr(summarizer, "summarize", answer_while_the_conversation_is_erased)

    assert services.conversation_summarize(tenant=tenant, conversation_id="c1") is None
    assert not Summary.objects.for_tenant(tenant).exists()


def test_deciding_that_nothing_is_due_takes_a_few_queries_and_no_model(tenant, conversation_of, fake_model):
    conversation_of("c1", pairs(1, 10))
    services.conversation_summarize(tenant=tenant, conversation_id="c1")
    conversation_of("c1", pairs(11, 12))

    with CaptureQueriesContext(connection) as queries:
        services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert len(queries) <= 4
    assert len(fake_model.calls.prompts) == 1


# --- On request -----------------------------------------------------------------------------------------


def test_a_summary_on_request_covers_the_last_window_under_the_current_pair_count(tenant, conversation_of):
    conversation_of("c1", [*pairs(1, 13), ("user", "question 14")])

    summary = services.summary_create_now(tenant=tenant, conversation_id="c1")

    assert (summary.pair_count, summary.first_seq, summary.last_seq, summary.message_count) == (14, 16, 27, 12)
    assert "question 14" in summary.text


def test_a_second_request_at_the_same_pair_count_returns_the_stored_summary(tenant, conversation_of):
    conversation_of("c1", pairs(1, 10))
    periodic = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    requested = services.summary_create_now(tenant=tenant, conversation_id="c1")
    again = services.summary_create_now(tenant=tenant, conversation_id="c1")

    assert requested.pk == again.pk == periodic.pk
    assert Summary.objects.for_tenant(tenant).count() == 1


def test_a_summary_on_request_does_not_stop_the_periodic_one_of_a_later_pair(tenant, conversation_of):
    conversation_of("c1", pairs(1, 7))
    services.summary_create_now(tenant=tenant, conversation_id="c1")
    conversation_of("c1", pairs(8, 10))

    periodic = services.conversation_summarize(tenant=tenant, conversation_id="c1")

    assert [row[0] for row in summaries_of(tenant)] == [7, 10]
    assert periodic.pair_count == 10


def test_a_summary_on_request_of_a_missing_or_empty_conversation_is_refused(tenant, conversation_of):
    conversation_of("empty", [])

    with pytest.raises(NotFound):
        services.summary_create_now(tenant=tenant, conversation_id="missing")
    with pytest.raises(Conflict, match="no persisted message"):
        services.summary_create_now(tenant=tenant, conversation_id="empty")
    assert not Summary.objects.for_tenant(tenant).exists()


# --- Tenants ----------------------------------------------------------------------------------------------


def test_another_tenants_conversation_of_the_same_id_is_never_summarised_or_counted(tenant, other_tenant, conversation_of):
    store(other_tenant, "c1", pairs(1, 10))
    conversation_of("c1", pairs(1, 9))

    assert services.conversation_summarize(tenant=tenant, conversation_id="c1") is None
    assert services.conversation_summarize(tenant=other_tenant, conversation_id="c1") is not None
    assert summaries_of(tenant) == []
    assert summaries_of(other_tenant) == [(10, 9, 20, 12)]


def test_summaries_cannot_be_queried_without_a_tenant(tenant, conversation_of):
    conversation_of("c1", pairs(1, 10))
    services.conversation_summarize(tenant=tenant, conversation_id="c1")

    with pytest.raises(TenantScopeError):
        list(Summary.objects.all())
    with pytest.raises(TenantScopeError):
        Summary.objects.filter(pair_count=10).count()
