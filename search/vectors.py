"""The vectors a search compares: read from PostgreSQL once per process and kept while current.

Contract
--------
``conversation_vectors(tenant=, model=, conversation_pks=)`` answers, for each conversation of the
scope that has vectors under ``model``, its message keys, their creation times, their places in the
conversation (``seq``, with the conversation's key), who said each (the ``name`` the client set, "" where none) and the
unit-length matrix, newest first. A conversation's copy is current while the pair (number of its vectors,
highest vector id) is unchanged: vectors are only ever added (with higher ids) or deleted (the
number drops; a re-index renames new rows, with higher ids, to the model's name in the commit that
drops the old), so every change alters the pair. One grouped index query checks the whole scope;
only conversations that changed are read again, and the check is asked again after that read, so the
copies kept and the rows read are of one index, never of the old and the new. Searching a user's 6,500 messages drops from about
70 ms of reading to a few.

The copies live in this process, least recently used out beyond ``MEMORY_VECTOR_CACHE_MB`` (0 turns
them off). They hold nothing PostgreSQL does not, and nothing depends on them being warm or shared
between processes: a cold process reads, a warm one checks. A conversation found without vectors
(erased, cleared) loses its copy at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.replica import read_connection
from search.kept import Kept
from search.models import MessageEmbedding
from tenants.models import Tenant


@dataclass(frozen=True)
class ConversationVectors:
    signature: tuple[int, int]
    keys: np.ndarray  # message primary keys, int64
    created: np.ndarray  # creation times, epoch seconds, float64
    matrix: np.ndarray  # float32, one unit row per key
    conversations: np.ndarray  # each message's conversation (primary key), int64
    seqs: np.ndarray  # each message's place in its conversation, int64
    speakers: np.ndarray  # each message's speaker name ("" where none), object

    @property
    def nbytes(self) -> int:
        arrays = (self.keys, self.created, self.matrix, self.conversations, self.seqs)
        return sum(array.nbytes for array in arrays) + sum(len(name) + 50 for name in self.speakers)

    def rows(self, keep: np.ndarray) -> ConversationVectors:
        """The rows ``keep`` (a boolean mask or indices) selects, in that order."""
        return ConversationVectors(
            signature=(0, 0),
            keys=self.keys[keep],
            created=self.created[keep],
            matrix=self.matrix[keep],
            conversations=self.conversations[keep],
            seqs=self.seqs[keep],
            speakers=self.speakers[keep],
        )


EMPTY = ConversationVectors(
    (0, 0),
    np.zeros(0, np.int64),
    np.zeros(0, np.float64),
    np.zeros((0, 0), np.float32),
    np.zeros(0, np.int64),
    np.zeros(0, np.int64),
    np.zeros(0, object),
)

_kept: Kept[ConversationVectors] = Kept()

# Each conversation's (number of vectors, highest vector id): asked on every search, so written as SQL
# (the index-only grouped query costs less than building it through the ORM).
SIGNATURES_SQL = """
SELECT e.conversation_id, count(e.id), max(e.id) FROM message_embeddings AS e
WHERE e.tenant_id = %(tenant)s AND e.model = %(model)s AND e.conversation_id = ANY(%(conversations)s)
GROUP BY e.conversation_id
"""


def conversation_vectors(*, tenant: Tenant, model: str, conversation_pks: list[int]) -> dict[int, ConversationVectors]:
    for _ in range(3):
        signatures = _signatures(tenant=tenant, model=model, conversation_pks=conversation_pks)
        found, stale = _current(tenant=tenant, model=model, conversation_pks=conversation_pks, signatures=signatures)
        if not stale:
            return found
        read = _read(tenant=tenant, model=model, conversation_pks=stale, signatures=signatures)
        # A re-index swaps a tenant's vectors in one commit (``search.services.tenant_reindex``): if one
        # came between the signatures and the read, the copies kept and the rows read may be of two
        # indexes. Unchanged signatures after the read prove that none did.
        if _signatures(tenant=tenant, model=model, conversation_pks=conversation_pks) == signatures:
            for pk, entry in read.items():
                _kept.remember((tenant.pk, pk, model), entry)
            return found | read
    # Swapped under three reads in a row: every conversation read by one statement, one snapshot.
    return _read(tenant=tenant, model=model, conversation_pks=conversation_pks, signatures={})


def _signatures(*, tenant: Tenant, model: str, conversation_pks: list[int]) -> dict[int, tuple[int, int]]:
    with read_connection().cursor() as cursor:
        cursor.execute(SIGNATURES_SQL, {"tenant": tenant.pk, "model": model, "conversations": conversation_pks})
        return {pk: (count, highest) for pk, count, highest in cursor.fetchall()}


def _current(
    *, tenant: Tenant, model: str, conversation_pks: list[int], signatures: dict[int, tuple[int, int]]
) -> tuple[dict[int, ConversationVectors], list[int]]:
    found, stale = _kept.current(
        [(tenant.pk, pk, model) for pk in conversation_pks],
        {(tenant.pk, pk, model): signature for pk, signature in signatures.items()},
    )
    return {key[1]: entry for key, entry in found.items()}, [key[1] for key in stale]


def _read(
    *, tenant: Tenant, model: str, conversation_pks: list[int], signatures: dict[int, tuple[int, int]]
) -> dict[int, ConversationVectors]:
    rows = (
        MessageEmbedding.objects.for_tenant(tenant)
        .filter(model=model, conversation_id__in=conversation_pks)
        .order_by("conversation_id", "-message__created_at", "-message_id")
        .values_list("conversation_id", "message_id", "message__created_at", "vector", "message__seq", "message__metadata__name")
    )
    grouped: dict[int, list[tuple[int, float, bytes, int, str]]] = {}
    for pk, message_pk, created_at, vector, seq, name in rows.iterator(chunk_size=2000):
        speaker = name.strip() if isinstance(name, str) else ""
        grouped.setdefault(pk, []).append((message_pk, created_at.timestamp(), bytes(vector), seq, speaker))
    return {
        pk: ConversationVectors(
            signature=signatures.get(pk, (0, 0)),
            keys=np.fromiter((item[0] for item in items), dtype=np.int64, count=len(items)),
            created=np.fromiter((item[1] for item in items), dtype=np.float64, count=len(items)),
            matrix=np.frombuffer(b"".join(item[2] for item in items), dtype="<f4").reshape(len(items), -1),
            conversations=np.full(len(items), pk, dtype=np.int64),
            seqs=np.fromiter((item[3] for item in items), dtype=np.int64, count=len(items)),
            speakers=np.array([item[4] for item in items], dtype=object),
        )
        for pk, items in grouped.items()
    }


def newest(parts: list[ConversationVectors], limit: int) -> ConversationVectors:
    """The ``limit`` newest rows of several conversations' vectors, newest first."""
    parts = [part for part in parts if len(part.keys)]
    if not parts:
        return EMPTY
    if len(parts) == 1 and len(parts[0].keys) <= limit:
        return parts[0]
    created = np.concatenate([part.created for part in parts])
    order = np.argsort(-created, kind="stable")[:limit]
    return ConversationVectors(
        signature=(0, 0),
        keys=np.concatenate([part.keys for part in parts])[order],
        created=created[order],
        matrix=np.concatenate([part.matrix for part in parts])[order],
        conversations=np.concatenate([part.conversations for part in parts])[order],
        seqs=np.concatenate([part.seqs for part in parts])[order],
        speakers=np.concatenate([part.speakers for part in parts])[order],
    )


