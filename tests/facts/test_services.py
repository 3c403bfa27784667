"""The user facts services and selectors: history semantics, concurrent writes, the erase of a user,
the prompt context shape and tenant scoping.

acme (``tenant``) and globex (``other_tenant``) both have a user "u1": two different users.
"""

import threading
from datetime import datetime
from typing import Any

import pytest
from django.db import connection, transaction

from conversations import tokens
from core.exceptions import LimitExceeded, NotFound
from facts import selectors, services
from facts.models import UserFact, UserFactChange
from tenants.managers import TenantScopeError
from tests.faults import wait_until


def changes(tenant: Any, user_id: str = "u1", key: str | None = None) -> list[tuple[str, str, str, str | None]]:
    return [
        (change.key, change.action, change.value, change.previous_value)
        for change in selectors.fact_history(tenant=tenant, user_id=user_id, key=key)
    ]


def rows_of(tenant: Any, user_id: str) -> tuple[int, int]:
    return (
        UserFact.objects.for_tenant(tenant).filter(user_id=user_id).count(),
        UserFactChange.objects.for_tenant(tenant).filter(user_id=user_id).count(),
    )


# --- Set, supersede, delete -------------------------------------------------------------------------


def test_a_changed_value_is_superseded_and_kept_in_the_history(tenant):
    first, created = services.fact_set(tenant=tenant, user_id="u1", key="city", value="Lisbon")
    second, created_again = services.fact_set(tenant=tenant, user_id="u1", key="city", value="Porto")

    assert (created, created_again) == (True, False)
    assert second.pk == first.pk
    assert selectors.fact_get(tenant=tenant, user_id="u1", key="city").value == "Porto"
    assert changes(tenant) == [("city", "set", "Porto", "Lisbon"), ("city", "set", "Lisbon", None)]


def test_setting_the_same_value_again_adds_no_change_and_keeps_updated_at(tenant):
    services.fact_set(tenant=tenant, user_id="u1", key="city", value="Lisbon")
    before = selectors.fact_get(tenant=tenant, user_id="u1", key="city")

    services.fact_set(tenant=tenant, user_id="u1", key="city", value="Lisbon")
    services.facts_set_many(tenant=tenant, user_id="u1", facts={"city": "Lisbon"})

    after = selectors.fact_get(tenant=tenant, user_id="u1", key="city")
    assert after.updated_at == before.updated_at
    assert len(changes(tenant)) == 1


def test_a_deleted_fact_stays_in_the_history_and_a_missing_one_is_not_found(tenant):
    services.fact_set(tenant=tenant, user_id="u1", key="pet", value="cat")

    services.fact_delete(tenant=tenant, user_id="u1", key="pet")

    assert selectors.facts_list(tenant=tenant, user_id="u1") == []
    assert changes(tenant, key="pet") == [("pet", "delete", "", "cat"), ("pet", "set", "cat", None)]
    with pytest.raises(NotFound):
        services.fact_delete(tenant=tenant, user_id="u1", key="pet")
    with pytest.raises(NotFound):
        selectors.fact_get(tenant=tenant, user_id="u1", key="pet")


def test_a_batch_returns_its_facts_in_order_and_one_change_per_changed_value(tenant):
    services.fact_set(tenant=tenant, user_id="u1", key="name", value="Ada")

    facts = services.facts_set_many(tenant=tenant, user_id="u1", facts={"pet": "cat", "name": "Ada", "city": "Paris"})

    assert [(fact.key, fact.value) for fact in facts] == [("pet", "cat"), ("name", "Ada"), ("city", "Paris")]
    assert all(fact.pk for fact in facts)
    assert sorted(change[0] for change in changes(tenant)) == ["city", "name", "pet"]


def test_a_batch_with_one_bad_fact_writes_nothing(tenant, settings):
    settings.MEMORY_MAX_FACT_VALUE_CHARS = 5

    with pytest.raises(LimitExceeded, match="MEMORY_MAX_FACT_VALUE_CHARS=5"):
        services.facts_set_many(tenant=tenant, user_id="u1", facts={"a": "short", "b": "far too long"})
    with pytest.raises(services.InvalidFact, match="must be a string"):
        services.facts_set_many(tenant=tenant, user_id="u1", facts={"a": "short", "b": 7})

    assert rows_of(tenant, "u1") == (0, 0)


def test_the_token_count_is_the_fact_as_a_prompt_shows_it(tenant):
    fact, _ = services.fact_set(tenant=tenant, user_id="u1", key="favourite_book", value="Middlemarch, by George Eliot")

    assert fact.token_count == tokens.count("favourite_book: Middlemarch, by George Eliot")
    assert fact.token_count > tokens.count("Middlemarch, by George Eliot")


def test_the_facts_per_user_limit_is_read_from_the_tenant_at_call_time(tenant):
    tenant.settings = {"MEMORY_MAX_FACTS_PER_USER": 1}

    services.fact_set(tenant=tenant, user_id="u1", key="a", value="1")
    with pytest.raises(LimitExceeded, match="MEMORY_MAX_FACTS_PER_USER=1"):
        services.fact_set(tenant=tenant, user_id="u1", key="b", value="1")


