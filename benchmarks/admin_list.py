"""The conversations changelist of the operators' admin against a stock ModelAdmin, on 100,000 conversations.

Seeds once a tenant ``bench`` (100,000 conversations of 3 messages) and a tenant ``bench-other``
(20,000), then times five admin requests with Django's test client: ours as an operator of
``bench``, and a stock ``ModelAdmin`` (own ``AdminSite`` and URLconf, a superuser, same rows) as the
alternative. Prints median and p90 in ms and the SQL query count of each, side by side.

    DJANGO_SETTINGS_MODULE=memoryproject.settings.test DATABASE_URL=postgres://postgres@127.0.0.1:5432/membench \
    REDIS_URL=redis://127.0.0.1:6379/13 MEMORY_QUEUE=memory-bench .venv/bin/python -m benchmarks.admin_list
"""
# ruff: noqa: E402 (the models can only be imported after django.setup())

import os
import random
import secrets
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/membench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/13")
os.environ.setdefault("MEMORY_QUEUE", "memory-bench")
django.setup()

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.db.models import QuerySet
from django.http import HttpRequest
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.urls import path, reverse
from django.utils import timezone
from tqdm import tqdm

from benchmarks.database import ensure_database
from conversations.models import Conversation, Message
from tenants import services as tenant_services
from tenants.models import Tenant

TENANTS = {"bench": 100_000, "bench-other": 20_000}  # the second one makes the tenant scoping matter
BATCH = 5_000
WARMUPS, RUNS = 2, 15
PER_PAGE = 50  # ours; the stock admin is given the same so that "page 1,000" is the same rows
COMMON = "the a to and of I you it is for on my order account please can help with this that was refund "
COMMON += "shipping delivery invoice password reset thanks hello update status ticket agent reply"
VOCABULARY = COMMON.split()
RARE = ("quokka", "zeppelin", "xylophone")  # one of them in one message of RARE_EVERY
RARE_EVERY = 9_973
RARE_WORD = RARE[0]


class StockConversationAdmin(admin.ModelAdmin):
    """What one would write without ours: stock defaults, ``icontains`` search through the messages join."""

    list_display = ("conversation_id", "tenant", "user_id", "agent_id", "message_count", "updated_at", "archived")
    list_filter = ("archived", ("updated_at", admin.DateFieldListFilter))
    list_per_page = PER_PAGE
    search_fields = ("conversation_id", "user_id", "messages__content")
    tenant_id: int | None = None  # set by main(): the same rows as the operator's

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The default manager refuses unscoped queries, so the stock get_queryset would raise.
        return Conversation.unscoped.filter(tenant_id=self.tenant_id)


stock_site = admin.AdminSite(name="stock")
stock_site.register(Conversation, StockConversationAdmin)
urlpatterns = [path("stock/", stock_site.urls)]  # ROOT_URLCONF while the stock admin is measured


@dataclass(frozen=True)
class Figures:
    median: float
    p90: float
    queries: int

    def __str__(self) -> str:
        return f"{self.median:8.1f} / {self.p90:8.1f} / {self.queries:3d}"


