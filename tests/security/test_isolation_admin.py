"""Tenant isolation of the admin, model by model, generated from the admin registry.

For every model registered in ``django.contrib.admin.site`` (so a model registered later is covered
without touching this file), acme's operator (``tests.conftest.operator``) works the admin while
globex has a whole world of rows (``test_isolation_api.tenant_world``, plus logins of its operator)
and acme a twin world under the very same ids (so that a lookup by id that forgot the tenant would
find globex's rows):

* the changelist, plain, searched for globex's ids and filtered by globex's tenant, lists none of
  globex's rows and shows none of its markers, while it does list acme's own rows;
* every URL of the admin that addresses one object (change, delete, history, the bare object URL,
  and the admin's own object views: a conversation's rebuild and erase, a user's password) answers
  404 for a globex object, to GET and to POST, in every admin built on ``TenantScopedAdmin``; the
  few admins that are not (users, groups, login records, tenant staff) hold no permission for an
  operator and answer 403;
* every admin action, posted with globex's primary keys, changes nothing of globex and queues no
  task for it;
* an add form posted with globex's tenant creates nothing for globex;
* the autocomplete of every autocomplete field and the admin's index pages show nothing of globex.

"Nothing of globex changed" is the snapshot of every globex row in every tenant-owned table, its
Redis keys, and its rows of every registered model, taken before and after.

Finding a tenant's rows of a model: a ``tenant`` foreign key says it; the models without one are
named in ``ROWS_OF_TENANT`` (how to find a tenant's rows) or ``SHARED`` (no tenant owns them). A
newly registered model in neither fails ``test_every_registered_model_says_how_to_find_a_tenants_rows``.
"""

from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model, QuerySet
from django.forms import CharField, ModelChoiceField
from django.test import Client, RequestFactory
from django.urls import URLPattern, reverse

from tenants.admin import TenantScopedAdmin
from tenants.models import Tenant
from tests.conftest import take_queued_tasks
from tests.security.test_isolation_api import OPERATOR_PASSWORD, World, assert_unchanged, tenant_snapshot, tenant_world

pytestmark = pytest.mark.django_db

User = get_user_model()


def _operator_usernames(tenant: Tenant) -> list[str]:
    return list(User.objects.filter(tenant_staff__tenant=tenant).values_list("username", flat=True))


# How to find a tenant's rows of a registered model that has no ``tenant`` foreign key.
ROWS_OF_TENANT: dict[str, Callable[[type[Model], Tenant], QuerySet]] = {
    "tenants.Tenant": lambda model, tenant: model.objects.filter(pk=tenant.pk),
    "auth.User": lambda model, tenant: model.objects.filter(tenant_staff__tenant=tenant),
    # django-axes' login records name the username.
    "axes.AccessAttempt": lambda model, tenant: model.objects.filter(username__in=_operator_usernames(tenant)),
    "axes.AccessLog": lambda model, tenant: model.objects.filter(username__in=_operator_usernames(tenant)),
    "axes.AccessFailureLog": lambda model, tenant: model.objects.filter(username__in=_operator_usernames(tenant)),
}
# Registered models no tenant owns.
SHARED = {"auth.Group": "the operators' group is one group for every tenant's operators"}

REGISTERED = sorted(admin.site._registry, key=lambda model: model._meta.label)


def tenant_rows(model: type[Model], tenant: Tenant) -> QuerySet | None:
    """The tenant's rows of a registered model; None for a shared model."""
    label = model._meta.label
    if label in ROWS_OF_TENANT:
        return ROWS_OF_TENANT[label](model, tenant).order_by("pk")
    if label in SHARED:
        return None
    if any(field.name == "tenant" and field.related_model is Tenant for field in model._meta.concrete_fields):
        # Every row of the tenant, whatever the model's default manager scopes: the test must see all.
        manager = model.unscoped if hasattr(model, "unscoped") else model._base_manager
        return manager.filter(tenant=tenant).order_by("pk")
    raise AssertionError(
        f"{label} is registered in the admin but nothing says how to find a tenant's rows of it: give it a tenant "
        "foreign key, or add it to ROWS_OF_TENANT or SHARED"
    )


def admin_snapshot(tenant: Tenant) -> dict[str, Any]:
    """The tenant snapshot, and the tenant's rows of every registered model."""
    snapshot = tenant_snapshot(tenant)
    for model in REGISTERED:
        rows = tenant_rows(model, tenant)
        if rows is not None:
            snapshot["tables"][f"admin {model._meta.label}"] = sorted(map(str, rows.values_list()))
    return snapshot


def body_of(answer: Any) -> bytes:
    return b"".join(answer.streaming_content) if answer.streaming else answer.content


def leaks(answer: Any, world: World, sent: str = "") -> list[str]:
    """globex's strings in an answer, but for those the caller sent (a search box shows its term)."""
    body = body_of(answer)
    # acme's twin world has the same ids: globex's content, slug and names must not show.
    return [name for name, value in world.forbidden(sent, ids=False).items() if value.encode() in body]


