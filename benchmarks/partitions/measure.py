"""The cold window read over one layout's store, beside PostgreSQL's own indexed read of the same kind.

On conversations of at least ``WINDOW`` messages picked at random (each system on conversations of
its own, the systems taking turns: ``benchmarks.compare.cold.take_turns``):

* service, cold window read (cache miss): ``selectors.conversation_window`` after the conversation's
  keys were erased: the Redis script that finds the miss and takes the rebuild lock, the one SQL
  statement, the rows made into the message shape; the install that follows on its thread is not
  timed;
* service, window read, Redis down: the same rows without Redis (``_window_from_database``), what
  a read answers when Redis cannot be reached;
* postgres floor, cold window read: the same SELECT's columns through psycopg with the conversation's
  pk known, ``ORDER BY seq DESC LIMIT 50`` on the window's index, rows fetched.

``plan`` runs the service's statement under ``EXPLAIN ANALYZE`` and counts the partitions it read.
"""

from __future__ import annotations

import random
from typing import Any

from benchmarks.compare.cold import StoredConversation, Timed, cycled, take_turns
from benchmarks.compare.measure import Figures, summarise
from benchmarks.partitions.store import Store, connect
from conversations import cache, selectors
from conversations.services import rebuild
from conversations.services.messages import CONVERSATION_MESSAGES_SQL
from tenants.models import Tenant

WINDOW = 50
FLOOR_READ = """
    SELECT message_id, seq, role, content, metadata, created_at, token_count FROM conversation_messages
    WHERE tenant_id = %s AND conversation_id = %s AND NOT archived ORDER BY seq DESC LIMIT %s
"""


def _sample(*, count: int, seed: int) -> tuple[list[tuple[StoredConversation, Tenant]], dict[int, Tenant]]:
    with connect() as pg:
        rows = pg.execute(
            "SELECT id, conversation_id, tenant_id FROM conversation_memories WHERE message_count >= %s ORDER BY id",
            [WINDOW],
        ).fetchall()
    rng = random.Random(seed)
    picked = rng.sample(rows, min(count, len(rows)))
    tenants = {tenant.pk: tenant for tenant in Tenant.objects.filter(pk__in={row[2] for row in picked})}
    return [(StoredConversation(conversation_id=row[1], pk=row[0]), tenants[row[2]]) for row in picked], tenants


def plan(*, conversation: StoredConversation, tenant: Tenant) -> dict[str, Any]:
    """The service's window statement under EXPLAIN ANALYZE: the partitions it read, its time."""
    with connect() as pg:
        (explained,) = pg.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + CONVERSATION_MESSAGES_SQL.format(filters=" AND NOT archived"),
            [tenant.pk, tenant.pk, conversation.conversation_id, WINDOW],
        ).fetchone()[0]
    read: set[str] = set()

    def walk(node: dict[str, Any]) -> None:
        if node.get("Relation Name", "").startswith("conversation_messages") and node.get("Actual Loops", 0) > 0:
            read.add(node["Relation Name"])
        for child in node.get("Plans", []):
            walk(child)

    walk(explained["Plan"])
    return {"partitions_read": len(read), "execution_ms": round(explained["Execution Time"], 3)}


def figures(*, store: Store, operations: int, seed: int) -> list[Figures]:
    sample, _ = _sample(count=3 * operations + 1, seed=seed)
    tenant_of = {conversation.pk: tenant for conversation, tenant in sample}
    order = [conversation for conversation, _ in sample]
    warm_up, order = order[0], order[1:] or order
    query = selectors.WindowQuery(limit=WINDOW)

    def erase(conversation: StoredConversation) -> None:
        rebuild.background_installs.wait()  # the last read's install lands before the keys go (untimed)
        cache.erase(tenant_slug=tenant_of[conversation.pk].slug, conversation_id=conversation.conversation_id)

    def cold_read(conversation: StoredConversation) -> object:
        tenant = tenant_of[conversation.pk]
        return selectors.conversation_window(tenant=tenant, conversation_id=conversation.conversation_id, query=query)

    def fallback_read(conversation: StoredConversation) -> object:
        return selectors._window_from_database(
            tenant=tenant_of[conversation.pk], conversation_id=conversation.conversation_id, query=query, with_pending=False
        )

    results = []
    with connect() as pg:

        def floor_read(conversation: StoredConversation) -> object:
            return pg.execute(FLOOR_READ, [tenant_of[conversation.pk].pk, conversation.pk, WINDOW]).fetchall()

        labels = [
            ("service", "cold window read (cache miss)"),
            ("service", "window read, Redis down"),
            ("postgres floor", "cold window read"),
        ]
        systems = [
            Timed(read, around, cycled(order, number * operations, operations))
            for number, (read, around) in enumerate([(cold_read, erase), (fallback_read, None), (floor_read, None)])
        ]
        for timed in systems:
            erase(warm_up)
            timed.read(warm_up)  # connections, compiled queries, registered scripts: not timed
            erase(warm_up)
        take_turns(systems)
        for (system, operation), timed in zip(labels, systems, strict=True):
            result = summarise(
                system,
                operation,
                size=WINDOW,
                clients=1,
                samples=timed.samples,
                elapsed=sum(timed.samples) / 1000,
                counts=timed.counts,
            )
            result.notes = {"layout": store.layout, "partitions": store.partitions, "stored_messages": store.messages}
            results.append(result)
    floor = results[-1].p50_ms
    for result in results:
        result.ratio_to_floor = round(result.p50_ms / floor, 2) if floor else None
    results[0].notes.update(plan(conversation=warm_up, tenant=tenant_of[warm_up.pk]))
    return results
