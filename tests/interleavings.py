"""Driving races step by step, and the small readers and writers the race tests share.

Every actor (a rebuild, an appender, a worker, an eraser) runs in its own thread and waits at each
of its steps until an explicit order gives it the turn, so an interleaving runs exactly as written,
never left to timing. Tests mark the steps by wrapping functions of ``conversations.cache`` or
``conversations.services`` (in the module of the stage that calls them) with ``Steps.at``.

An actor that has to wait for a lock another actor holds (the append lock) cannot take its turn:
it hands it on with ``Steps.defer`` to the next step of another actor and waits for its own again,
as the real appender would spin until the lock is released. The order a schedule actually ran
(``Schedule.order``) then differs from the order it was given.
"""

import itertools
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections

from conversations import cache, selectors, services
from conversations.models import Message
from conversations.services import publish as publishing

STEP_TIMEOUT = 20  # seconds an actor may wait for its turn before the schedule is declared stuck


# --- Driving interleavings ------------------------------------------------------------------------


class Schedule:
    """Runs the steps of several actors (threads) one at a time, in exactly the order given.

    An actor reaches a step by calling ``at(name)``: it waits until ``"<thread name>.<name>"`` is
    the next label of the order, and that step lasts until the actor's next ``at`` or its end.
    A label the order does not name (the nested rebuild of an append, say) is no step: it runs
    inside the current one. ``observe``, if given, is called with each label as its step ends,
    while no other step runs.
    """

    def __init__(self, order: Sequence[str], observe: Callable[[str], None] | None = None) -> None:
        assert len(set(order)) == len(order), f"labels repeat in {order}"
        self.order = list(order)
        self.position = 0
        self.condition = threading.Condition()
        self.running: dict[int, str] = {}  # thread -> label of the step it is running
        self.aborted = False
        self.observe = observe

    def at(self, name: str) -> None:
        label = f"{threading.current_thread().name}.{name}"
        me = threading.get_ident()
        with self.condition:
            if label not in self.order[self.position :] or self.running.get(me) == label:
                return
            self._end_step(me)
            self._wait_for_turn(label)
            self.running[me] = label

    def defer(self) -> None:
        """The running step cannot go on (another actor holds a lock): the next step of another
        actor runs first, and this one resumes after it."""
        me = threading.get_ident()
        with self.condition:
            label = self.running[me]
            actor = label.split(".")[0]
            later = self.order[self.position :]
            other = next((index for index, step in enumerate(later) if not step.startswith(f"{actor}.")), None)
            if other is None:
                self.aborted = True
                self.condition.notify_all()
                raise AssertionError(f"{label} waits for a lock that no step left in {later} can release")
            # This actor's steps up to there move behind that step, keeping their own order.
            self.order[self.position : self.position + other + 1] = [later[other], *later[:other]]
            self.condition.notify_all()
            self._wait_for_turn(label)

    def end(self) -> None:
        with self.condition:
            self._end_step(threading.get_ident())

    def abort(self) -> None:
        with self.condition:
            self.aborted = True
            self.condition.notify_all()

    def _wait_for_turn(self, label: str) -> None:
        if not self.condition.wait_for(lambda: self.aborted or self.order[self.position] == label, timeout=STEP_TIMEOUT):
            self.aborted = True
            self.condition.notify_all()
            raise AssertionError(f"{label} never got its turn: the schedule is stuck at {self.order[self.position]}")
        if self.aborted:
            raise AssertionError(f"{label}: another actor failed")

    def _end_step(self, me: int) -> None:
        label = self.running.pop(me, None)
        if label is not None:
            if self.observe is not None:
                self.observe(label)
            self.position += 1
            self.condition.notify_all()


class Steps:
    """The schedule the step hooks obey (none: the hooks change nothing)."""

    schedule: Schedule | None = None

    def at(self, name: str) -> None:
        if self.schedule is not None:
            self.schedule.at(name)

    def defer(self) -> None:
        if self.schedule is not None:
            self.schedule.defer()


