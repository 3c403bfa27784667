"""Run inside a process of the service (its settings pointed at a primary and its replica): which
server answers each kind of read. ``python tests/cluster/replica_probe.py <tenant> <conversation>``
prints, last, one JSON line: for each case, the statements that read a table on each database.

Cases: a plain read; a search; a cold window (the rows past the cache); a read inside a transaction;
a write inside a stale read; the admin's list and one change form.
"""

import json
import re
import sys
from collections.abc import Callable
from typing import Any

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connections, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from conversations.models import Conversation, Message  # noqa: E402
from conversations.selectors import WindowQuery, conversation_window  # noqa: E402
from core.replica import stale_read  # noqa: E402
from search.selectors import SearchRequest, memory_search  # noqa: E402
from tenants.models import Tenant  # noqa: E402

# A statement that reads or writes a table (not the replica's position and lag, nor "SELECT 1").
TABLE = re.compile(r'\b(?:FROM|INTO|UPDATE|JOIN)\s+"?([a-z_]+)\b"?(?!\s*\()', re.IGNORECASE)


def statements(case: Callable[[], Any]) -> dict[str, Any]:
    """The table reads and writes ``case`` ran on each database, and whether it raised."""
    seen: dict[str, list[str]] = {"default": [], "replica": []}

    def recorder(alias: str) -> Callable[..., Any]:
        def record(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
            tables = TABLE.findall(sql)
            if tables:  # e.g. "SELECT conversation_messages,conversation_memories"
                seen[alias].append(f"{sql.split()[0].upper()} {','.join(dict.fromkeys(tables))}")
            return execute(sql, params, many, context)

        return record

    error = None
    with connections["default"].execute_wrapper(recorder("default")), connections["replica"].execute_wrapper(recorder("replica")):
        try:
            case()
        except Exception as raised:  # reported, the test says what it expected
            error = f"{type(raised).__name__}: {raised}"
    return {"default": seen["default"], "replica": seen["replica"], "error": error}


def main() -> None:
    slug, conversation_id = sys.argv[1], sys.argv[2]
    tenant = Tenant.objects.get(slug=slug)
    search = SearchRequest.for_tenant(tenant, query="replica", mode="keyword", top_k=5)
    cold = WindowQuery(limit=20, include_archived=True)  # read from PostgreSQL whatever the cache holds
    user_model = get_user_model()
    operator = user_model.objects.filter(username="replica-operator").first()
    if operator is None:
        operator = user_model.objects.create_superuser("replica-operator", "operator@example.com", "not-used-password-1")
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id=conversation_id)
    browser = Client()
    browser.force_login(operator)

    def write_inside() -> None:
        def write() -> None:
            Message.objects.for_tenant(tenant).filter(conversation=conversation).exists()
            Conversation.objects.for_tenant(tenant).filter(pk=conversation.pk).update(metadata=conversation.metadata)

        stale_read(write)

    def in_transaction() -> None:
        with transaction.atomic():
            stale_read(lambda: list(Message.objects.for_tenant(tenant).filter(conversation=conversation)[:5]))

    def admin_list() -> None:
        answer = browser.get(reverse("admin:conversations_conversation_changelist"))
        assert answer.status_code == 200, answer.status_code

    def admin_form() -> None:
        answer = browser.get(reverse("admin:conversations_conversation_change", args=[conversation.pk]))
        assert answer.status_code == 200, answer.status_code

    cases = {
        "plain": lambda: list(Message.objects.for_tenant(tenant).filter(conversation=conversation)[:5]),
        "search": lambda: memory_search(tenant=tenant, request=search, conversation_id=conversation_id),
        "window": lambda: conversation_window(tenant=tenant, conversation_id=conversation_id, query=cold),
        "transaction": in_transaction,
        "write": write_inside,
        "admin_list": admin_list,
        "admin_form": admin_form,
    }
    report = {name: statements(case) for name, case in cases.items()}
    print("PROBE " + json.dumps(report))


if __name__ == "__main__":
    main()
