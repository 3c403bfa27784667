"""The health page under the admin: ``health/`` (the page) and ``health/panel/`` (its panel alone,
fetched again every ``REFRESH_SECONDS`` by ``static/memory/console.js``, which swaps it in place).

Both are wrapped in the admin site's ``admin_view`` by ``memoryproject/urls.py``, which hands them
the readiness decision (``readiness``): only active staff reach them, anyone else is sent to the
admin's login. Who sees what is ``console.selectors``' contract: a superuser the deployment, a staff
user bound to a tenant that tenant, any other staff user the engines alone; what each is offered to
do is read from the admin's own permission checks (``abilities_of``).

No script or style inline: the page's behaviour and looks come from static files, so a
Content-Security-Policy of ``'self'`` leaves it whole. The panel is never cached.
"""

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.cache import add_never_cache_headers
from django.views import View

from console.selectors import Abilities, HealthReport, ReadinessDecision, Scope, health_report
from conversations import derived
from conversations.models import DeadLetter
from tenants.admin import staff_tenant

REFRESH_SECONDS = 10
# The header the panel answers with: the script swaps in only a panel (a login page is not one).
PANEL_HEADER = "X-Health-Panel"


def abilities_of(request: HttpRequest) -> Abilities:
    """What the request's user may do in the admin that a problem on the page would offer: the dead
    letters' list, and its replay action (the change permission), as the admin itself decides."""
    dead_letters = derived.model_admin(DeadLetter)
    if dead_letters is None:
        return Abilities()
    return Abilities(
        dead_letter_list=dead_letters.has_view_or_change_permission(request),
        dead_letter_replay=dead_letters.has_change_permission(request),
    )


def report_for(request: HttpRequest, readiness: Callable[[], ReadinessDecision]) -> HealthReport:
    """The report the request's user may see, with what they may do."""
    user = request.user
    if user.is_superuser:
        return health_report(readiness=readiness, scope=Scope.DEPLOYMENT)
    tenant = staff_tenant(user)
    if tenant is not None and tenant.active:
        return health_report(readiness=readiness, scope=Scope.TENANT, tenant=tenant, abilities=abilities_of(request))
    return health_report(readiness=readiness, scope=Scope.ENGINES, abilities=abilities_of(request))


class HealthView(View):
    """Base of both: GET only, handed ``readiness`` by the URLconf."""

    http_method_names = ["get", "head"]
    readiness: Callable[[], ReadinessDecision] | None = None
    template_name = ""

    def context(self, request: HttpRequest) -> dict[str, Any]:
        if self.readiness is None:
            raise TypeError("The health views are given the readiness decision by the URLconf (readiness=...).")
        return {"report": report_for(request, self.readiness), "refresh_seconds": REFRESH_SECONDS}

    def get(self, request: HttpRequest) -> HttpResponse:
        response = TemplateResponse(request, self.template_name, self.context(request))
        add_never_cache_headers(response)
        return response


class HealthPageView(HealthView):
    template_name = "console/health.html"

    def context(self, request: HttpRequest) -> dict[str, Any]:
        return {**admin.site.each_context(request), "title": "Health", **super().context(request)}


class HealthPanelView(HealthView):
    template_name = "console/health_panel.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        response = super().get(request)
        response[PANEL_HEADER] = "1"
        return response
