"""The operators' admin for store items: acme's operator browses and edits acme's items only, and an
edit goes through the store's rules (the door, the size limit) and re-indexes the item."""

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from store import selectors, services
from store.models import StoreItem

ITEMS = "/admin/store/storeitem/"
PERMISSIONS = ("view_storeitem", "change_storeitem", "delete_storeitem")

pytestmark = pytest.mark.django_db


@pytest.fixture
def store_operator(operator: Any, operator_client: Any) -> Any:
    operator.user_permissions.add(*Permission.objects.filter(content_type__app_label="store", codename__in=PERMISSIONS))
    return operator_client


def put(tenant: Any, namespace: tuple[str, ...], key: str, value: dict[str, Any], **options: Any) -> StoreItem:
    operation = services.PutOperation(namespace=namespace, key=key, value=value, **options)
    services.store_batch(tenant=tenant, operations=[operation])
    return StoreItem.objects.for_tenant(tenant).get(namespace=list(namespace), key=key)


@pytest.fixture
def items(tenant: Any, other_tenant: Any) -> dict[str, StoreItem]:
    return {
        "acme": put(tenant, ("memories", "u1"), "pet", {"text": "a cat named <b>Tom</b>"}),
        "acme-timed": put(tenant, ("memories", "u2"), "city", {"text": "Lisbon"}, ttl=60),
        "globex": put(other_tenant, ("memories", "u1"), "pet", {"text": "globex parrot"}),
    }


def listed(answer: Any) -> list[str]:
    assert answer.status_code == 200
    return sorted(item.key for item in answer.context["cl"].result_list)


def test_an_operator_lists_and_searches_their_tenants_items_only(store_operator, items):
    assert listed(store_operator.get(ITEMS)) == ["city", "pet"]
    assert listed(store_operator.get(ITEMS, {"q": "Lisbon"})) == ["city"]
    assert listed(store_operator.get(ITEMS, {"q": "parrot"})) == []
    assert store_operator.get(f"{ITEMS}{items['globex'].pk}/change/").status_code == 404


def test_an_items_page_shows_its_value_escaped(store_operator, items):
    html = store_operator.get(f"{ITEMS}{items['acme'].pk}/change/").content.decode()
    assert "&lt;b&gt;Tom&lt;/b&gt;" in html
    assert "<b>Tom</b>" not in html
    assert "globex parrot" not in html


def test_an_edit_is_stored_through_the_store_and_found_by_its_new_words(store_operator, items, tenant):
    item = items["acme-timed"]
    answer = store_operator.post(f"{ITEMS}{item.pk}/change/", {"value": '{"text": "moved to Porto"}', "ttl_minutes": "30"})

    assert answer.status_code == 302
    item.refresh_from_db()
    assert item.value == {"text": "moved to Porto"}
    assert item.ttl_minutes == 30
    assert "Porto" in item.indexed_text
    hits = selectors.items_search(
        tenant=tenant, namespace_prefix=(), query="Porto", filter=None, limit=1, offset=0, now=item.updated_at
    )
    assert [hit.item.key for hit in hits] == ["city"]


def test_an_edit_that_breaks_a_rule_is_refused_and_changes_nothing(store_operator, items, settings):
    settings.MEMORY_MAX_STORE_VALUE_BYTES = 30
    item = items["acme"]

    not_an_object = store_operator.post(f"{ITEMS}{item.pk}/change/", {"value": '["a list"]'})
    too_big = store_operator.post(f"{ITEMS}{item.pk}/change/", {"value": '{"text": "' + "x" * 40 + '"}'})

    assert not_an_object.status_code == 200
    assert "JSON object" in not_an_object.content.decode()
    assert "MEMORY_MAX_STORE_VALUE_BYTES=30" in too_big.content.decode()
    item.refresh_from_db()
    assert item.value == {"text": "a cat named <b>Tom</b>"}


def test_an_operator_deletes_an_item_of_their_tenant_but_not_of_another(store_operator, items, tenant, other_tenant):
    assert store_operator.post(f"{ITEMS}{items['acme'].pk}/delete/", {"post": "yes"}).status_code == 302
    assert store_operator.post(f"{ITEMS}{items['globex'].pk}/delete/", {"post": "yes"}).status_code == 404

    assert list(StoreItem.objects.for_tenant(tenant).values_list("key", flat=True)) == ["city"]
    assert StoreItem.objects.for_tenant(other_tenant).count() == 1


def test_an_edit_indexes_the_item_as_it_was_put(store_operator, tenant):
    titled = put(tenant, ("docs",), "titled", {"title": "Alps", "body": "hiking"}, index=["title"])
    hidden = put(tenant, ("docs",), "hidden", {"text": "secret"}, index=False)

    store_operator.post(f"{ITEMS}{titled.pk}/change/", {"value": '{"title": "Dolomites", "body": "climbing"}'})
    store_operator.post(f"{ITEMS}{hidden.pk}/change/", {"value": '{"text": "still secret"}'})

    titled.refresh_from_db()
    hidden.refresh_from_db()
    assert (titled.indexed_text, titled.index_paths) == ("Dolomites", ["title"])
    assert hidden.value == {"text": "still secret"}
    assert (hidden.indexed_text, hidden.indexed) == ("", False)


def test_a_ttl_that_is_not_positive_is_refused(store_operator, items):
    item = items["acme-timed"]
    answer = store_operator.post(f"{ITEMS}{item.pk}/change/", {"value": '{"text": "Lisbon"}', "ttl_minutes": "-3"})

    assert answer.status_code == 200
    assert "above 0" in answer.content.decode()
    item.refresh_from_db()
    assert item.ttl_minutes == 60
