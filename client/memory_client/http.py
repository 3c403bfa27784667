"""HTTP client of the memory service (API v1), sync and async, without Django.

Contract:

* Every request carries ``Authorization: Api-Key <key>`` and speaks JSON.
* A service error ``{"error": {"code", "message", "details"}}`` is raised as
  :class:`MemoryServiceError` (``status``, ``code``, ``message``, ``details``); a 404 as its
  subclass :class:`NotFound`. A service that cannot be reached after the retries is a
  :class:`MemoryServiceError` with ``status=None`` and ``code="unreachable"``.
* Reads of something that may not exist yet answer an empty value instead of raising: the window
  and message list of an unknown conversation are ``[]``, clearing or deleting it is a no-op, and
  a missing checkpoint is ``None``. Only the service's own ``not_found`` answer counts: a 404 from
  a path the service does not know (an older deployment, a proxy) still raises.
* Retries: a 503 (waiting ``Retry-After``, capped at ``RETRY_AFTER_CAP`` seconds), a refused or
  dropped connection and a timeout are retried up to ``retries`` times, with exponential backoff.
  Every call is safe to repeat: each appended message gets its UUID ``id`` on the client before the
  first attempt (the service answers a resend with the same id and content with the stored message),
  a checkpoint is put under its own id, writes are keyed by task and index, deletes are idempotent,
  a chat turn's message gets its ``message_id`` first too. A 503 saying the tenant has no usable chat
  model (``PERMANENT_UNAVAILABLE``) is raised at once: no retry changes it.
* Appends are sent in batches of at most ``MAX_BATCH`` messages, in order.
* The async methods (``a`` prefix) use an ``httpx.AsyncClient`` created on first use, one per event
  loop, so a client may serve several ``asyncio.run`` calls.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final
from urllib.parse import quote

import httpx

API_PREFIX: Final = "/api/v1"
MAX_BATCH: Final = 100
RETRY_AFTER_CAP: Final = 5.0
BACKOFF_BASE: Final = 0.25
BACKOFF_CAP: Final = 4.0
# A chat call waits for the model: up to the service's MEMORY_CHAT_TIMEOUT (60 s by default).
CHAT_TIMEOUT: Final = 90.0
# 503s that no retry will change: the tenant's chat model is not configured or cannot be set up.
PERMANENT_UNAVAILABLE: Final = frozenset({"chat_model_not_configured", "chat_model_unavailable"})
# Errors after which the request may not have reached the service, or its answer was lost.
TRANSIENT_ERRORS: Final = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


class MemoryServiceError(Exception):
    """An error answered by the memory service, or its absence (``status=None``)."""

    def __init__(self, status: int | None, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"{code} ({status}): {message}" if status else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details if details is not None else {}

    def __reduce__(self) -> tuple[type[MemoryServiceError], tuple[int | None, str, str, Any]]:
        return type(self), (self.status, self.code, self.message, self.details)

    @classmethod
    def from_response(cls, response: httpx.Response) -> MemoryServiceError:
        """The error a response answers: the service's JSON error, or the bare HTTP status."""
        code, message, details = f"http_{response.status_code}", response.reason_phrase, {}
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("code"), str):
            code, message, details = error["code"], str(error.get("message", "")), error.get("details") or {}
        elif response.text:
            message = f"{message}: {response.text[:200]}"
        kind = NotFound if response.status_code == 404 else MemoryServiceError
        return kind(response.status_code, code, message, details)


class NotFound(MemoryServiceError):
    """404: the conversation, message or checkpoint does not exist (or belongs to another tenant)."""


@dataclass(frozen=True)
class _Call:
    """One request: what to send, and whether the service's "not found" means an empty answer."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    body: Any = None
    missing_ok: bool = False
    timeout: float | None = None  # the client's own when None


_MISSING: Final = object()


def _conversation_path(conversation_id: str, *rest: str) -> str:
    if not conversation_id:
        raise ValueError("A conversation id is required.")
    parts = [quote(str(conversation_id), safe=""), *(quote(str(part), safe="") for part in rest)]
    return f"{API_PREFIX}/conversations/{'/'.join(parts)}/"


def _params(**values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def _chunks(items: Sequence[Mapping[str, Any]]) -> Iterator[list[Mapping[str, Any]]]:
    """The items in batches of at most ``MAX_BATCH``, in order."""
    for start in range(0, len(items), MAX_BATCH):
        yield list(items[start : start + MAX_BATCH])


def _identified(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages, each with its id (a new UUID unless given), fixed before the first attempt."""
    return [{**message, "id": str(message.get("id") or uuid.uuid4())} for message in messages]


