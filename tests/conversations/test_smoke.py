from conversations.models import Message
from tests.conftest import wait_for_rows


def test_an_appended_message_is_persisted_by_a_real_worker(api, tenant, worker):
    answer = api.post("/api/v1/conversations/c1/messages/", {"role": "user", "content": "hola"}, format="json")
    assert answer.status_code == 201, answer.content
    wait_for_rows(Message, tenant, 1)
    row = Message.objects.for_tenant(tenant).get()
    assert row.seq == answer.json()["messages"][0]["seq"]
