"""The operators' admin for user facts: scoped to the operator's tenant, read-only, deletable through
the service (so the history keeps the deleted value), with the history browsable but never editable.

``operator`` is staff of acme (``tenant``); globex (``other_tenant``) owns facts of its own user "u1"
that must never show up for them.
"""

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from facts import selectors, services
from facts.models import UserFact, UserFactChange

FACTS = "/admin/facts/userfact/"
CHANGES = "/admin/facts/userfactchange/"
FACT_PERMISSIONS = ("view_userfact", "delete_userfact", "view_userfactchange")


@pytest.fixture
def facts_operator(operator: Any, operator_client: Any) -> Any:
    """The acme operator, allowed to view and delete facts and to view their history."""
    operator.user_permissions.add(*Permission.objects.filter(content_type__app_label="facts", codename__in=FACT_PERMISSIONS))
    return operator_client


@pytest.fixture
def acme_and_globex(tenant: Any, other_tenant: Any) -> dict[str, UserFact]:
    services.fact_set(tenant=tenant, user_id="u1", key="city", value="Lisbon")
    services.fact_set(tenant=tenant, user_id="u1", key="city", value="<b>Porto</b>")
    services.fact_set(tenant=tenant, user_id="u2", key="pet", value="cat")
    services.fact_set(tenant=other_tenant, user_id="u1", key="city", value="Oslo")
    return {
        "acme": selectors.fact_get(tenant=tenant, user_id="u1", key="city"),
        "globex": selectors.fact_get(tenant=other_tenant, user_id="u1", key="city"),
    }


def listed(answer: Any) -> list[tuple[str, str]]:
    assert answer.status_code == 200
    return sorted((row.user_id, row.key) for row in answer.context["cl"].result_list)


def test_an_operator_lists_and_searches_their_tenants_facts_only(facts_operator, acme_and_globex):
    assert listed(facts_operator.get(FACTS)) == [("u1", "city"), ("u2", "pet")]
    assert listed(facts_operator.get(FACTS, {"q": "u2"})) == [("u2", "pet")]
    assert listed(facts_operator.get(FACTS, {"q": "cit"})) == [("u1", "city")]
    assert facts_operator.get(f"{FACTS}{acme_and_globex['globex'].pk}/change/").status_code == 404


def test_a_facts_page_is_read_only_and_shows_its_history_escaped(facts_operator, acme_and_globex):
    page = facts_operator.get(f"{FACTS}{acme_and_globex['acme'].pk}/change/")

    html = page.content.decode()
    assert page.status_code == 200
    assert "&lt;b&gt;Porto&lt;/b&gt;" in html
    assert "Lisbon" in html  # the superseded value, from the history
    assert 'name="value"' not in html
    assert "Oslo" not in html
    assert facts_operator.get(f"{FACTS}add/").status_code == 403


def test_the_history_admin_lists_their_tenants_changes_only_and_cannot_change_them(facts_operator, acme_and_globex, other_tenant):
    answer = facts_operator.get(CHANGES, {"user_id": "u1", "key": "city"})
    foreign = UserFactChange.objects.for_tenant(other_tenant).get()

    assert answer.status_code == 200
    assert [(change.action, change.value) for change in answer.context["cl"].result_list] == [
        ("set", "<b>Porto</b>"),
        ("set", "Lisbon"),
    ]
    assert facts_operator.get(f"{CHANGES}{foreign.pk}/change/").status_code == 404
    assert facts_operator.post(f"{CHANGES}{foreign.pk}/delete/", {"post": "yes"}).status_code in (403, 404)


def test_deleting_a_fact_in_the_admin_keeps_it_in_the_history_and_another_tenants_is_out_of_reach(
    facts_operator, acme_and_globex, tenant, other_tenant
):
    acme, globex = acme_and_globex["acme"], acme_and_globex["globex"]

    foreign = facts_operator.post(f"{FACTS}{globex.pk}/delete/", {"post": "yes"})
    own = facts_operator.post(f"{FACTS}{acme.pk}/delete/", {"post": "yes"})

    assert foreign.status_code == 404
    assert own.status_code == 302
    assert not UserFact.objects.for_tenant(tenant).filter(user_id="u1").exists()
    newest = selectors.fact_history(tenant=tenant, user_id="u1", key="city")[0]
    assert (newest.action, newest.previous_value) == ("delete", "<b>Porto</b>")
    assert UserFact.objects.for_tenant(other_tenant).count() == 1


def test_the_delete_action_on_several_facts_records_each_deletion(facts_operator, acme_and_globex, tenant):
    ids = list(UserFact.objects.for_tenant(tenant).values_list("pk", flat=True))

    answer = facts_operator.post(FACTS, {"action": "delete_selected", "_selected_action": ids, "post": "yes"})

    assert answer.status_code == 302
    assert not UserFact.objects.for_tenant(tenant).exists()
    deletions = UserFactChange.objects.for_tenant(tenant).filter(action="delete")
    assert sorted(deletions.values_list("user_id", "key")) == [("u1", "city"), ("u2", "pet")]
