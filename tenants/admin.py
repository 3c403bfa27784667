from django.contrib import admin
from rest_framework_api_key.admin import APIKeyModelAdmin

from tenants.models import Tenant, TenantApiKey, TenantStaff


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "active", "created_at")
    search_fields = ("slug", "name")


@admin.register(TenantApiKey)
class TenantApiKeyAdmin(APIKeyModelAdmin):
    list_display = (*APIKeyModelAdmin.list_display, "tenant", "last_used_at")
    list_filter = ("tenant", "revoked")


@admin.register(TenantStaff)
class TenantStaffAdmin(admin.ModelAdmin):
    list_display = ("user", "tenant")
