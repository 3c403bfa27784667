"""The operators' admin for tenants, API keys and provider credentials, and the scoping every
tenant-owned admin shares.

A staff user bound to a tenant (``TenantStaff``) sees and acts on that tenant only: lists, pages by
URL (another tenant's object is a 404), actions, autocomplete and exports all start from
``get_queryset``, which is scoped. Superusers see every tenant and get a tenant filter. A staff user
bound to no tenant sees nothing. Every action is written to the admin log.

Every form that edits stored values passes the door (``core.forms.StorableModelForm``):
a value that could not be stored in PostgreSQL, Redis and JSON alike is a form error, not a 500.

Apps above tenants add their own actions over a whole tenant by registering a subclass of
``TenantAdmin`` in its place (``conversations.admin`` adds "rebuild the cache of every
conversation"), so that this module imports none of them.

A tenant's page shows its usage of the last 30 UTC days (``tenants.usage``): a bar chart of each
figure counted per day and a table of the days, newest first.

A provider credential is write-only: its form takes a new secret and stores it encrypted; no page
shows the secret or its encrypted value, only its hint (the last four characters).
"""

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, transaction
from django.db.models import Count, Model, QuerySet
from django.forms import ModelChoiceField
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join
from rest_framework_api_key.admin import APIKeyModelAdmin
from rest_framework_api_key.models import APIKey

from core.charts import bar_chart, byte_size, byte_unit
from core.forms import STORABLE_FORMFIELDS, StorableModelForm
from core.replica import stale_read
from tenants import services, usage
from tenants.models import (
    CODE_NAMING_SETTINGS,
    ProviderCredential,
    Tenant,
    TenantApiKey,
    TenantStaff,
    provider_name,
    tenant_choice_refusal,
)

# --- List columns: every change list fits the window ----------------------------------------------

SHORT_ID_LENGTH = 20


def shortened(value: str, length: int = SHORT_ID_LENGTH) -> str:
    """A long id cut to its beginning for a list column (a search by that beginning finds it), the
    whole of it in the title, shown on hover."""
    if len(value) <= length:
        return value
    return format_html('<span title="{}">{}…</span>', value, value[: length - 1])


def moment(value: datetime | None) -> str | None:
    """A time for a list column: UTC to the minute, to the second in the title. None shows as the
    admin's empty value."""
    if value is None:
        return None
    utc = value.astimezone(UTC)
    return format_html(
        '<time class="memory-time" datetime="{}" title="{} UTC"><span>{}</span> <span>{}</span></time>',
        utc.isoformat(),
        utc.strftime("%Y-%m-%d %H:%M:%S"),
        utc.strftime("%Y-%m-%d"),
        utc.strftime("%H:%M"),
    )


def moment_column(field: str, description: str) -> Callable[[admin.ModelAdmin, Model], str | None]:
    """A list column showing a row's time ``field`` as ``moment`` does, sorted by that field."""

    @admin.display(description=description, ordering=field)
    def column(model_admin: admin.ModelAdmin, row: Model) -> str | None:
        return moment(getattr(row, field))

    return column


def badge(kind: str, text: str, title: str = "") -> str:
    return format_html('<span class="memory-badge memory-badge--{}" title="{}">{}</span>', kind, title, text)


def staff_tenant(user: AbstractBaseUser) -> Tenant | None:
    """The tenant a staff user is bound to (None for a superuser or an unbound user)."""
    binding = getattr(user, "tenant_staff", None) if not user.is_superuser else None
    return binding.tenant if binding is not None else None