# --- Concurrent writes --------------------------------------------------------------------------------


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0] > 0


def test_two_concurrent_first_sets_of_one_key_both_succeed_and_the_later_supersedes(transactional_db, tenant):
    """The first set holds its transaction open; the second runs meanwhile, waits, then updates."""
    first_written, release = threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    def first() -> None:
        try:
            with transaction.atomic():
                results["first"] = services.fact_set(tenant=tenant, user_id="u1", key="city", value="Lisbon")
                first_written.set()
                release.wait(timeout=30)
        except Exception as error:  # reported by the assertions below
            results["first"] = error
            first_written.set()
        finally:
            connection.close()

    def second() -> None:
        try:
            results["second"] = services.fact_set(tenant=tenant, user_id="u1", key="city", value="Porto")
        except Exception as error:  # reported by the assertions below
            results["second"] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert first_written.wait(timeout=30)
    threads[1].start()
    wait_until(_waiting_on_a_lock, timeout=30, message="the second set to wait for the first")
    release.set()
    for thread in threads:
        thread.join(timeout=30)

    assert not [result for result in results.values() if isinstance(result, Exception)], results
    (first_fact, first_created), (second_fact, second_created) = results["first"], results["second"]
    assert (first_created, second_created) == (True, False)
    assert second_fact.pk == first_fact.pk
    assert [(fact.key, fact.value) for fact in selectors.facts_list(tenant=tenant, user_id="u1")] == [("city", "Porto")]
    assert changes(tenant) == [("city", "set", "Porto", "Lisbon"), ("city", "set", "Lisbon", None)]


# --- Erasing a user -----------------------------------------------------------------------------------


def test_erasing_a_user_leaves_no_fact_or_change_of_theirs_and_touches_no_other_user(tenant, other_tenant):
    services.facts_set_many(tenant=tenant, user_id="u1", facts={"a": "1", "b": "1"})
    services.fact_set(tenant=tenant, user_id="u1", key="a", value="2")
    services.fact_delete(tenant=tenant, user_id="u1", key="b")
    services.fact_set(tenant=tenant, user_id="u2", key="a", value="1")
    services.fact_set(tenant=other_tenant, user_id="u1", key="a", value="1")

    erased = services.user_facts_erase(tenant=tenant, user_id="u1")

    assert erased == 1 + 4  # fact "a"; changes: a set, b set, a set, b delete
    assert rows_of(tenant, "u1") == (0, 0)
    # Across every tenant: the only rows left naming "u1" are globex's, another user.
    assert set(UserFact.unscoped.filter(user_id="u1").values_list("tenant", flat=True)) == {other_tenant.pk}
    assert set(UserFactChange.unscoped.filter(user_id="u1").values_list("tenant", flat=True)) == {other_tenant.pk}
    assert rows_of(tenant, "u2") == (1, 1)
    assert rows_of(other_tenant, "u1") == (1, 1)
    assert services.user_facts_erase(tenant=tenant, user_id="u1") == 0


# --- Reads --------------------------------------------------------------------------------------------


def test_facts_for_context_are_in_the_bundle_shape_newest_first_and_limited(tenant):
    services.fact_set(tenant=tenant, user_id="u1", key="name", value="Ada")
    services.fact_set(tenant=tenant, user_id="u1", key="city", value="London")
    services.fact_set(tenant=tenant, user_id="u1", key="pet", value="cat")

    context = selectors.facts_for_context(tenant=tenant, user_id="u1", limit=2)

    assert [set(item) for item in context] == [{"key", "value", "updated_at", "tokenCount"}] * 2
    assert [(item["key"], item["value"]) for item in context] == [("pet", "cat"), ("city", "London")]
    assert context[0]["tokenCount"] == tokens.count("pet: cat")
    assert datetime.fromisoformat(context[0]["updated_at"]).utcoffset().total_seconds() == 0
    assert len(selectors.facts_for_context(tenant=tenant, user_id="u1")) == 3


def test_reads_of_one_tenant_never_return_another_tenants_facts(tenant, other_tenant):
    services.fact_set(tenant=other_tenant, user_id="u1", key="secret", value="globex")

    assert selectors.facts_list(tenant=tenant, user_id="u1") == []
    assert selectors.facts_for_context(tenant=tenant, user_id="u1") == []
    assert selectors.fact_history(tenant=tenant, user_id="u1") == []
    with pytest.raises(NotFound):
        selectors.fact_get(tenant=tenant, user_id="u1", key="secret")
    with pytest.raises(NotFound):
        services.fact_delete(tenant=tenant, user_id="u1", key="secret")
    assert services.user_facts_erase(tenant=tenant, user_id="u1") == 0
    assert rows_of(other_tenant, "u1") == (1, 1)


def test_an_unscoped_facts_query_raises(tenant):
    services.fact_set(tenant=tenant, user_id="u1", key="a", value="1")

    with pytest.raises(TenantScopeError):
        UserFact.objects.filter(user_id="u1").count()
    with pytest.raises(TenantScopeError):
        list(UserFactChange.objects.all())
    with pytest.raises(TenantScopeError):
        UserFact.objects.filter(user_id="u1").delete()
