"""``GET /api/v1/usage/``: the tenant's own usage per UTC day (``tenants.usage``), newest first.

A ``TenantAPIView``: the key's tenant is the only one answered for. ``days`` (default 30, at most
366) counts back from today, today included; anything else is a 400 naming ``days``, before anything
is read or written.
"""

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.api.views import TenantAPIView
from tenants import usage


class UsageQuerySerializer(serializers.Serializer):
    days = serializers.IntegerField(
        required=False,
        default=usage.DEFAULT_DAYS,
        min_value=1,
        max_value=usage.MAX_DAYS,
        help_text=f"UTC days back from today, today included: default {usage.DEFAULT_DAYS}, at most {usage.MAX_DAYS}.",
    )


class UsageDaySerializer(serializers.Serializer):
    day = serializers.DateField(help_text="The UTC day.")
    messages = serializers.IntegerField(help_text="Messages stored that day (still stored).")
    searches = serializers.IntegerField(help_text="Search requests answered.")
    chat_runs = serializers.IntegerField(help_text="Chat runs the model answered.")
    model_tokens = serializers.IntegerField(help_text="Model tokens, input and output: chat runs and memory extraction.")
    storage_bytes = serializers.IntegerField(
        help_text="Size of the tenant's stored rows at the day's end (today: so far): messages, vectors, memory "
        "documents, store items, checkpoints, extracted memories."
    )
    complete = serializers.BooleanField(help_text="False for today, whose figures still grow.")


class UsageTotalsSerializer(serializers.Serializer):
    messages = serializers.IntegerField()
    searches = serializers.IntegerField()
    chat_runs = serializers.IntegerField()
    model_tokens = serializers.IntegerField()


class UsageOutSerializer(serializers.Serializer):
    tenant = serializers.CharField(help_text="The API key's tenant.")
    days = serializers.IntegerField()
    totals = UsageTotalsSerializer(help_text="The figures summed over the days (storage is not a sum: see today's).")
    usage = UsageDaySerializer(many=True, help_text="One entry per day, newest (today) first.")


class UsageView(TenantAPIView):
    @extend_schema(
        operation_id="usage_list",
        tags=["status"],
        parameters=[UsageQuerySerializer],
        responses=UsageOutSerializer,
        description="The tenant's usage per UTC day, newest first: messages stored, searches, chat runs, model tokens "
        "and storage. Past days are measured once they are over; today's figures are so far.",
    )
    def get(self, request: Request) -> Response:
        query = UsageQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        days = usage.usage_days(tenant=self.tenant, days=query.validated_data["days"])
        totals = {name: sum(getattr(day, name) for day in days) for name in usage.FIGURES if name != "storage_bytes"}
        answer = {"tenant": self.tenant.slug, "days": len(days), "totals": totals, "usage": [day.as_dict() for day in days]}
        return Response(UsageOutSerializer(answer).data)


app_name = "usage"
urlpatterns = [path("usage/", UsageView.as_view(), name="usage")]
