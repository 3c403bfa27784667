"""A tenant's usage per UTC day: messages, searches, chat runs, model tokens and storage.

Where each figure comes from
----------------------------
* ``searches``, ``chat_runs`` and ``model_tokens`` are counted where they happen, one upsert each
  (``usage_record``): a search request answered, a chat run answered (its input and output tokens).
  Concurrent calls lose no count: the increment is one ``INSERT … ON CONFLICT DO UPDATE`` in
  PostgreSQL, whose row lock serialises them.
* Model tokens an app already counts per day in its own table (the extractor's ``ExtractionUsage``)
  are read from that table when the figures are built (``token_count_register``), never copied, so
  they are counted once.
* ``messages`` (stored that day) and ``storage_bytes`` (the rows' size at the day's end) are measured
  from the rows, not counted on the write path: the day's rollup (``usage_rollup``, run by the beat
  each hour for the day just ended) stores them. A past day the rollup missed (the beat was off) is
  measured when it is first asked for, and stored; today is measured when asked and not stored.

The apps above tenants say what to measure, so that this module imports none of them: in their
``AppConfig.ready`` they register their messages (``message_count_register``), the rows whose size
is their storage (``storage_measure_register``) and the tokens they count themselves. The helpers
``rows_per_day``, ``row_bytes_per_day`` and ``daily_column`` build those measures from a model.

Storage of a day is the size of the rows written up to its end (``pg_column_size`` of each row, as
stored, compressed values compressed; indexes not counted) that are still stored when it is
measured: the rollup runs just after the day, so it is that day's storage; a day measured late does
not count rows deleted since. Today's storage is yesterday's plus the rows written since midnight.
"""

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import structlog
from django.db import DatabaseError, connection, transaction
from django.db.models import Count, Model, Sum
from django.db.models.expressions import RawSQL
from django.db.models.functions import TruncDate
from django.utils import timezone

from tenants.models import Tenant, TenantUsage

logger = structlog.get_logger(__name__)

FIGURES = ("messages", "searches", "chat_runs", "model_tokens", "storage_bytes")
COUNTED = ("searches", "chat_runs", "model_tokens")  # counted as they happen (usage_record)
DEFAULT_DAYS = 30
MAX_DAYS = 366

# Messages stored in [start, end) per UTC day; bytes of rows written before ``end`` (and from
# ``start``, when given) per UTC day written; a figure another table counts per day, first..last.
MessageCount = Callable[[Tenant, datetime, datetime], dict[date, int]]
StorageMeasure = Callable[[Tenant, datetime | None, datetime], dict[date, int]]
DailyCount = Callable[[Tenant, date, date], dict[date, int]]

MESSAGE_COUNTS: dict[str, MessageCount] = {}
STORAGE_MEASURES: dict[str, StorageMeasure] = {}
TOKEN_COUNTS: dict[str, DailyCount] = {}


def message_count_register(name: str, count: MessageCount) -> None:
    MESSAGE_COUNTS[name] = count


def storage_measure_register(name: str, measure: StorageMeasure) -> None:
    STORAGE_MEASURES[name] = measure


def token_count_register(name: str, count: DailyCount) -> None:
    TOKEN_COUNTS[name] = count


# --- Measures built from a model ------------------------------------------------------------------


def _per_day(rows: Any) -> dict[date, int]:
    return {row["day"]: int(row["value"] or 0) for row in rows}


def rows_per_day(model: type[Model], moment: str) -> MessageCount:
    """The tenant's rows of ``model`` whose ``moment`` falls in [start, end), per UTC day. With an
    index on (tenant, moment) the query reads that range only."""

    def count(tenant: Tenant, start: datetime, end: datetime) -> dict[date, int]:
        rows = (
            model.objects.for_tenant(tenant)
            .filter(**{f"{moment}__gte": start, f"{moment}__lt": end})
            .annotate(day=TruncDate(moment, tzinfo=UTC))
            .values("day")
            .annotate(value=Count("pk"))
            .order_by()
        )
        return _per_day(rows)

    return count