@dataclass(frozen=True)
class Scope:
    """The rows of several conversations' vectors as one table, the matrices left where they are: a
    user of 6,500 messages would otherwise copy 10 MB at every search to compare one query."""

    parts: tuple[ConversationVectors, ...]
    keep: np.ndarray | None  # the rows kept, into the parts' concatenation (None: all)
    keys: np.ndarray
    created: np.ndarray
    conversations: np.ndarray
    seqs: np.ndarray
    speakers: np.ndarray

    def cosine(self, query: np.ndarray) -> np.ndarray:
        """Each kept row's cosine with the unit ``query`` vector, float64."""
        if not self.parts:
            return np.zeros(0, dtype=np.float64)
        similarities = np.concatenate([part.matrix @ query for part in self.parts]).astype(np.float64)
        return similarities if self.keep is None else similarities[self.keep]


def scope(parts: list[ConversationVectors], limit: int) -> Scope:
    """The rows of ``parts``, only the ``limit`` newest when there are more."""
    parts = [part for part in parts if len(part.keys)]
    if not parts:
        empty = EMPTY
        return Scope((), None, empty.keys, empty.created, empty.conversations, empty.seqs, empty.speakers)
    created = np.concatenate([part.created for part in parts])
    keep = None if len(created) <= limit else np.sort(np.argsort(-created, kind="stable")[:limit])

    def joined(name: str) -> np.ndarray:
        array = np.concatenate([getattr(part, name) for part in parts])
        return array if keep is None else array[keep]

    return Scope(
        parts=tuple(parts),
        keep=keep,
        keys=joined("keys"),
        created=created if keep is None else created[keep],
        conversations=joined("conversations"),
        seqs=joined("seqs"),
        speakers=joined("speakers"),
    )


def only(part: ConversationVectors, keys: np.ndarray) -> ConversationVectors:
    """The rows of ``part`` whose message key is one of ``keys``, in their order."""
    keep = np.isin(part.keys, keys)
    if keep.all():
        return part
    return part.rows(keep)


def clear() -> None:
    _kept.clear()
