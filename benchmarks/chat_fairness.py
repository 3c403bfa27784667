"""Tenant A's window reads while tenant B's chats wait on a model server that hangs.

The real server: gunicorn with the repository's ``gunicorn.conf.py`` (gthread workers), a Celery
worker on the write queue, the machine's PostgreSQL, Redis and RabbitMQ. Tenant B's chat model is
its own OpenAI-compatible server on loopback (allowed by ``MEMORY_EGRESS_ALLOWED_NETWORKS``, called
with B's own credential) that holds every request without answering until the phase ends. Tenant A
reads the newest 50 messages of its conversation, one request after another, first with no chat
running, then while B has sent ``--chats`` chats at once: with B's limit as deployed
(``MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT``), and with B's limit raised to ``--chats`` so that only
each process's share of threads (``MEMORY_CHAT_THREAD_SHARE``) bounds them.

    DJANGO_SETTINGS_MODULE=memoryproject.settings.test \\
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/membench REDIS_URL=redis://127.0.0.1:6379/13 \\
    MEMORY_QUEUE=memory-bench .venv/bin/python -m benchmarks.chat_fairness [--chats 10] [--reads 400]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/membench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/13")
os.environ.setdefault("MEMORY_QUEUE", "memory-bench")

LOOPBACK = "127.0.0.1/32"


class HangingModelServer:
    """An OpenAI-compatible server that answers nothing until ``release()``; ``hanging`` counts the
    requests it holds."""

    def __init__(self) -> None:
        self.hanging = 0
        self.released = threading.Event()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server.lock:
                    server.hanging += 1
                server.released.wait(600)
                with server.lock:
                    server.hanging -= 1
                body = json.dumps(
                    {
                        "id": "chatcmpl-hang",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": "hang",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "late"}, "finish_reason": "stop"}],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def release(self) -> None:
        self.released.set()

    def rearm(self) -> None:
        self.released = threading.Event()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=10, help="tenant B's chats sent at once")
    parser.add_argument("--reads", type=int, default=400, help="tenant A's window reads timed per phase")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=8, help="threads per gunicorn worker")
    arguments = parser.parse_args()

    import django

    django.setup()
    import httpx
    from django.conf import settings
    from django.core.management import call_command

    from benchmarks.database import ensure_database
    from tenants import services as tenant_services
    from tenants.models import Tenant
    from torture.processes import CeleryWorker, WebServer

    ensure_database()
    call_command("migrate", verbosity=0)
    model_server = HangingModelServer()
    env = {
        **os.environ,
        "MEMORY_EGRESS_ALLOWED_NETWORKS": LOOPBACK,
        "MEMORY_QUEUE": settings.MEMORY_QUEUE,
        "MEMORY_DERIVED_QUEUE": settings.MEMORY_DERIVED_QUEUE,
        "MEMORY_RATE_LIMIT": "100000000",
        "DJANGO_LOG_LEVEL": "ERROR",
    }
    settings.MEMORY_EGRESS_ALLOWED_NETWORKS = [LOOPBACK]  # tenant B's URL is checked when saved, here too

    def tenant(slug: str) -> Tenant:
        found = Tenant.objects.filter(slug=slug).first()
        return found or tenant_services.tenant_create(slug=slug, name=slug)

    tenant_a, tenant_b = tenant("fairness-a"), tenant("fairness-b")
    _, key_a = tenant_services.api_key_create(tenant=tenant_a, name="bench")
    _, key_b = tenant_services.api_key_create(tenant=tenant_b, name="bench")
    tenant_services.provider_credential_set(tenant=tenant_b, provider="openai", secret="sk-tenant-b-bench")  # noqa: S106 - the stand-in server ignores it
    b_settings = {
        "MEMORY_CHAT_MODEL": "openai:hang",
        "MEMORY_CHAT_BASE_URL": model_server.base_url,
        "MEMORY_CHAT_MAX_RETRIES": 0,
    }

    web = WebServer(env=env, name="chat-fairness", workers=arguments.workers, threads=arguments.threads)
    worker = CeleryWorker(env=env, name="chat-fairness", pool="threads", concurrency=4)
    web.start()
    worker.start()
    a_headers = {"Authorization": f"Api-Key {key_a}"}
    window_url = f"{web.url}/api/v1/conversations/fairness-window/messages/"
    results: list[tuple[str, list[float], int, Counter]] = []
    try:
        with httpx.Client(timeout=120) as client:
            if client.get(window_url, headers=a_headers).status_code == 404:
                batch = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"Turn {n} " * 40} for n in range(50)]
                client.post(window_url, json={"messages": batch}, headers=a_headers).raise_for_status()

            def read_phase() -> tuple[list[float], int]:
                for _ in range(20):  # warm-up
                    client.get(window_url, headers=a_headers, params={"limit": 50})
                timings, failed = [], 0
                for _ in range(arguments.reads):
                    started = time.perf_counter()
                    response = client.get(window_url, headers=a_headers, params={"limit": 50})
                    timings.append((time.perf_counter() - started) * 1000)
                    failed += response.status_code != 200
                return timings, failed

            timings, failed = read_phase()
            results.append(("no chats", timings, failed, Counter()))

            limit = settings.MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT
            for label, tenant_limit in (
                (f"{arguments.chats} hanging chats, B limit {limit}", None),
                (f"{arguments.chats} hanging chats, B limit {arguments.chats}", arguments.chats),
            ):
                overrides = b_settings | ({"MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT": tenant_limit} if tenant_limit else {})
                tenant_services.tenant_update(tenant=tenant_b, settings=overrides)
                time.sleep(settings.MEMORY_AUTH_REVALIDATE + 1)  # every web process has read the new settings
                model_server.rearm()
                answers: list[str] = []

                def chat(number: int, answers: list[str] = answers) -> None:
                    response = httpx.post(
                        f"{web.url}/api/v1/conversations/fairness-hang-{number}/chat/",
                        json={"content": "Are you there?"},
                        headers={"Authorization": f"Api-Key {key_b}"},
                        timeout=300,
                    )
                    code = response.json().get("error", {}).get("code") if response.status_code >= 400 else ""
                    answers.append(f"{response.status_code} {code}".strip())

                chats = [threading.Thread(target=chat, args=(number,)) for number in range(arguments.chats)]
                for thread in chats:
                    thread.start()
                deadline = time.monotonic() + 60
                while model_server.hanging + len(answers) < arguments.chats and time.monotonic() < deadline:
                    time.sleep(0.05)
                hanging = model_server.hanging
                timings, failed = read_phase()
                still_hanging = model_server.hanging
                model_server.release()
                for thread in chats:
                    thread.join()
                outcome = Counter(answers[: arguments.chats - hanging])  # those refused while the others hung
                outcome["hung (then 201)"] = hanging
                if still_hanging != hanging:
                    outcome["returned during the reads"] = hanging - still_hanging
                results.append((label, timings, failed, outcome))
    finally:
        model_server.release()
        web.stop()
        worker.stop()

    print(
        f"gunicorn {arguments.workers} gthread workers x {arguments.threads} threads, MEMORY_CHAT_THREAD_SHARE="
        f"{settings.MEMORY_CHAT_THREAD_SHARE}; tenant A: {arguments.reads} sequential window reads (newest 50) per phase"
    )
    print(f"{'phase':<36} {'median ms':>10} {'p99 ms':>8} {'max ms':>8} {'failed':>7}  tenant B's chats")
    for label, timings, failed, outcome in results:
        chats = ", ".join(f"{count} x {what}" for what, count in sorted(outcome.items())) or "-"
        print(
            f"{label:<36} {statistics.median(timings):>10.2f} {percentile(timings, 0.99):>8.2f} "
            f"{max(timings):>8.2f} {failed:>7}  {chats}"
        )


if __name__ == "__main__":
    main()