def row_bytes_per_day(model: type[Model], moment: str) -> StorageMeasure:
    """The size of the tenant's rows of ``model`` as stored (``pg_column_size`` of the whole row),
    per UTC day of their ``moment`` (which may follow a relation: ``checkpoint__created_at``)."""
    table = connection.ops.quote_name(model._meta.db_table)

    def measure(tenant: Tenant, start: datetime | None, end: datetime) -> dict[date, int]:
        rows = model.objects.for_tenant(tenant).filter(**{f"{moment}__lt": end})
        if start is not None:
            rows = rows.filter(**{f"{moment}__gte": start})
        rows = (
            rows.annotate(day=TruncDate(moment, tzinfo=UTC))
            .values("day")
            .annotate(value=Sum(RawSQL(f"pg_column_size({table}.*)", ())))  # noqa: S611 - the model's own table, quoted
            .order_by()
        )
        return _per_day(rows)

    return measure


def daily_column(model: type[Model], column: str) -> DailyCount:
    """A figure a per-tenant, per-day counter table (``tenant``, ``day``) keeps in ``column``."""

    def count(tenant: Tenant, first: date, last: date) -> dict[date, int]:
        rows = model.objects.for_tenant(tenant).filter(day__gte=first, day__lte=last).values("day", value=Sum(column))
        return _per_day(rows.order_by())

    return count


# --- Counting events ------------------------------------------------------------------------------

UPSERT = (
    "INSERT INTO tenant_usage (tenant_id, day, messages, searches, chat_runs, model_tokens, storage_bytes)"
    " VALUES (%s, %s, 0, %s, %s, %s, 0)"
    " ON CONFLICT (tenant_id, day) DO UPDATE SET"
    " searches = tenant_usage.searches + EXCLUDED.searches,"
    " chat_runs = tenant_usage.chat_runs + EXCLUDED.chat_runs,"
    " model_tokens = tenant_usage.model_tokens + EXCLUDED.model_tokens"
)


def today() -> date:
    return timezone.now().astimezone(UTC).date()