def content(rng: random.Random, index: int) -> str:
    words = rng.choices(VOCABULARY, k=rng.randint(6, 16))
    if index % RARE_EVERY == 0:
        words.insert(rng.randrange(len(words)), RARE[(index // RARE_EVERY) % len(RARE)])
    return " ".join(words).capitalize() + "."


def seed_tenant(tenant: Tenant, count: int, rng: random.Random) -> None:
    Message.objects.for_tenant(tenant).delete()  # a partial earlier run
    Conversation.objects.for_tenant(tenant).delete()
    now = timezone.now()
    with tqdm(total=count, desc=f"seeding {tenant.slug}", unit="conv") as progress:
        for start in range(0, count, BATCH):
            conversations = Conversation.objects.for_tenant(tenant).bulk_create(
                Conversation(
                    tenant=tenant,
                    conversation_id=f"conv-{i:06d}",
                    user_id=f"user-{i % 5_000:04d}",
                    agent_id=f"agent-{i % 20:02d}",
                    message_count=3,
                    last_seq=3,
                    token_count=30,
                )
                for i in range(start, min(start + BATCH, count))
            )
            Message.objects.for_tenant(tenant).bulk_create(
                Message(
                    tenant=tenant,
                    conversation=conversation,
                    seq=seq,
                    role="user" if seq % 2 else "assistant",
                    content=content(rng, (start + offset) * 3 + seq),
                    created_at=now - timedelta(minutes=start + offset),
                    token_count=10,
                )
                for offset, conversation in enumerate(conversations)
                for seq in (1, 2, 3)
            )
            progress.update(len(conversations))
    with connection.cursor() as cursor:  # auto_now set one instant per batch: spread them over 100 days, unordered
        cursor.execute(
            "UPDATE conversation_memories SET updated_at = now() - (hashtext(conversation_id) & 8388607) * interval '1 second'"
            " WHERE tenant_id = %s",
            [tenant.pk],
        )


def seed() -> tuple[Tenant, float | None]:
    started = time.perf_counter()
    seeded = False
    rng = random.Random(20_240_601)  # reproducible content
    for slug, count in TENANTS.items():
        tenant = Tenant.objects.filter(slug=slug).first() or tenant_services.tenant_create(slug=slug)
        if Conversation.objects.for_tenant(tenant).count() != count:
            seed_tenant(tenant, count, rng)
            seeded = True
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE conversation_memories" if seeded else "ANALYZE conversation_memories")
        cursor.execute("VACUUM ANALYZE conversation_messages" if seeded else "ANALYZE conversation_messages")
    return Tenant.objects.get(slug="bench"), (time.perf_counter() - started if seeded else None)


def login(tenant: Tenant, *, superuser: bool) -> Client:
    users = get_user_model().objects
    username = "bench-admin" if superuser else "bench-operator"
    user = users.filter(username=username).first()
    if user is None and superuser:
        user = users.create_superuser(username=username, password=secrets.token_urlsafe(16))
    elif user is None:
        user = tenant_services.operator_create(tenant=tenant, username=username, password=secrets.token_urlsafe(16))
    client = Client()
    client.force_login(user)
    return client


def measure(client: Client, url: str, expect: str) -> Figures:
    for _ in range(WARMUPS):
        with CaptureQueriesContext(connection) as captured:  # the query count: the last warm-up
            response = client.get(url)
        queries = len(captured)  # now: the next request's start clears the connection's query log
        if response.status_code != 200 or expect.encode() not in response.content:
            raise SystemExit(f"GET {url}: status {response.status_code}, or {expect!r} not in the page")
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
    return Figures(statistics.median(timings), statistics.quantiles(timings, n=10, method="inclusive")[8], queries)


def requests(namespace: str, urlconf: str | None, conversation: Conversation) -> Iterator[tuple[str, str, str]]:
    changelist = reverse(f"{namespace}:conversations_conversation_changelist", urlconf=urlconf)
    change = reverse(f"{namespace}:conversations_conversation_change", args=[conversation.pk], urlconf=urlconf)
    yield "(a) list, page 1", changelist, "conv-"
    yield "(b) list, page 1,000", f"{changelist}?p=1000", "conv-"
    yield "(c) search: exact conversation id", f"{changelist}?q={conversation.conversation_id}", "1 result ("
    yield f"(d) search: rare word ({RARE_WORD!r})", f"{changelist}?q={RARE_WORD}", rare_hit(conversation.tenant)
    yield "(e) change page (3 messages)", change, conversation.conversation_id


def rare_hit(tenant: Tenant) -> str:
    hit = Message.objects.for_tenant(tenant).filter(content__icontains=RARE_WORD).select_related("conversation").first()
    return hit.conversation.conversation_id if hit is not None else RARE_WORD


def main() -> None:
    ensure_database()
    call_command("migrate", verbosity=0, interactive=False)
    connection.settings_dict["CONN_MAX_AGE"] = None  # one connection for the whole run: no reconnects in the timings
    bench, seconds = seed()
    print("seeding: " + (f"{seconds:.1f} s" if seconds is not None else f"skipped, tenant {bench.slug} already seeded"))
    StockConversationAdmin.tenant_id = bench.pk
    conversation = Conversation.objects.for_tenant(bench).select_related("tenant").get(conversation_id="conv-042137")
    hits = Message.objects.for_tenant(bench).filter(content__icontains=RARE_WORD)
    print(
        f"tenant {bench.slug}: {Conversation.objects.for_tenant(bench).count():,} conversations, {RARE_WORD!r} in {hits.count()} messages"
    )

    ours_client = login(bench, superuser=False)
    ours = [(name, measure(ours_client, url, expect)) for name, url, expect in requests("admin", None, conversation)]
    stock_client = login(bench, superuser=True)
    with override_settings(ROOT_URLCONF=__name__):
        stock = [measure(stock_client, url, expect) for _, url, expect in requests("stock", __name__, conversation)]

    print(
        f"\n{RUNS} runs after {WARMUPS} warm-ups; times in ms; queries per request. Stock: ModelAdmin, "
        "show_full_result_count=True, icontains search on conversation_id, user_id, messages__content."
    )
    header = f"{'request':<36} | {'ours median / p90 / queries':>27} | {'stock median / p90 / queries':>28} | stock/ours"
    print(header + "\n" + "-" * len(header))
    for (name, mine), theirs in zip(ours, stock, strict=True):
        print(f"{name:<36} | {mine!s:>27} | {theirs!s:>28} | {theirs.median / mine.median:9.1f}x")


if __name__ == "__main__":
    main()
