"""Search latency over one heavy user: every session of the synthetic retrieval dataset stored as
the conversations of a single user (about 6,500 messages), asked by each mode, with the vectors read
from PostgreSQL on every search (as a plain implementation does) and kept in memory between searches
(``search.vectors``, the default). Prints medians in milliseconds; the query vectors are computed
before timing, as the service memoises them.

With ``--http`` it also starts gunicorn as deployed (2 gthread workers) and asks the user search of
the API (``GET /api/v1/users/<user>/search/?q=...&top_k=20``, hybrid) each question once, as a client
would: every question is new to the server, so its embedding is part of the time. Once for the users
as the dataset has them (about 630 messages each), once for the heavy user.

    DJANGO_SETTINGS_MODULE=memoryproject.settings.test \\
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/membench REDIS_URL=redis://127.0.0.1:6379/13 \\
    .venv/bin/python -m benchmarks.search_latency [--users N] [--rounds N] [--http]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/membench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/13")
os.environ.setdefault("MEMORY_QUEUE", "memory-bench")

TENANT = "search-latency"
HEAVY_USER = "heavy"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=10, help="pairs of the synthetic dataset merged into one user")
    parser.add_argument("--rounds", type=int, default=3, help="times each question is asked per mode")
    parser.add_argument("--http", action="store_true", help="also time the API's user search through gunicorn")
    arguments = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import override_settings
    from tqdm import tqdm

    from benchmarks.database import ensure_database
    from benchmarks.retrieval.dataset import dataset_generate
    from benchmarks.retrieval.evaluate import user_ingest
    from conversations.models import Conversation
    from search import embeddings, vectors
    from search.selectors import SearchRequest, memory_search
    from search.services import conversation_embed
    from tenants.models import Tenant

    ensure_database()
    call_command("migrate", verbosity=0, interactive=False)
    tenant, _ = Tenant.objects.get_or_create(slug=TENANT, defaults={"name": "Search latency"})
    dataset = dataset_generate(users=arguments.users)
    for user in tqdm(dataset.users, desc="ingest", unit="user"):
        user_ingest(tenant=tenant, user=user)
    conversations = Conversation.objects.for_tenant(tenant)
    for conversation_id in tqdm(list(conversations.values_list("conversation_id", flat=True)), desc="embed", unit="conv"):
        conversation_embed(tenant=tenant, conversation_id=conversation_id)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE conversation_messages, message_embeddings")  # as autovacuum would after a load
    questions = [question.text for user in dataset.users for question in user.questions[:5]]
    model = tenant.setting("MEMORY_EMBEDDING_MODEL")
    for question in questions:
        embeddings.embed_query(model, question)
    owners = dict(conversations.values_list("pk", "user_id"))
    messages = sum(conversations.values_list("message_count", flat=True))
    rows = []
    http_rows = []
    web = _web_server(tenant) if arguments.http else None
    try:
        if web is not None:
            asked = [(user.user_id, question.text) for user in dataset.users for question in user.questions]
            http_rows.append(
                (f"{len(dataset.users)} users, about {messages // len(dataset.users):,} messages each", web.ask(asked))
            )
        conversations.update(user_id=HEAVY_USER)  # every session now belongs to one user
        if web is not None:
            heavy = [(HEAVY_USER, f"{question.text} (again)") for user in dataset.users for question in user.questions[:40]]
            http_rows.append((f"one user of {messages:,} messages", web.ask(heavy)))
        current = conversations.order_by("-updated_at").values_list("conversation_id", flat=True).first()
        for mode in ("semantic", "keyword", "hybrid"):
            figures = {}
            for cached in (False, True):
                vectors.clear()
                timings = []
                with override_settings(MEMORY_VECTOR_CACHE_MB=128 if cached else 0):
                    for _ in range(arguments.rounds):
                        for question in questions:
                            request = SearchRequest.for_tenant(tenant, query=question, mode=mode, scope="user")
                            started = time.perf_counter()
                            memory_search(tenant=tenant, request=request, conversation_id=current)
                            timings.append((time.perf_counter() - started) * 1000)
                figures[cached] = statistics.median(timings)
            rows.append((mode, figures[False], figures[True]))
    finally:
        if web is not None:
            web.stop()
        for pk, user_id in owners.items():
            Conversation.objects.for_tenant(tenant).filter(pk=pk).update(user_id=user_id)
    print(f"\nOne user, {messages:,} messages in {len(owners)} conversations; {len(questions)} questions x {arguments.rounds}.\n")
    print("| mode | vectors read every search (ms) | vectors kept in memory (ms) | ratio |")
    print("|---|---:|---:|---:|")
    for mode, cold, warm in rows:
        print(f"| {mode} | {cold:.1f} | {warm:.1f} | {cold / warm:.1f}x |")
    if http_rows:
        print("\nThe API's user search over HTTP (hybrid, top_k=20, each question new to the server):\n")
        print("| users | questions | median ms | p90 ms |")
        print("|---|---:|---:|---:|")
        for what, timings in http_rows:
            ordered = sorted(timings)
            print(f"| {what} | {len(timings)} | {statistics.median(timings):.1f} | {ordered[int(len(ordered) * 0.9)]:.1f} |")


class _Web:
    """gunicorn as deployed, asked by one client."""

    def __init__(self, server, key: str) -> None:  # noqa: ANN001 - torture.processes.WebServer
        self.server = server
        self.headers = {"Authorization": f"Api-Key {key}"}

    def ask(self, asked: list[tuple[str, str]]) -> list[float]:
        import httpx
        from tqdm import tqdm

        timings = []
        with httpx.Client(base_url=self.server.url, headers=self.headers, timeout=60) as client:
            for user_id, question in asked[:20]:  # warm-up: each worker loads the model and the vectors
                client.get(f"/api/v1/users/{user_id}/search/", params={"q": f"{question} (warm-up)", "top_k": 20})
            for user_id, question in tqdm(asked, desc="http", unit="q"):
                started = time.perf_counter()
                response = client.get(f"/api/v1/users/{user_id}/search/", params={"q": question, "top_k": 20})
                timings.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
        return timings

    def stop(self) -> None:
        self.server.stop()


def _web_server(tenant) -> _Web:  # noqa: ANN001 - tenants.models.Tenant
    from django.conf import settings

    from tenants import services as tenant_services
    from torture.processes import WebServer

    _, key = tenant_services.api_key_create(tenant=tenant, name="search-latency")
    env = {
        **os.environ,
        "MEMORY_QUEUE": settings.MEMORY_QUEUE,
        "MEMORY_DERIVED_QUEUE": settings.MEMORY_DERIVED_QUEUE,
        "MEMORY_RATE_LIMIT": "100000000",
        "DJANGO_LOG_LEVEL": "ERROR",
    }
    server = WebServer(env=env, name="search-latency", workers=2, threads=8)
    server.start()
    return _Web(server, key)


if __name__ == "__main__":
    main()