def _whole(value: Any) -> int:
    """A count as stored: a non-negative whole number; anything else (a provider's odd usage) is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return max(int(value), 0)


def model_tokens_of(spent: dict[str, Any]) -> int:
    """A model call's tokens from its usage (``input_tokens`` and ``output_tokens``, as LangChain
    reports them): what it read and what it wrote."""
    return _whole(spent.get("input_tokens")) + _whole(spent.get("output_tokens"))


def usage_record(*, tenant: Tenant, searches: int = 0, chat_runs: int = 0, model_tokens: int = 0) -> None:
    """Add events to the tenant's usage of today: one upsert. A failure to count is logged and does
    not fail the request that was served (its own savepoint leaves the caller's transaction usable)."""
    counts = (_whole(searches), _whole(chat_runs), _whole(model_tokens))
    if not any(counts):
        return
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(UPSERT, [tenant.pk, today(), *counts])
    except DatabaseError as error:
        logger.warning("usage_not_recorded", tenant=tenant.slug, counts=counts, error=type(error).__name__)


# --- Measuring days from the rows -----------------------------------------------------------------


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _messages(tenant: Tenant, first: date, last: date) -> dict[date, int]:
    """Messages stored per day, ``first`` to ``last``."""
    totals: dict[date, int] = {}
    for count in MESSAGE_COUNTS.values():
        for day, value in count(tenant, _midnight(first), _midnight(last + timedelta(days=1))).items():
            totals[day] = totals.get(day, 0) + value
    return totals


def _storage(tenant: Tenant, days: list[date]) -> dict[date, int]:
    """The storage at the end of each of ``days``: one pass over each measured table, summed by the
    day rows were written and accumulated."""
    last = max(days)
    written: dict[date, int] = {}
    for measure in STORAGE_MEASURES.values():
        for day, value in measure(tenant, None, _midnight(last + timedelta(days=1))).items():
            written[day] = written.get(day, 0) + value
    totals, running, pending = {}, 0, sorted(written.items())
    for day in sorted(days):
        while pending and pending[0][0] <= day:
            running += pending.pop(0)[1]
        totals[day] = running
    return totals


ROLLUP = (
    "INSERT INTO tenant_usage (tenant_id, day, messages, searches, chat_runs, model_tokens, storage_bytes, rolled_up_at)"
    " VALUES (%s, %s, %s, 0, 0, 0, %s, %s)"
    " ON CONFLICT (tenant_id, day) DO UPDATE SET"
    " messages = EXCLUDED.messages, storage_bytes = EXCLUDED.storage_bytes, rolled_up_at = EXCLUDED.rolled_up_at"
)


def usage_rollup(*, tenant: Tenant, days: list[date]) -> None:
    """Measure the messages and storage of past ``days`` from the rows and store them, the counted
    events untouched. Idempotent: measuring a day again stores what the rows say then."""
    days = sorted({day for day in days if day < today()})
    if not days:
        return
    messages = _messages(tenant, days[0], days[-1])
    storage = _storage(tenant, days)
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(ROLLUP, [[tenant.pk, day, messages.get(day, 0), storage[day], now] for day in days])
    logger.info("usage_rolled_up", tenant=tenant.slug, first=days[0].isoformat(), last=days[-1].isoformat())


def usage_rollup_due(*, day: date | None = None) -> int:
    """Roll up ``day`` (default: yesterday) for every tenant that existed then and was not rolled up
    for it yet; the number of tenants rolled up. The beat's task, hourly: a missed run is caught up."""
    day = day or today() - timedelta(days=1)
    # Every tenant's rows: the beat's sweep over the deployment.
    done = set(TenantUsage.unscoped.filter(day=day, rolled_up_at__isnull=False).values_list("tenant_id", flat=True))
    rolled = 0
    for tenant in Tenant.objects.filter(created_at__lt=_midnight(day + timedelta(days=1))).exclude(pk__in=done).iterator():
        usage_rollup(tenant=tenant, days=[day])
        rolled += 1
    return rolled


# --- Reading ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UsageDay:
    day: date
    messages: int
    searches: int
    chat_runs: int
    model_tokens: int
    storage_bytes: int
    complete: bool  # the day is over and measured; False: today, still growing

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def usage_days(*, tenant: Tenant, days: int = DEFAULT_DAYS) -> list[UsageDay]:
    """The tenant's usage of the last ``days`` UTC days, today included, newest first. Past days the
    rollup missed since the tenant was created are measured now and stored."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"days must be between 1 and {MAX_DAYS}.")
    current = today()
    first = current - timedelta(days=days - 1)
    created_at = tenant.created_at or Tenant.objects.filter(pk=tenant.pk).values_list("created_at", flat=True).first()
    born = created_at.astimezone(UTC).date() if created_at else current  # (an API request's tenant has no created_at)
    # The window's past days, and yesterday even when the window is today alone: today's storage
    # starts from yesterday's.
    past = [current - timedelta(days=offset) for offset in range(1, max(days, 2))]
    stored = _stored(tenant, since=past[-1])
    missing = [day for day in past if day >= born and (day not in stored or stored[day].rolled_up_at is None)]
    if missing:
        usage_rollup(tenant=tenant, days=missing)
        stored = _stored(tenant, since=past[-1])
    tokens: dict[date, int] = {}
    for count in TOKEN_COUNTS.values():
        for day, value in count(tenant, first, current).items():
            tokens[day] = tokens.get(day, 0) + value
    answer = [_today(tenant, stored, tokens, current)]
    for offset in range(1, days):
        day = current - timedelta(days=offset)
        row = stored.get(day)
        answer.append(
            UsageDay(
                day=day,
                messages=row.messages if row else 0,
                searches=row.searches if row else 0,
                chat_runs=row.chat_runs if row else 0,
                model_tokens=(row.model_tokens if row else 0) + tokens.get(day, 0),
                storage_bytes=row.storage_bytes if row else 0,
                complete=True,
            )
        )
    return answer


def _stored(tenant: Tenant, *, since: date) -> dict[date, TenantUsage]:
    return {row.day: row for row in TenantUsage.objects.for_tenant(tenant).filter(day__gte=since)}


def _today(tenant: Tenant, stored: dict[date, TenantUsage], tokens: dict[date, int], current: date) -> UsageDay:
    """Today so far: its counted events, the messages stored since midnight and the storage of
    yesterday's end plus the rows written since (bounded reads: today's rows only)."""
    row, yesterday = stored.get(current), stored.get(current - timedelta(days=1))
    start, end = _midnight(current), _midnight(current + timedelta(days=1))
    written = sum(sum(measure(tenant, start, end).values()) for measure in STORAGE_MEASURES.values())
    return UsageDay(
        day=current,
        messages=sum(_messages(tenant, current, current).values()),
        searches=row.searches if row else 0,
        chat_runs=row.chat_runs if row else 0,
        model_tokens=(row.model_tokens if row else 0) + tokens.get(current, 0),
        storage_bytes=(yesterday.storage_bytes if yesterday else 0) + written,
        complete=False,
    )
