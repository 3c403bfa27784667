from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from rest_framework_api_key.admin import APIKeyModelAdmin

from tenants import services
from tenants.models import Tenant, TenantApiKey, TenantStaff


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "active", "created_at")
    search_fields = ("slug", "name")

    def save_model(self, request: HttpRequest, obj: Tenant, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change:
            services.auth_cache_forget(tenant=obj)  # deactivation and new settings apply at once


@admin.register(TenantApiKey)
class TenantApiKeyAdmin(APIKeyModelAdmin):
    list_display = (*APIKeyModelAdmin.list_display, "tenant", "last_used_at")
    list_filter = ("tenant", "revoked")

    def save_model(self, request: HttpRequest, obj: TenantApiKey, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change:
            services.auth_cache_forget(tenant=obj.tenant)  # a revocation is refused on the next request


@admin.register(TenantStaff)
class TenantStaffAdmin(admin.ModelAdmin):
    list_display = ("user", "tenant")
