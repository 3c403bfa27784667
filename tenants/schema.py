"""OpenAPI description of the API key scheme (drf-spectacular extension, loaded by the app config)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class TenantApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "tenants.authentication.TenantApiKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema: object) -> dict:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": 'The tenant API key, sent as "Api-Key <key>".',
        }


class MetricsTokenScheme(OpenApiAuthenticationExtension):
    target_class = "tenants.authentication.MetricsTokenAuthentication"
    name = "MetricsToken"

    def get_security_definition(self, auto_schema: object) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "The deployment's MEMORY_METRICS_TOKEN: the status page's deployment-wide figures.",
        }


class StaffSessionScheme(OpenApiAuthenticationExtension):
    target_class = "tenants.authentication.StaffSessionAuthentication"
    name = "AdminSession"

    def get_security_definition(self, auto_schema: object) -> dict:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "An operator's admin session: a superuser sees the whole deployment, a staff user bound to "
            "a tenant that tenant.",
        }
