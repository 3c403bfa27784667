"""The operators' admin for checkpoints: scoped to the operator's tenant, read-only, deletable.

``operator`` is staff of acme (``tenant``); globex (``other_tenant``) owns a checkpoint that must never
show up for them.
"""

from typing import Any

import pytest

from checkpoints import services
from checkpoints.models import Checkpoint, CheckpointWrite

CHANGELIST = "/admin/checkpoints/checkpoint/"


@pytest.fixture
def checkpoint_operator(operator: Any, operator_client: Any) -> Any:
    """The acme operator: the operators' group may view and delete checkpoints."""
    return operator_client


@pytest.fixture
def acme_and_globex(tenant: Any, other_tenant: Any) -> dict[str, Checkpoint]:
    services.checkpoint_save(
        tenant=tenant, conversation_id="acme-chat", checkpoint_id="acme-cp", state={"answer": "<b>forty-two</b>"}
    )
    services.checkpoint_writes_save(
        tenant=tenant,
        conversation_id="acme-chat",
        checkpoint_id="acme-cp",
        task_id="task-a",
        writes=[{"idx": 0, "channel": "messages", "value": {"text": "pending write"}}],
    )
    services.checkpoint_save(tenant=other_tenant, conversation_id="globex-chat", checkpoint_id="globex-cp", state={"secret": 1})
    return {
        "acme": Checkpoint.objects.for_tenant(tenant).get(checkpoint_id="acme-cp"),
        "globex": Checkpoint.objects.for_tenant(other_tenant).get(checkpoint_id="globex-cp"),
    }


def test_an_operator_sees_their_tenants_checkpoints_only_and_reads_one_with_its_writes(
    checkpoint_operator, acme_and_globex, tenant
):
    listed = checkpoint_operator.get(CHANGELIST)
    searched = checkpoint_operator.get(CHANGELIST, {"q": "acme-"})
    other = checkpoint_operator.get(f"{CHANGELIST}{acme_and_globex['globex'].pk}/change/")
    page = checkpoint_operator.get(f"{CHANGELIST}{acme_and_globex['acme'].pk}/change/")

    assert listed.status_code == 200
    assert [checkpoint.checkpoint_id for checkpoint in listed.context["cl"].result_list] == ["acme-cp"]
    assert [checkpoint.checkpoint_id for checkpoint in searched.context["cl"].result_list] == ["acme-cp"]
    assert other.status_code == 404
    html = page.content.decode()
    assert page.status_code == 200
    assert "&lt;b&gt;forty-two&lt;/b&gt;" in html  # the state, escaped
    assert "pending write" in html
    assert 'name="state"' not in html  # read-only: no form field


def test_an_operator_deletes_a_checkpoint_with_its_writes_but_not_another_tenants(
    checkpoint_operator, acme_and_globex, tenant, other_tenant
):
    acme, globex = acme_and_globex["acme"], acme_and_globex["globex"]

    foreign = checkpoint_operator.post(f"{CHANGELIST}{globex.pk}/delete/", {"post": "yes"})
    own = checkpoint_operator.post(f"{CHANGELIST}{acme.pk}/delete/", {"post": "yes"})

    assert foreign.status_code == 404
    assert own.status_code == 302
    assert not Checkpoint.objects.for_tenant(tenant).exists()
    assert not CheckpointWrite.objects.for_tenant(tenant).exists()
    assert Checkpoint.objects.for_tenant(other_tenant).count() == 1
