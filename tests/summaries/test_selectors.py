"""The summaries a memory context carries (the bundle's ``summaries``): the conversation's own newest
first, then the same user's other conversations', never another user's or another tenant's."""

from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError
from django.utils import timezone

from core.exceptions import NotFound
from summaries import selectors
from summaries.models import Summary
from tests.summaries.conftest import store

CONTEXT_KEYS = {"session_id", "summary", "message_count", "model", "timestamp"}


def summary(tenant: Any, conversation_id: str, pair_count: int, *, minutes_ago: int, user_id: str = "ana") -> Summary:
    """A stored summary of ``conversation_id`` made ``minutes_ago``."""
    conversation = store(tenant, conversation_id, [], user_id=user_id)
    row = Summary.objects.for_tenant(tenant).create(
        tenant=tenant,
        conversation=conversation,
        text=f"{conversation_id} after {pair_count} pairs",
        model="rule_based",
        message_count=12,
        pair_count=pair_count,
        first_seq=1,
        last_seq=12,
        token_count=5,
    )
    # created_at is set on insert; moved back here so the order is the test's.
    Summary.objects.for_tenant(tenant).filter(pk=row.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    return row


@pytest.fixture
def anas_history(tenant: Any, other_tenant: Any) -> None:
    summary(tenant, "today", 10, minutes_ago=30)
    summary(tenant, "today", 20, minutes_ago=5)
    summary(tenant, "yesterday", 10, minutes_ago=60 * 24)
    summary(tenant, "last-week", 10, minutes_ago=60 * 24 * 7)
    summary(tenant, "bens", 10, minutes_ago=1, user_id="ben")
    summary(tenant, "anonymous", 10, minutes_ago=1, user_id="")
    summary(other_tenant, "globex-ana", 10, minutes_ago=1)


def texts(found: list[dict[str, Any]]) -> list[str]:
    return [item["summary"] for item in found]


def test_the_conversations_own_summaries_come_first_then_the_users_other_conversations(tenant, anas_history):
    found = selectors.summaries_for_context(tenant=tenant, conversation_id="today", user_id="ana")

    assert texts(found) == ["today after 20 pairs", "today after 10 pairs", "yesterday after 10 pairs"]
    assert set(found[0]) == CONTEXT_KEYS
    assert (found[0]["session_id"], found[2]["session_id"], found[0]["message_count"], found[0]["model"]) == (
        "today",
        "yesterday",
        12,
        "rule_based",
    )
    assert found[0]["timestamp"].endswith("+00:00")


def test_the_user_defaults_to_the_conversations_own(tenant, anas_history):
    found = selectors.summaries_for_context(tenant=tenant, conversation_id="today", user_id=None, limit=5)

    assert texts(found) == [
        "today after 20 pairs",
        "today after 10 pairs",
        "yesterday after 10 pairs",
        "last-week after 10 pairs",
    ]


def test_a_new_conversation_gets_the_users_newest_summaries(tenant, anas_history):
    found = selectors.summaries_for_context(tenant=tenant, conversation_id="not-stored-yet", user_id="ana", limit=2)

    assert texts(found) == ["today after 20 pairs", "today after 10 pairs"]


def test_no_user_means_no_other_conversations(tenant, anas_history):
    anonymous = selectors.summaries_for_context(tenant=tenant, conversation_id="anonymous", user_id=None)
    nobody = selectors.summaries_for_context(tenant=tenant, conversation_id=None, user_id="")

    assert texts(anonymous) == ["anonymous after 10 pairs"]
    assert nobody == []


def test_another_tenants_summaries_never_appear_even_for_the_same_user_id(tenant, other_tenant, anas_history):
    found = selectors.summaries_for_context(tenant=tenant, conversation_id=None, user_id="ana", limit=10)
    theirs = selectors.summaries_for_context(tenant=other_tenant, conversation_id="today", user_id="ana", limit=10)

    assert "globex-ana after 10 pairs" not in texts(found)
    assert len(found) == 4
    assert texts(theirs) == ["globex-ana after 10 pairs"]


def test_an_unreachable_database_gives_a_context_without_summaries(tenant, anas_history, monkeypatch):
    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")

    monkeypatch.setattr(selectors, "_context_summaries", unreachable)

    assert selectors.summaries_for_context(tenant=tenant, conversation_id="today", user_id="ana") == []


def test_the_list_is_newest_first_and_another_tenants_conversation_is_not_found(tenant, other_tenant, anas_history):
    listed = selectors.summaries_list(tenant=tenant, conversation_id="today", limit=20)

    assert [row.pair_count for row in listed] == [20, 10]
    with pytest.raises(NotFound):
        selectors.summaries_list(tenant=other_tenant, conversation_id="today", limit=20)


def test_a_context_reads_its_summaries_in_one_query(tenant, anas_history, django_assert_num_queries):
    with django_assert_num_queries(1):
        found = selectors.summaries_for_context(tenant=tenant, conversation_id="today", user_id=None, limit=3)
    with django_assert_num_queries(1):
        nothing = selectors.summaries_for_context(tenant=tenant, conversation_id="missing", user_id="nobody")

    assert texts(found) == ["today after 20 pairs", "today after 10 pairs", "yesterday after 10 pairs"]
    assert nothing == []
