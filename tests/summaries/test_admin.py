"""The operators' admin for summaries: scoped to the operator's tenant, read-only.

``operator`` is staff of acme (``tenant``); globex (``other_tenant``) owns a summary that must never
show up for them.
"""

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from summaries import services
from summaries.models import Summary
from tests.summaries.conftest import pairs, store

CHANGELIST = "/admin/summaries/summary/"


@pytest.fixture
def summary_operator(operator: Any, operator_client: Any) -> Any:
    """The acme operator, allowed to view summaries."""
    operator.user_permissions.add(Permission.objects.get(content_type__app_label="summaries", codename="view_summary"))
    return operator_client


@pytest.fixture
def acme_and_globex(tenant: Any, other_tenant: Any) -> dict[str, Summary]:
    store(tenant, "acme-chat", [*pairs(1, 9), ("user", "<b>question 10</b>"), ("assistant", "answer 10")])
    store(other_tenant, "globex-chat", pairs(1, 10))
    return {
        "acme": services.conversation_summarize(tenant=tenant, conversation_id="acme-chat"),
        "globex": services.conversation_summarize(tenant=other_tenant, conversation_id="globex-chat"),
    }


def test_an_operator_sees_their_tenants_summaries_only_and_reads_one(summary_operator, acme_and_globex):
    listed = summary_operator.get(CHANGELIST)
    searched = summary_operator.get(CHANGELIST, {"q": "acme-"})
    missed = summary_operator.get(CHANGELIST, {"q": "globex-"})
    other = summary_operator.get(f"{CHANGELIST}{acme_and_globex['globex'].pk}/change/")
    page = summary_operator.get(f"{CHANGELIST}{acme_and_globex['acme'].pk}/change/")

    assert listed.status_code == 200
    assert [row.pk for row in listed.context["cl"].result_list] == [acme_and_globex["acme"].pk]
    assert [row.pk for row in searched.context["cl"].result_list] == [acme_and_globex["acme"].pk]
    assert list(missed.context["cl"].result_list) == []
    assert other.status_code == 404
    html = page.content.decode()
    assert page.status_code == 200
    assert "&lt;b&gt;question 10&lt;/b&gt;" in html  # the text, escaped
    assert 'name="text"' not in html  # read-only: no form field


def test_summaries_cannot_be_added_changed_or_deleted_in_the_admin(summary_operator, acme_and_globex, tenant):
    acme = acme_and_globex["acme"]

    added = summary_operator.get(f"{CHANGELIST}add/")
    changed = summary_operator.post(f"{CHANGELIST}{acme.pk}/change/", {"text": "rewritten"})
    deleted = summary_operator.post(f"{CHANGELIST}{acme.pk}/delete/", {"post": "yes"})

    assert added.status_code == 403
    assert changed.status_code == 403
    assert deleted.status_code == 403
    assert Summary.objects.for_tenant(tenant).get().text == acme.text


def test_a_superuser_sees_every_tenants_summaries(admin_client, acme_and_globex):
    listed = admin_client.get(CHANGELIST)

    assert listed.status_code == 200
    assert {row.pk for row in listed.context["cl"].result_list} == {summary.pk for summary in acme_and_globex.values()}