def _error_code(response: httpx.Response) -> str | None:
    try:
        return response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:  # the HTTP-date form
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), RETRY_AFTER_CAP)


class MemoryClient:
    """A client of one memory service deployment, authenticated as one tenant by its API key."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 10.0, retries: int = 3) -> None:
        if not base_url:
            raise ValueError("base_url is required, e.g. http://127.0.0.1:8000")
        if not api_key:
            raise ValueError("api_key is required (python manage.py create_api_key --tenant <slug>).")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = max(0, retries)
        self._headers = {"Authorization": f"Api-Key {api_key}", "Accept": "application/json"}
        self._client = httpx.Client(base_url=self.base_url, headers=self._headers, timeout=timeout)
        self._async_client: httpx.AsyncClient | None = None
        self._async_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"MemoryClient({self.base_url!r})"

    # --- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connections (an async client left open is closed by ``aclose``)."""
        self._client.close()

    async def aclose(self) -> None:
        """Close every connection, sync and async."""
        if self._async_client is not None and self._async_loop is asyncio.get_running_loop():
            await self._async_client.aclose()
        self._async_client = self._async_loop = None
        self._client.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> MemoryClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        await self.aclose()

    # --- messages -------------------------------------------------------------------------------

    def append(
        self, conversation_id: str, messages: Sequence[Mapping[str, Any]], *, user_id: str = "", agent_id: str = ""
    ) -> list[dict[str, Any]]:
        """Append messages (``role``, ``content``, optional ``metadata``, ``id``, ``created_at``) in
        order; the conversation is created on first write. Returns the stored messages, with ``seq``."""
        stored: list[dict[str, Any]] = []
        for batch in _chunks(_identified(messages)):
            stored += self._send(self._append_call(conversation_id, batch, user_id, agent_id))["messages"]
        return stored

    async def aappend(
        self, conversation_id: str, messages: Sequence[Mapping[str, Any]], *, user_id: str = "", agent_id: str = ""
    ) -> list[dict[str, Any]]:
        stored: list[dict[str, Any]] = []
        for batch in _chunks(_identified(messages)):
            stored += (await self._asend(self._append_call(conversation_id, batch, user_id, agent_id)))["messages"]
        return stored

    def window(self, conversation_id: str, *, limit: int | None = None, format: str = "langchain") -> list[dict[str, Any]]:
        """The newest ``limit`` messages (the service's default when ``None``), oldest first, in
        ``format`` ``"langchain"`` (``message_to_dict`` items) or ``"openai"``; ``[]`` when unknown."""
        return self._messages_of(self._send(self._window_call(conversation_id, limit, format)))

    async def awindow(self, conversation_id: str, *, limit: int | None = None, format: str = "langchain") -> list[dict[str, Any]]:
        return self._messages_of(await self._asend(self._window_call(conversation_id, limit, format)))

    def messages(self, conversation_id: str, **filters: Any) -> list[dict[str, Any]]:
        """The stored messages as the service keeps them (``id``, ``seq``, ``role``, ``content``,
        ``metadata``...), filtered by ``limit``, ``skip``, ``role``, ``start_date``, ``end_date``,
        ``include_archived``; ``[]`` when the conversation is unknown."""
        return self._messages_of(self._send(self._messages_call(conversation_id, filters)))

    async def amessages(self, conversation_id: str, **filters: Any) -> list[dict[str, Any]]:
        return self._messages_of(await self._asend(self._messages_call(conversation_id, filters)))

    def clear(self, conversation_id: str) -> None:
        """Remove the conversation's messages (its memory and checkpoints stay); no-op when unknown."""
        self._send(_Call("DELETE", _conversation_path(conversation_id, "messages"), missing_ok=True))

    async def aclear(self, conversation_id: str) -> None:
        await self._asend(_Call("DELETE", _conversation_path(conversation_id, "messages"), missing_ok=True))

    def context(self, conversation_id: str, **params: Any) -> dict[str, Any]:
        """The context to send the model before its next call, built by the service from ``params``."""
        return self._send(_Call("POST", _conversation_path(conversation_id, "context"), body=params))

    async def acontext(self, conversation_id: str, **params: Any) -> dict[str, Any]:
        return await self._asend(_Call("POST", _conversation_path(conversation_id, "context"), body=params))

    def chat(self, conversation_id: str, content: str, **options: Any) -> dict[str, Any]:
        """One turn of the service's agent loop: it stores ``content``, builds the context, asks the
        tenant's chat model, stores and returns both messages (``user_message``, ``assistant_message``)
        with the context used. ``options`` are the endpoint's: ``system_prompt``, ``model``,
        ``temperature``, ``max_tokens``, ``use_memory``, ``metadata``, ``user_id``, ``agent_id``.
        The message gets its ``message_id`` here, before the first attempt: a retried call stores it
        once and asks the model once. A failed model is a :class:`MemoryServiceError` with
        ``code="model_error"`` (502) or ``"model_timeout"`` (504); the message stays stored."""
        return self._send(self._chat_call(conversation_id, content, options))

    async def achat(self, conversation_id: str, content: str, **options: Any) -> dict[str, Any]:
        return await self._asend(self._chat_call(conversation_id, content, options))

    def chat_stream(self, conversation_id: str, content: str, **options: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        """The same turn as it streams: ``(event, data)`` pairs, ``("start", ...)``, a ``("token",
        {"text": ...})`` per piece of the answer, then ``("done", <the chat() answer>)`` or ``("error",
        {"error": ...})``. Not retried once the stream has begun; leaving the loop early closes the
        connection, which stops the model, and no answer is stored."""
        call = self._chat_call(conversation_id, content, {**options, "stream": True})
        with self._client.stream("POST", call.path, json=call.body, timeout=call.timeout) as response:
            if not response.is_success:
                response.read()
                raise MemoryServiceError.from_response(response)
            event = "message"
            for line in response.iter_lines():
                if line.startswith("event: "):
                    event = line[len("event: ") :]
                elif line.startswith("data: "):
                    yield event, json.loads(line[len("data: ") :])

    def status(self) -> dict[str, Any]:
        """Whether the service's database, cache and broker answer, with queue and cache figures."""
        return self._send(_Call("GET", f"{API_PREFIX}/status/"))

    async def astatus(self) -> dict[str, Any]:
        return await self._asend(_Call("GET", f"{API_PREFIX}/status/"))

    # --- checkpoints ----------------------------------------------------------------------------

    def put_checkpoint(
        self,
        conversation_id: str,
        *,
        state: Mapping[str, Any],
        checkpoint_id: str | None = None,
        namespace: str = "",
        parent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Store a checkpoint (the same id replaces it); the service keeps the newest
        ``MEMORY_MAX_CHECKPOINTS`` per conversation and namespace. Returns the stored checkpoint."""
        return self._send(self._put_checkpoint_call(conversation_id, state, checkpoint_id, namespace, parent_id, metadata))

    async def aput_checkpoint(
        self,
        conversation_id: str,
        *,
        state: Mapping[str, Any],
        checkpoint_id: str | None = None,
        namespace: str = "",
        parent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        call = self._put_checkpoint_call(conversation_id, state, checkpoint_id, namespace, parent_id, metadata)
        return await self._asend(call)

    def list_checkpoints(
        self, conversation_id: str, *, namespace: str | None = None, before: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Checkpoints newest first, of one namespace (every namespace when ``None``), older than
        ``before``; ``[]`` when the conversation is unknown."""
        return self._checkpoints_of(self._send(self._list_checkpoints_call(conversation_id, namespace, before, limit)))

    async def alist_checkpoints(
        self, conversation_id: str, *, namespace: str | None = None, before: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        return self._checkpoints_of(await self._asend(self._list_checkpoints_call(conversation_id, namespace, before, limit)))

    def latest_checkpoint(self, conversation_id: str, *, namespace: str = "") -> dict[str, Any] | None:
        """The newest checkpoint of the namespace, with its writes; ``None`` when there is none."""
        return self._found(self._send(self._checkpoint_call(conversation_id, "latest", namespace)))

    async def alatest_checkpoint(self, conversation_id: str, *, namespace: str = "") -> dict[str, Any] | None:
        return self._found(await self._asend(self._checkpoint_call(conversation_id, "latest", namespace)))

    def get_checkpoint(self, conversation_id: str, checkpoint_id: str, *, namespace: str = "") -> dict[str, Any] | None:
        """One checkpoint with its writes; ``None`` when it does not exist (or was retired)."""
        return self._found(self._send(self._checkpoint_call(conversation_id, checkpoint_id, namespace)))

    async def aget_checkpoint(self, conversation_id: str, checkpoint_id: str, *, namespace: str = "") -> dict[str, Any] | None:
        return self._found(await self._asend(self._checkpoint_call(conversation_id, checkpoint_id, namespace)))

    def put_writes(
        self,
        conversation_id: str,
        checkpoint_id: str,
        *,
        task_id: str,
        writes: Sequence[Mapping[str, Any]],
        namespace: str = "",
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes (``idx``, ``channel``, ``value``) on a checkpoint, in batches
        the service accepts: for an ``idx`` >= 0 the first write wins, a negative ``idx`` (errors,
        interrupts) is replaced."""
        for batch in _chunks(writes):
            self._send(self._put_writes_call(conversation_id, checkpoint_id, task_id, batch, namespace, task_path))

    async def aput_writes(
        self,
        conversation_id: str,
        checkpoint_id: str,
        *,
        task_id: str,
        writes: Sequence[Mapping[str, Any]],
        namespace: str = "",
        task_path: str = "",
    ) -> None:
        for batch in _chunks(writes):
            await self._asend(self._put_writes_call(conversation_id, checkpoint_id, task_id, batch, namespace, task_path))

    def delete_checkpoints(self, conversation_id: str, *, namespace: str | None = None) -> None:
        """Delete the checkpoints (and their writes) of a namespace, or of all when ``None``."""
        self._send(self._delete_checkpoints_call(conversation_id, namespace))

    async def adelete_checkpoints(self, conversation_id: str, *, namespace: str | None = None) -> None:
        await self._asend(self._delete_checkpoints_call(conversation_id, namespace))

    # --- the requests ---------------------------------------------------------------------------

    def _chat_call(self, conversation_id: str, content: str, options: Mapping[str, Any]) -> _Call:
        body = {"message_id": str(uuid.uuid4()), **options, "content": content}
        return _Call("POST", _conversation_path(conversation_id, "chat"), body=body, timeout=max(self.timeout, CHAT_TIMEOUT))

    @staticmethod
    def _append_call(conversation_id: str, batch: list[Mapping[str, Any]], user_id: str, agent_id: str) -> _Call:
        body = {"messages": batch, "user_id": user_id, "agent_id": agent_id}
        return _Call("POST", _conversation_path(conversation_id, "messages"), body=body)

    @staticmethod
    def _window_call(conversation_id: str, limit: int | None, format: str) -> _Call:
        params = _params(limit=limit, format=format)
        return _Call("GET", _conversation_path(conversation_id, "window"), params=params, missing_ok=True)

    @staticmethod
    def _messages_call(conversation_id: str, filters: Mapping[str, Any]) -> _Call:
        params = {name: ("true" if value is True else "false" if value is False else value) for name, value in filters.items()}
        return _Call("GET", _conversation_path(conversation_id, "messages"), params=_params(**params), missing_ok=True)

    @staticmethod
    def _put_checkpoint_call(
        conversation_id: str,
        state: Mapping[str, Any],
        checkpoint_id: str | None,
        namespace: str,
        parent_id: str | None,
        metadata: Mapping[str, Any] | None,
    ) -> _Call:
        body: dict[str, Any] = {"namespace": namespace, "parent_id": parent_id, "state": state, "metadata": metadata or {}}
        if checkpoint_id is not None:
            body["checkpoint_id"] = checkpoint_id
        return _Call("POST", _conversation_path(conversation_id, "checkpoints"), body=body)

    @staticmethod
    def _list_checkpoints_call(conversation_id: str, namespace: str | None, before: str | None, limit: int | None) -> _Call:
        params = _params(namespace=namespace, before=before, limit=limit)
        return _Call("GET", _conversation_path(conversation_id, "checkpoints"), params=params, missing_ok=True)

    @staticmethod
    def _checkpoint_call(conversation_id: str, checkpoint_id: str, namespace: str) -> _Call:
        path = _conversation_path(conversation_id, "checkpoints", checkpoint_id)
        return _Call("GET", path, params={"namespace": namespace}, missing_ok=True)

    @staticmethod
    def _put_writes_call(
        conversation_id: str,
        checkpoint_id: str,
        task_id: str,
        writes: Sequence[Mapping[str, Any]],
        namespace: str,
        task_path: str,
    ) -> _Call:
        body = {"namespace": namespace, "task_id": task_id, "task_path": task_path, "writes": list(writes)}
        return _Call("POST", _conversation_path(conversation_id, "checkpoints", checkpoint_id, "writes"), body=body)

    @staticmethod
    def _delete_checkpoints_call(conversation_id: str, namespace: str | None) -> _Call:
        path = _conversation_path(conversation_id, "checkpoints")
        return _Call("DELETE", path, params=_params(namespace=namespace), missing_ok=True)

    @staticmethod
    def _messages_of(answer: Any) -> list[dict[str, Any]]:
        return [] if answer is _MISSING else list(answer["messages"])

    @staticmethod
    def _checkpoints_of(answer: Any) -> list[dict[str, Any]]:
        return [] if answer is _MISSING else list(answer["checkpoints"])

    @staticmethod
    def _found(answer: Any) -> dict[str, Any] | None:
        return None if answer is _MISSING else answer

    # --- sending, with retries ------------------------------------------------------------------

    def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._client.request(
                    call.method, call.path, params=call.params, json=call.body, timeout=call.timeout or self.timeout
                )
            except TRANSIENT_ERRORS as error:
                delay = self._retry_delay(attempt, error=error)
            else:
                delay = self._retry_delay(attempt, response=response)
                if delay is None:
                    return self._answer(call, response)
            time.sleep(delay)
            attempt += 1

    async def _asend(self, call: _Call) -> Any:
        client = self._async()
        attempt = 0
        while True:
            try:
                response = await client.request(
                    call.method, call.path, params=call.params, json=call.body, timeout=call.timeout or self.timeout
                )
            except TRANSIENT_ERRORS as error:
                delay = self._retry_delay(attempt, error=error)
            else:
                delay = self._retry_delay(attempt, response=response)
                if delay is None:
                    return self._answer(call, response)
            await asyncio.sleep(delay)
            attempt += 1

    def _async(self) -> httpx.AsyncClient:
        """The async client of the running event loop (connections cannot cross loops)."""
        loop = asyncio.get_running_loop()
        if self._async_client is None or self._async_loop is not loop or self._async_client.is_closed:
            self._async_client = httpx.AsyncClient(base_url=self.base_url, headers=self._headers, timeout=self.timeout)
            self._async_loop = loop
        return self._async_client

    def _retry_delay(
        self, attempt: int, *, response: httpx.Response | None = None, error: Exception | None = None
    ) -> float | None:
        """Seconds to wait before the next attempt; ``None`` when the response is the answer.

        Raises when the attempt failed and no retry is left."""
        if response is not None and (response.status_code != 503 or _error_code(response) in PERMANENT_UNAVAILABLE):
            return None
        if attempt >= self.retries:
            if response is not None:
                raise MemoryServiceError.from_response(response)
            raise MemoryServiceError(
                None, "unreachable", f"{self.base_url} did not answer after {attempt + 1} attempts: {error!r}"
            ) from error
        backoff = min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt) * (0.5 + random.random() / 2)  # noqa: S311
        waited = _retry_after(response) if response is not None else None
        return backoff if waited is None else waited

    @staticmethod
    def _answer(call: _Call, response: httpx.Response) -> Any:
        if response.is_success:
            return response.json() if response.content else None
        error = MemoryServiceError.from_response(response)
        if call.missing_ok and isinstance(error, NotFound) and error.code == "not_found":
            return _MISSING
        raise error

    # --- store ----------------------------------------------------------------------------------

    def store_batch(self, operations: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Run LangGraph store operations (``{"op": "get" | "search" | "put" | "delete" |
        "list_namespaces", ...}``) in order; one result per operation. They are sent ``MAX_BATCH`` at
        a time, each request one transaction of the service. Safe to repeat: a put is an upsert and
        deleting a missing item is a no-op. ``memory_client.store.ServiceStore`` is the LangGraph
        ``BaseStore`` over this."""
        results: list[Any] = []
        for batch in _chunks(operations):
            results.extend(self._send(self._store_batch_call(batch))["results"])
        return results

    async def astore_batch(self, operations: Sequence[Mapping[str, Any]]) -> list[Any]:
        results: list[Any] = []
        for batch in _chunks(operations):
            results.extend((await self._asend(self._store_batch_call(batch)))["results"])
        return results

    @staticmethod
    def _store_batch_call(operations: list[Mapping[str, Any]]) -> _Call:
        return _Call("POST", f"{API_PREFIX}/store/batch/", body={"operations": operations})