def run(steps: Steps, order: Sequence[str] | Schedule, **actors: Callable[[], Any]) -> dict[str, Any]:
    """Run each actor in a thread named after it, its steps in ``order``; return what each returned."""
    schedule = steps.schedule = order if isinstance(order, Schedule) else Schedule(order)
    order = schedule.order
    results: dict[str, Any] = {}
    errors: list[BaseException] = []

    def body(name: str, actor: Callable[[], Any]) -> None:
        try:
            results[name] = actor()
        except BaseException as error:  # handed to the test below
            errors.append(error)
            schedule.abort()
        finally:
            schedule.end()
            connections.close_all()

    threads = [threading.Thread(target=body, args=(name, actor), name=name) for name, actor in actors.items()]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=STEP_TIMEOUT * len(order))
    finally:
        steps.schedule = None
    assert not any(thread.is_alive() for thread in threads), f"an actor is still running in {order}"
    if errors:
        raise errors[0]
    assert schedule.position == len(order), f"only {order[: schedule.position]} of {order} ran"
    return results


def interleavings(*sequences: Sequence[str]) -> list[list[str]]:
    """Every order of the labels that keeps the order within each sequence."""
    if not all(sequences):
        return [list(itertools.chain(*sequences))]
    found = []
    for index, sequence in enumerate(sequences):
        if sequence:
            rest = [*sequences[:index], sequence[1:], *sequences[index + 1 :]]
            found += [[sequence[0], *tail] for tail in interleavings(*rest)]
    return found


def rebuild_steps(actor: str) -> list[str]:
    return [f"{actor}.snapshot", f"{actor}.read", f"{actor}.install"]


# --- Appending, persisting and reading ---------------------------------------------------------------


def capture_published(monkeypatch: Any) -> list[dict[str, Any]]:
    """From now on, keep the payload of every persist task the broker confirms, as a worker would
    receive it (JSON round trip included)."""
    payloads: list[dict[str, Any]] = []
    original = publishing.publish

    def publish(task: Any, payload: dict[str, Any]) -> None:
        original(task, payload)
        if task == "conversations.tasks.messages_persist":
            payloads.append(json.loads(json.dumps(payload)))

    monkeypatch.setattr(publishing, "publish", publish)
    return payloads


def append(tenant: Any, conversation_id: str, content: str, role: str = "user") -> dict[str, Any]:
    result = services.message_append(
        tenant=tenant, conversation_id=conversation_id, messages=[{"role": role, "content": content}]
    )
    return result.messages[0]


def persist(published: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """Play the worker for the task that carries ``message``: commit the row, settle the cache."""
    (payload,) = [p for p in published if any(m["id"] == message["id"] for m in p["messages"])]
    services.messages_persist(payload=payload)


def window(tenant: Any, conversation_id: str, limit: int = 100, **query: Any) -> selectors.Window:
    return selectors.conversation_window(
        tenant=tenant, conversation_id=conversation_id, query=selectors.WindowQuery(limit=limit, **query)
    )


def ids(messages: Sequence[dict[str, Any]]) -> list[str]:
    return [message["id"] for message in messages]


def cached_list(tenant: Any, conversation_id: str) -> list[dict[str, Any]] | None:
    """The whole cached list, header first; None when it is not cached."""
    key = cache.key(tenant.slug, conversation_id, "messages")
    if not cache.client().exists(key):
        return None
    return [json.loads(element) for element in cache.client().lrange(key, 0, -1)]


def drop_list(tenant: Any, conversation_id: str) -> None:
    """The list expires: nothing else changes (unlike an invalidation, no version bump)."""
    cache.client().delete(cache.key(tenant.slug, conversation_id, "messages"))


def rows(tenant: Any, conversation_id: str) -> list[dict[str, Any]]:
    queryset = Message.objects.for_tenant(tenant).filter(conversation__conversation_id=conversation_id).order_by("seq")
    return [services.message_to_dict(row) for row in queryset]


def header(complete: bool) -> dict[str, Any]:
    return {"seq": 0, "complete": complete}


def assert_in_seq_order(messages: Sequence[dict[str, Any]]) -> None:
    seqs = [message["seq"] for message in messages]
    assert seqs == sorted(seqs), seqs
    assert len(set(seqs)) == len(seqs), seqs
