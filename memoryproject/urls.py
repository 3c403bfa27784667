"""URLs: the API (v1), its schema and docs, Prometheus metrics, the admin (with the operator's console:
its health page, handed this project's readiness decision)."""

from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from console import views as console_views
from conversations import metrics, selectors
from conversations.api import urls as conversation_urls
from memory.api import urls as memory_urls
from memoryproject import health
from search.api import urls as search_urls
from search.metrics import EmbeddingBacklogCollector
from tenants.authentication import metrics_token_matches


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus metrics, which name tenants: only for a scraper holding ``MEMORY_METRICS_TOKEN``
    (``Authorization: Bearer <token>``); with no token configured, they are not served at all."""
    token = settings.MEMORY_METRICS_TOKEN
    if not token:
        return HttpResponse("Metrics are off: set MEMORY_METRICS_TOKEN and scrape with that bearer token.\n", status=404)
    if not metrics_token_matches(request.headers.get("Authorization", "")):
        return HttpResponse("Send Authorization: Bearer <MEMORY_METRICS_TOKEN>.\n", status=401)
    return HttpResponse(
        generate_latest(metrics.scrape(selectors.DerivedMemoryCollector(), EmbeddingBacklogCollector())),
        content_type=CONTENT_TYPE_LATEST,
    )


# The health page and its panel, under the admin and behind its login (active staff only). They read
# the engines through the same readiness decision as /readyz, so that the page and the probes agree.
console_urls = [
    path(
        "health/",
        admin.site.admin_view(console_views.HealthPageView.as_view(readiness=health.readiness)),
        name="health",
    ),
    path(
        "health/panel/",
        admin.site.admin_view(console_views.HealthPanelView.as_view(readiness=health.readiness)),
        name="health-panel",
    ),
]

urlpatterns = [
    # One namespace for the conversations' routes and the memory features' ones on the same paths.
    path("api/v1/", include((conversation_urls.urlpatterns + memory_urls.urlpatterns, "api"))),
    path("api/v1/", include("checkpoints.api.urls")),
    # The same for search's routes and the user search with memories.
    path("api/v1/", include((memory_urls.search_urlpatterns + search_urls.urlpatterns, "search"))),
    path("api/v1/", include("summaries.api.urls")),
    path("api/v1/", include("facts.api.urls")),
    path("api/v1/", include("extraction.api.urls")),
    path("api/v1/", include("chat.api.urls")),
    path("api/v1/", include("store.api.urls")),
    path("api/v1/", include("mcp_server.api.urls")),
    path("api/v1/", include("conversations.api.usage")),
    path("api/v1/", include((conversation_urls.slashed_id_urlpatterns, "api"), namespace="api-slashed-id")),
    path("api/schema/", SpectacularAPIView.as_view(permission_classes=[], authentication_classes=[]), name="schema"),
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="schema", permission_classes=[], authentication_classes=[]),
        name="docs",
    ),
    path("metrics", metrics_view, name="metrics"),
    path(settings.ADMIN_PATH, include((console_urls, "console"))),  # before the admin's catch-all
    path(settings.ADMIN_PATH, admin.site.urls),
]

# Under /api/, Django's own error answers are the API's JSON error document; elsewhere its pages.
handler400 = "memoryproject.errors.bad_request"
handler403 = "memoryproject.errors.permission_denied"
handler404 = "memoryproject.errors.page_not_found"
handler500 = "memoryproject.errors.server_error"
