"""Writes of the conversations app: the write path, one stage per module, and its promises.

A message from the API to its row, in order:

1. ``conversations.api.views`` validates the request and calls ``message_append`` (``append.py``).
2. ``append.py``: every value passes the storable door (``core.storable``); the
   conversation's append lock and the seqs are taken in Redis (``seqs.py``: ``_reserve_locked``);
   each client id is looked up in Redis's ledger, then in PostgreSQL (``ledger.py`` says whether an
   id the ledger lost may still be queued: 503 ``idempotency_unknown`` rather than a duplicate).
3. ``publish.py``: the persist task is published on the durable queue and confirmed by the broker
   before the request answers (``PersistGroup`` shares a confirm among concurrent appends). Refused:
   503 ``broker_unavailable``, nothing written; confirm lost: 503 ``write_indeterminate``, a resend
   gets the same seqs.
4. ``append.py`` again: the messages join the cached list and the pending writes in one Redis
   script, which releases the lock; the 201 goes out, and the window shows them at once.
5. ``persist.py`` (a worker, through ``conversations.tasks.messages_persist``): ``messages_persist``
   commits the rows in one statement, idempotently, dropping what an erase's tombstone removed;
   ``_settle`` moves them from the pending writes into the cached list and queues the derived memory
   (vectors, summaries). A task that fails for good becomes a dead letter.

With Redis down, ``append.py`` commits the rows in the request instead (``_append_through_database``)
and marks the conversation for cache repair.

Around that path: ``rebuild.py`` makes a cached list again from the rows and the pending writes
(never dropping one), ``erase.py`` removes a conversation everywhere (and the retention sweep),
``document.py`` holds the memory document (``save_memory``), ``lifecycle.py`` the conversation row
and its tombstone floors, ``messages.py`` the one JSON shape of a message.

The public names are re-exported here: ``from conversations import services`` then
``services.message_append(...)``. Module-level state (``rebuild.background_installs``,
``persist.persist_commits``) and the broker helpers (``publish.publish``, ``publish.publish_args``)
are reached through their module, where tests replace them.
"""

from conversations.services.append import AppendResult, message_append
from conversations.services.document import memory_document, memory_persist, memory_save
from conversations.services.erase import EraseResult, conversation_erase, messages_cleared, retention_sweep
from conversations.services.ledger import (
    ledger_barrier_reached,
    ledger_disturbed,
    ledger_disturbed_soon,
    ledger_is_whole,
    ledger_round_begin,
    ledger_slack_seconds,
    messages_reassert_pending,
    worker_generations,
    worker_inquiry,
)
from conversations.services.lifecycle import (
    TombstoneFloors,
    conversation_create,
    conversation_ensure,
    conversation_or_404,
    conversation_update,
)
from conversations.services.messages import (
    MESSAGE_COLUMNS,
    conversation_messages,
    message_from_values,
    message_to_dict,
    same_json,
)
from conversations.services.persist import (
    DERIVED_TASKS,
    PersistCommits,
    PersistConflict,
    dead_letter_record,
    dead_letter_replay,
    derived_started,
    derived_task_wanted_register,
    messages_persist,
    messages_persist_group,
)
from conversations.services.publish import PersistGroup, PublishIndeterminate, queue_depth
from conversations.services.rebuild import (
    BackgroundInstalls,
    RebuildResult,
    TenantRebuildSummary,
    cache_rebuild,
    cache_repair_sweep,
    memory_cache_rebuild,
    merge_messages,
    tenant_cache_rebuild,
    tenant_cache_rebuild_queue,
)

__all__ = [
    "DERIVED_TASKS",
    "MESSAGE_COLUMNS",
    "AppendResult",
    "BackgroundInstalls",
    "EraseResult",
    "PersistCommits",
    "PersistConflict",
    "PersistGroup",
    "PublishIndeterminate",
    "RebuildResult",
    "TenantRebuildSummary",
    "TombstoneFloors",
    "cache_rebuild",
    "cache_repair_sweep",
    "conversation_create",
    "conversation_ensure",
    "conversation_erase",
    "conversation_messages",
    "conversation_or_404",
    "conversation_update",
    "dead_letter_record",
    "dead_letter_replay",
    "derived_started",
    "derived_task_wanted_register",
    "ledger_barrier_reached",
    "ledger_disturbed",
    "ledger_disturbed_soon",
    "ledger_is_whole",
    "ledger_round_begin",
    "ledger_slack_seconds",
    "memory_cache_rebuild",
    "memory_document",
    "memory_persist",
    "memory_save",
    "merge_messages",
    "message_append",
    "message_from_values",
    "message_to_dict",
    "messages_cleared",
    "messages_persist",
    "messages_persist_group",
    "messages_reassert_pending",
    "queue_depth",
    "retention_sweep",
    "same_json",
    "tenant_cache_rebuild",
    "tenant_cache_rebuild_queue",
    "worker_generations",
    "worker_inquiry",
]