class TenantScopedAdmin(admin.ModelAdmin):
    """Base of every admin over tenant-owned rows: scoped lists, pages, forms and actions. Its forms
    pass the door: storable text and storable JSON only."""

    form = StorableModelForm
    formfield_overrides = STORABLE_FORMFIELDS

    def scoped_queryset(self, tenant: Tenant) -> QuerySet:
        return self.model.objects.for_tenant(tenant)

    def every_tenant_queryset(self) -> QuerySet:
        return self.model.unscoped.all()  # superusers: every tenant, narrowed by the tenant filter

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        if request.user.is_superuser:
            queryset = self.every_tenant_queryset()
        else:
            tenant = staff_tenant(request.user)
            queryset = self.scoped_queryset(tenant) if tenant is not None else self.every_tenant_queryset().none()
        ordering = self.get_ordering(request)
        return queryset.order_by(*ordering) if ordering else queryset

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """A list page may be a moment behind: read on the replica when one is configured, rendered
        here so that its lazy queries run inside the stale read. A POST (an action, an inline edit)
        reads and writes the primary, as does every change form."""
        if request.method not in ("GET", "HEAD"):
            return super().changelist_view(request, extra_context)

        def rendered() -> HttpResponse:
            response = super(TenantScopedAdmin, self).changelist_view(request, extra_context)
            return response.render() if isinstance(response, TemplateResponse) else response

        return stale_read(rendered)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Model:
        # Another tenant's object is not there at all: a 404, not the stock redirect with a hint.
        found = super().get_object(request, object_id, from_field)
        if found is None:
            raise Http404(f"No {self.opts.verbose_name} with this id.")
        return found

    def _bound(self, request: HttpRequest) -> bool:
        return request.user.is_superuser or staff_tenant(request.user) is not None

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._bound(request) and super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self._bound(request) and super().has_view_permission(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self._bound(request) and super().has_change_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._bound(request) and super().has_add_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self._bound(request) and super().has_delete_permission(request, obj)

    def get_list_filter(self, request: HttpRequest) -> list:
        filters = list(super().get_list_filter(request))
        if request.user.is_superuser and "tenant" not in filters:
            filters.insert(0, ("tenant", admin.RelatedOnlyFieldListFilter))
        return filters

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list:
        fields = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser and "tenant" not in fields and obj is not None:
            fields.append("tenant")
        return fields

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> ModelChoiceField:
        if db_field.name == "tenant" and not request.user.is_superuser:
            tenant = staff_tenant(request.user)
            kwargs["queryset"] = Tenant.objects.filter(pk=tenant.pk if tenant else None)
            kwargs["initial"] = tenant
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Model, form: Any, change: bool) -> None:
        if not change and not request.user.is_superuser:
            obj.tenant = staff_tenant(request.user)
        super().save_model(request, obj, form, change)

    def log_action(self, request: HttpRequest, obj: Model, message: str) -> None:
        """Record an admin action (not a form save) in the admin log, against the object."""
        self.log_change(request, obj, message)


USAGE_DAYS = 30  # shown on a tenant's page

# The library's own key model is unused here: every key belongs to a tenant (TenantApiKey).
admin.site.unregister(APIKey)