def queued_for(tenant: Tenant) -> list[str]:
    """The tasks waiting in the test queues that name the tenant (its id first, or in a payload)."""
    found = []
    for queue in (settings.MEMORY_QUEUE, settings.MEMORY_DERIVED_QUEUE):
        for name, argument in take_queued_tasks(queue):
            first = argument[0] if isinstance(argument, list) and argument else argument
            tenant_id = first.get("tenant_id") if isinstance(first, dict) else first
            if tenant_id == tenant.pk:
                found.append(name)
    return found


@pytest.fixture
def globex_world(other_tenant: Tenant) -> World:
    return tenant_world(other_tenant, number=4821)


@pytest.fixture
def acme_twin_world(tenant: Tenant, globex_world: World) -> World:
    """acme's own world under globex's very ids: a search or an inline that forgot the tenant would
    find globex's rows beside acme's."""
    return tenant_world(tenant, number=4821, message_ids=globex_world.message_ids)


@pytest.fixture
def globex_admin_world(globex_world: World, settings: Any) -> World:
    """globex's world, and what its operator's logins leave in the login records (the failure log
    too, which the deployment may keep)."""
    settings.AXES_ENABLE_ACCESS_FAILURE_LOG = True
    username = globex_world.names["operator"]
    assert Client().post("/admin/login/", {"username": username, "password": OPERATOR_PASSWORD}).status_code == 302
    Client().post("/admin/login/", {"username": username, "password": "not-the-password"})
    return globex_world


def changelist_url(model: type[Model]) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def object_urls(model: type[Model], model_admin: admin.ModelAdmin, pk: Any) -> list[str]:
    """Every URL of the model's admin that names one object, for ``pk``; and the admin's view-on-site link."""
    base = changelist_url(model)
    urls = []
    for pattern in model_admin.get_urls():
        if not isinstance(pattern, URLPattern):
            continue
        route = str(pattern.pattern)
        for parameter in ("<path:object_id>", "<id>"):
            if parameter in route:
                urls.append(base + route.replace(parameter, str(pk)))
    urls.append(f"/admin/r/{ContentType.objects.get_for_model(model).pk}/{pk}/")
    return urls


def hidden_status(model_admin: admin.ModelAdmin) -> int:
    """What an object of another tenant answers: not there (404) in a tenant-scoped admin; refused (403)
    in the others, where an operator holds no permission at all."""
    return 404 if isinstance(model_admin, TenantScopedAdmin) else 403


# --- The registry is covered --------------------------------------------------------------------------


def test_every_registered_model_says_how_to_find_a_tenants_rows():
    unknown = []
    for model in REGISTERED:
        try:
            tenant_rows(model, Tenant(pk=0))
        except AssertionError as error:
            unknown.append(str(error))

    assert not unknown, unknown


def test_admins_that_are_not_tenant_scoped_are_closed_to_operators(operator):
    open_to_operators = [
        model._meta.label
        for model, model_admin in admin.site._registry.items()
        if not isinstance(model_admin, TenantScopedAdmin)
        and any(
            operator.has_perm(f"{model._meta.app_label}.{action}_{model._meta.model_name}")
            for action in ("view", "change", "add", "delete")
        )
    ]

    assert not open_to_operators, f"Operators hold permissions on admins that are not tenant-scoped: {open_to_operators}"


# --- Model by model -----------------------------------------------------------------------------------


