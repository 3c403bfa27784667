"""Per-process copies of a conversation's derived search data, kept while current.

Contract
--------
``Kept`` maps a key to an entry with a ``signature`` and an ``nbytes``. ``current(keys, signatures)``
answers the entries whose signature matches the one PostgreSQL answers now and the keys to read
again; a key PostgreSQL no longer answers for loses its entry at once. ``remember`` stores an entry,
evicting the least recently used beyond ``MEMORY_VECTOR_CACHE_MB`` (the budget the vectors and the
terms share, each keeper having its own; 0 turns keeping off). The copies hold nothing PostgreSQL
does not: a cold process reads, a warm one checks.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from django.conf import settings


class Entry(Protocol):
    signature: Any

    @property
    def nbytes(self) -> int: ...


E = TypeVar("E", bound=Entry)


class Kept(Generic[E]):
    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, E] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def current(self, keys: Iterable[Hashable], signatures: dict[Hashable, Any]) -> tuple[dict[Hashable, E], list[Hashable]]:
        """(the entries still current, the keys to read again); ``signatures`` holds the keys that exist."""
        found: dict[Hashable, E] = {}
        stale = []
        with self._lock:
            for key in keys:
                entry = self._entries.get(key)
                if key not in signatures:
                    self._forget(key)
                elif entry is not None and entry.signature == signatures[key]:
                    self._entries.move_to_end(key)
                    found[key] = entry
                else:
                    stale.append(key)
        return found, stale

    def remember(self, key: Hashable, entry: E) -> None:
        budget = settings.MEMORY_VECTOR_CACHE_MB * 1024 * 1024
        if entry.nbytes > budget:
            return
        with self._lock:
            self._forget(key)
            self._entries[key] = entry
            self._bytes += entry.nbytes
            while self._bytes > budget and self._entries:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.nbytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def _forget(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry.nbytes