@admin.register(Tenant)
class TenantAdmin(TenantScopedAdmin):
    list_display = ("slug", "name", "active", "api_key_count", "created_at")
    list_filter = ("active",)
    ordering = ("slug",)
    search_fields = ("slug", "name")
    readonly_fields = ("effective_settings", "provider_credentials", "created_at", "usage_report")
    fields = ("slug", "name", "active", "settings", "effective_settings", "provider_credentials", "created_at", "usage_report")

    class Media:
        css = {"all": ("memory/usage.css",)}

    def scoped_queryset(self, tenant: Tenant) -> QuerySet:
        return Tenant.objects.filter(pk=tenant.pk)

    def every_tenant_queryset(self) -> QuerySet:
        return Tenant.objects.all()

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(api_key_total=Count("api_keys"))

    def get_list_filter(self, request: HttpRequest) -> list:
        return list(self.list_filter)

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list:
        fields = list(self.readonly_fields)
        if not request.user.is_superuser:
            fields += ["slug", "active"]  # an operator tunes their tenant; only superusers rename or switch it off
        return fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return request.user.is_superuser

    @admin.display(description="API keys", ordering="api_key_total")
    def api_key_count(self, tenant: Tenant) -> int:
        return tenant.api_key_total

    @admin.display(description="Settings in effect")
    def effective_settings(self, tenant: Tenant) -> str:
        rows = ((name, tenant.setting(name), _origin(tenant, name)) for name in settings.MEMORY_TENANT_OVERRIDABLE)
        return format_html(
            '<table class="memory-settings"><thead><tr><th>Setting</th><th>Value</th><th></th></tr></thead>'
            "<tbody>{}</tbody></table>",
            format_html_join("", "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.display(description="Provider credentials")
    def provider_credentials(self, tenant: Tenant) -> str:
        credentials = ProviderCredential.objects.for_tenant(tenant).order_by("provider") if tenant.pk else []
        if not credentials:
            return "None stored."
        return format_html(
            '<ul class="memory-credentials">{}</ul>',
            format_html_join("", "<li><code>{}</code> {}</li>", ((c.provider, c.hint) for c in credentials)),
        )

    @admin.display(description=f"Usage, last {USAGE_DAYS} days (UTC)")
    def usage_report(self, tenant: Tenant) -> str:
        if tenant.pk is None:
            return "None yet."
        try:
            with transaction.atomic():  # a failure leaves the rest of the page (and its transaction) usable
                days = usage.usage_days(tenant=tenant, days=USAGE_DAYS)
        except DatabaseError:
            return "Usage could not be read: PostgreSQL did not answer. Reload the page to try again."
        return usage_section(days)

    def save_model(self, request: HttpRequest, obj: Tenant, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change:
            services.auth_cache_forget(tenant=obj)  # deactivation and new settings apply at once


# The figures of the usage table: (name, heading). Each is charted; storage is a level at each day's
# end, not a count, so its chart's caption is the latest day's, not the sum of the days.
USAGE_COLUMNS = (
    ("messages", "Messages"),
    ("searches", "Searches"),
    ("chat_runs", "Chat runs"),
    ("model_tokens", "Model tokens"),
    ("storage_bytes", "Storage"),
)


def usage_section(days: list[usage.UsageDay]) -> str:
    """A tenant's usage: a bar chart of each figure per day (oldest day first, as read left to right)
    and the table of the days, newest first, storage in one readable unit (its largest day's) in the
    chart and the table alike."""
    oldest_first = list(reversed(days))
    storage_unit = byte_unit(max((day.storage_bytes for day in days), default=0))
    charts = format_html_join(
        "",
        "{}",
        ((_usage_chart(oldest_first, name, heading, storage_unit),) for name, heading in USAGE_COLUMNS),
    )
    headings = format_html_join("", '<th scope="col">{}</th>', ((heading,) for _, heading in USAGE_COLUMNS))
    rows = format_html_join(
        "",
        '<tr{}><th scope="row"><time datetime="{}">{}</time></th>{}</tr>',
        (
            (
                "" if day.complete else format_html(' class="{}" title="{}"', "memory-usage__today", "Today so far"),
                day.day.isoformat(),
                f"{day.day:%Y-%m-%d}" if day.complete else f"{day.day:%Y-%m-%d} (so far)",
                format_html_join(
                    "", "<td{}>{}</td>", (_usage_cell(name, getattr(day, name), storage_unit) for name, _ in USAGE_COLUMNS)
                ),
            )
            for day in days
        ),
    )
    return format_html(
        '<div class="memory-usage"><div class="memory-usage__charts">{}</div>'
        '<table class="memory-usage__table"><thead><tr><th scope="col">Day</th>{}</tr></thead><tbody>{}</tbody></table></div>',
        charts,
        headings,
        rows,
    )


def _usage_chart(oldest_first: list[usage.UsageDay], name: str, heading: str, storage_unit: tuple[float, str]) -> str:
    if name == "storage_bytes":
        scale, unit = storage_unit
        sizes = [(f"{day.day:%Y-%m-%d}", round(day.storage_bytes / scale, 2)) for day in oldest_first]
        return bar_chart(sizes, label=heading, unit=unit, summed=False)
    return bar_chart([(f"{day.day:%Y-%m-%d}", getattr(day, name)) for day in oldest_first], label=heading)


def _usage_cell(name: str, value: int, storage_unit: tuple[float, str]) -> tuple[str, str]:
    if name == "storage_bytes":
        return format_html(' title="{} bytes"', f"{value:,}"), byte_size(value, storage_unit)
    return "", f"{value:,}"


def _origin(tenant: Tenant, name: str) -> str:
    if name not in (tenant.settings or {}):
        return "default"
    if name in CODE_NAMING_SETTINGS and tenant_choice_refusal(name, tenant.settings[name]):
        return "default (the override names code, which only the deployment may configure: ignored)"
    return "override"


@admin.register(TenantApiKey)
class TenantApiKeyAdmin(TenantScopedAdmin, APIKeyModelAdmin):
    list_display = ("name", "prefix", "tenant", "status", "created_time", "expiry_time", "last_used_time")
    list_filter = ("revoked",)
    search_fields = ("name", "prefix")
    list_select_related = ("tenant",)
    autocomplete_fields = ("tenant",)  # answered by TenantAdmin: an operator finds their own tenant only
    actions = ("revoke",)

    def scoped_queryset(self, tenant: Tenant) -> QuerySet:
        return TenantApiKey.objects.filter(tenant=tenant)

    def every_tenant_queryset(self) -> QuerySet:
        return TenantApiKey.objects.all()

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list:
        fields = [*APIKeyModelAdmin.get_readonly_fields(self, request, obj), "last_used_at"]
        if obj is not None:
            fields.append("tenant")
        return fields

    @admin.display(description="Status", ordering="revoked")
    def status(self, api_key: TenantApiKey) -> str:
        if api_key.revoked:
            return badge("cold", "revoked", "Requests with this key are refused")
        if api_key.has_expired:
            return badge("cold", "expired", "Requests with this key are refused since its expiry date")
        return badge("warm", "active")

    created_time = moment_column("created", "Created")
    expiry_time = moment_column("expiry_date", "Expires")
    last_used_time = moment_column("last_used_at", "Last used")

    def save_model(self, request: HttpRequest, obj: TenantApiKey, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)  # the operator's tenant, then the key shown once
        if change:
            services.auth_cache_forget(tenant=obj.tenant)  # a revocation is refused on the next request

    @admin.action(description="Revoke the selected API keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet) -> None:
        revoked = 0
        for api_key in queryset.filter(revoked=False).select_related("tenant"):
            services.api_key_revoke(api_key=api_key)
            self.log_action(request, api_key, "Revoked")
            revoked += 1
        noun = "API key" if revoked == 1 else "API keys"
        self.message_user(request, f"Revoked {revoked} {noun}; requests with them are refused from now on.", messages.SUCCESS)


class ProviderCredentialForm(StorableModelForm):
    """Takes a new secret and never shows the stored one: blank on change keeps it."""

    secret = forms.CharField(
        label="API key",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        required=False,
    )

    class Meta:
        model = ProviderCredential
        fields = ("tenant", "provider")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        secret = self.fields["secret"]
        if self.instance.pk is None:
            secret.required = True
            secret.help_text = "The provider's API key; stored encrypted and never shown again."
        else:
            secret.help_text = f"A new API key replaces the stored one ({self.instance.hint}); leave blank to keep it."

    def clean_provider(self) -> str:
        try:
            return provider_name(self.cleaned_data["provider"])
        except ValueError as error:
            raise forms.ValidationError(str(error)) from error

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        tenant = cleaned.get("tenant") or (self.instance.tenant if self.instance.tenant_id else None)
        provider = cleaned.get("provider")
        if tenant is not None and provider:
            taken = ProviderCredential.objects.for_tenant(tenant).filter(provider=provider).exclude(pk=self.instance.pk)
            if taken.exists():
                self.add_error(
                    "provider", f"{tenant.slug} already has a {provider} credential; change that one to replace its key."
                )
        return cleaned

    def _get_validation_exclusions(self) -> set[str]:
        # The model's unique constraint would be checked through the default manager, which refuses a
        # query without a tenant; clean() checks the (tenant, provider) pair within the tenant instead.
        return {*super()._get_validation_exclusions(), "tenant"}

    def save(self, commit: bool = True) -> ProviderCredential:
        secret = self.cleaned_data.get("secret")
        if secret:
            self.instance.set_secret(secret)  # the encrypted value and the hint; the secret itself is not kept
        return super().save(commit)


@admin.register(ProviderCredential)
class ProviderCredentialAdmin(TenantScopedAdmin):
    """A tenant's API keys for chat model providers; write-only, shown by their hint."""

    form = ProviderCredentialForm
    list_display = ("tenant", "provider", "hint", "updated_at")
    list_display_links = ("provider",)
    list_select_related = ("tenant",)
    search_fields = ("provider",)
    ordering = ("tenant__slug", "provider")

    def get_fields(self, request: HttpRequest, obj: Model | None = None) -> list:
        if obj is None:
            return ["tenant", "provider", "secret"]
        return ["tenant", "provider", "secret", "hint", "created_at", "updated_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list:
        if obj is None:
            return []
        return ["tenant", "hint", "created_at", "updated_at"]  # a credential stays with its tenant


@admin.register(TenantStaff)
class TenantStaffAdmin(admin.ModelAdmin):
    """Who operates which tenant: superusers only."""

    list_display = ("user", "tenant")
    list_filter = ("tenant",)
    autocomplete_fields = ("user",)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return request.user.is_superuser