@pytest.mark.parametrize("model", REGISTERED, ids=lambda model: model._meta.label)
def test_acmes_operator_never_sees_or_changes_globexs_rows(
    model, operator, operator_client, tenant, other_tenant, globex_admin_world, request
):
    model_admin = admin.site._registry[model]
    label = model._meta.label
    can_view = model_admin.has_view_permission(_request_of(operator))
    if can_view:
        request.getfixturevalue("acme_twin_world")
    globex_rows = tenant_rows(model, other_tenant)
    globex_pks = list(globex_rows.values_list("pk", flat=True)) if globex_rows is not None else []
    assert globex_rows is None or globex_pks, f"globex's world has no {label} row: add one so its admin's isolation is tested"
    before = admin_snapshot(other_tenant)
    wrong: list[str] = []

    def check(what: str, answer: Any, statuses: tuple[int, ...], sent: str = "", *, wrote: bool = False) -> None:
        if answer.status_code not in statuses:
            wrong.append(f"{what}: {answer.status_code}, expected {statuses}")
        if found := leaks(answer, globex_admin_world, sent):
            wrong.append(f"{what} shows globex's {found}")
        listed = getattr(answer, "context", None) and answer.context.get("cl")
        if listed and {row.pk for row in listed.result_list} & set(globex_pks):
            wrong.append(f"{what} lists globex's rows")
        if wrote:  # compared at once: a later request could undo the change (archive, then unarchive)
            assert_unchanged(before, admin_snapshot(other_tenant), what=f"{label}: {what}")

    # The changelist: acme's rows, never globex's, however it is searched or filtered.
    changelist = changelist_url(model)
    listed = operator_client.get(changelist)
    check("the changelist", listed, (200,) if can_view else (403,))
    acme_rows = tenant_rows(model, tenant)
    if can_view and acme_rows is not None and acme_rows.exists():
        shown = {row.pk for row in listed.context["cl"].result_list}
        assert shown, f"{label}: acme's own rows are not listed"
        assert shown <= set(acme_rows.values_list("pk", flat=True)), f"{label}: rows of another tenant are listed"
    for term in (*globex_admin_world.identifiers.values(), other_tenant.slug, globex_admin_world.names["operator"]):
        check(
            f"the changelist searched for {term}",
            operator_client.get(changelist, {"q": term}),
            (200,) if can_view else (403,),
            term,
        )
    # acme's own pages, whose inlines and related lists must stay within acme.
    for pk in list(acme_rows.values_list("pk", flat=True)[:2]) if can_view and acme_rows is not None else []:
        for page in ("change", "history"):
            check(f"acme's own {page} page {pk}", operator_client.get(f"{changelist}{pk}/{page}/"), (200,))
    check(
        "the changelist filtered by globex's tenant",
        operator_client.get(changelist, {"tenant__id__exact": other_tenant.pk}),
        (200, 302, 400, 403),
    )

    # Every page of one globex object.
    for pk in globex_pks:
        for url in object_urls(model, model_admin, pk):
            expected = (404,) if url.startswith("/admin/r/") else (hidden_status(model_admin),)
            check(f"GET {url}", operator_client.get(url, follow=True), expected)
            posted = {
                "post": "yes",
                "confirm": "yes",
                "archived": "on",
                "user_id": "acme-own",
                "password1": "x",
                "password2": "x",
            }
            check(f"POST {url}", operator_client.post(url, posted, follow=True), expected, wrote=True)

    # Every action, on globex's primary keys.
    actions = [name for name, _ in admin.site.actions] + [
        action if isinstance(action, str) else action.__name__ for action in model_admin.actions or ()
    ]
    for action in actions:
        answer = operator_client.post(
            changelist,
            {"action": action, ACTION_CHECKBOX_NAME: globex_pks or ["1"], "index": "0", "post": "yes", "confirm": "yes"},
        )
        check(f"the action {action}", answer, (200, 302) if can_view else (403,), wrote=True)

    # An add form posted with globex as the tenant.
    add_url = changelist + "add/"
    add_page = operator_client.get(add_url)
    if add_page.status_code == 200:
        added = operator_client.post(add_url, _add_data(add_page, other_tenant))
        check("the add form posted with globex's tenant", added, (200, 302), wrote=True)

    assert not wrong, f"{label}: {wrong}"
    assert_unchanged(before, admin_snapshot(other_tenant), what=f"acme's operator in the {label} admin")
    assert not queued_for(other_tenant), f"acme's operator in the {label} admin queued tasks for globex"


def _request_of(user: Any) -> Any:
    request = RequestFactory().get("/admin/")
    request.user = user
    return request


def _add_data(add_page: Any, tenant: Tenant) -> dict[str, Any]:
    """The add form filled in as given, every text field written, and the tenant set to ``tenant``."""
    form = add_page.context["adminform"].form
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        initial = form.get_initial_for_field(field, name)
        if name == "tenant" or (isinstance(field, ModelChoiceField) and field.queryset.model is Tenant):
            data[name] = tenant.pk
        elif isinstance(field, CharField):
            data[name] = initial or "added-by-acme"
        elif initial not in (None, ""):
            data[name] = initial
    return data


# --- Autocomplete and the index pages -----------------------------------------------------------------


def test_no_autocomplete_offers_acmes_operator_anything_of_globex(operator_client, tenant, globex_admin_world, acme_twin_world):
    fields = [
        (model, field_name)
        for model, model_admin in admin.site._registry.items()
        for field_name in model_admin.autocomplete_fields
    ]
    assert fields, "no admin has an autocomplete field: this test has nothing to check"
    wrong = []

    for model, field_name in fields:
        for term in ("", globex_admin_world.tenant.slug, globex_admin_world.names["operator"], "glo"):
            answer = operator_client.get(
                "/admin/autocomplete/",
                {
                    "app_label": model._meta.app_label,
                    "model_name": model._meta.model_name,
                    "field_name": field_name,
                    "term": term,
                },
            )
            if answer.status_code not in (200, 403):
                wrong.append(f"{model._meta.label}.{field_name} {term!r}: {answer.status_code}")
            if found := leaks(answer, globex_admin_world, term):
                wrong.append(f"{model._meta.label}.{field_name} {term!r} offers globex's {found}")

    assert not wrong, wrong
    # The tenant autocomplete of an API key offers acme's own tenant.
    offered = operator_client.get(
        "/admin/autocomplete/", {"app_label": "tenants", "model_name": "tenantapikey", "field_name": "tenant", "term": ""}
    )
    assert [result["text"] for result in offered.json()["results"]] == [tenant.slug]


def test_the_admin_index_pages_show_acmes_operator_nothing_of_globex(operator_client, globex_admin_world, acme_twin_world):
    pages = ["/admin/", *sorted({f"/admin/{model._meta.app_label}/" for model in REGISTERED})]

    found = {page: leaks(operator_client.get(page, follow=True), globex_admin_world) for page in pages}

    assert not any(found.values()), found
