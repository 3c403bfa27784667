"""URLs: the API (v1), its schema and docs, Prometheus metrics, the admin."""

from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from conversations import metrics


def metrics_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse(generate_latest(metrics.registry()), content_type=CONTENT_TYPE_LATEST)


urlpatterns = [
    path("api/v1/", include("conversations.api.urls")),
    path("api/v1/", include("checkpoints.api.urls")),
    path("api/v1/", include("search.api.urls")),
    path("api/v1/", include("summaries.api.urls")),
    path("api/v1/", include("facts.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(permission_classes=[], authentication_classes=[]), name="schema"),
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="schema", permission_classes=[], authentication_classes=[]),
        name="docs",
    ),
    path("metrics", metrics_view, name="metrics"),
    path(settings.ADMIN_PATH, admin.site.urls),
]
