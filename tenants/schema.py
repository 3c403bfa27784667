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
