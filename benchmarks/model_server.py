"""A scripted OpenAI-compatible model server: the stand-in for a paid LLM API in tests and benchmarks.

Contract
--------
``ModelServer(responder)`` is a real HTTP server on 127.0.0.1 (port 0: a free one), serving in a
background thread, that speaks enough of the OpenAI API for ``langchain_openai.ChatOpenAI`` (and
the ``openai`` client under it) to use it as ``base_url``:

* ``POST /v1/chat/completions``: the ``responder`` is called with the request's ``messages`` (dicts
  with ``role`` and ``content``) and ``model`` and returns the answer's text, answered as a
  ``chat.completion`` with ``usage`` (cl100k_base tokens of the messages, 3 more per message and 3
  for the reply as OpenAI counts them, and of the answer); with ``stream: true``, as server-sent
  ``chat.completion.chunk`` events ending in ``data: [DONE]``, the usage in a last chunk when
  ``stream_options.include_usage`` asks for it. A responder that raises ``ModelError(status,
  message)`` is answered that status with an OpenAI error body (the client raises its own exception
  for it: ``InternalServerError``, ``RateLimitError``...); one that sleeps makes the client time out.
* ``POST /v1/embeddings``: the vectors of ``input`` (a text or a list) by the service's own local model
  (all-MiniLM-L6-v2, 384 dimensions, the vectors ``search.embeddings`` computes in process), whatever
  ``model`` is asked; a ``dimensions`` other than 384 is answered 400, as a model that cannot shorten
  its vectors answers. The request's model's script applies here too: ``status`` (with
  ``"retry_after": seconds`` for a ``Retry-After`` header), ``sleep``, ``answer`` (sent as the body,
  to answer garbage) and ``"dimensions": n`` (vectors of the wrong length). Each request is recorded
  with its ``authorization`` header, so a test sees which texts and which key reached the server.
* ``POST /rerank`` (Text Embeddings Inference's format: ``query``, ``texts``, answered ``[{"index",
  "score"}, ...]`` best first) and ``POST /v1/rerank`` (Cohere's: ``model``, ``query``, ``documents``,
  ``top_n``, answered ``{"results": [{"index", "relevance_score"}, ...]}``): scored by word overlap
  (``overlap_scores``: the share of the query's words a text holds; equal scores in the order sent),
  unless the script of the model (``rerank`` for TEI, which names none; the body's ``model`` for
  Cohere's) says otherwise: ``status``, ``sleep``, and ``answer`` sent as the body, which is how a test
  fixes the order (``[{"index": 2, "score": 0.9}, ...]``) or answers garbage. Each request is recorded
  with its ``path`` and ``authorization`` header.
* ``GET /v1/models``: the models the script names, and ``scripted``.
* ``.url`` is the base URL (ending in ``/v1``), ``.requests`` the bodies received (a copy, in
  order), ``.served()`` the calls, errors and tokens per model; ``stop()`` (or leaving the ``with``
  block) closes it and wakes a responder's sleep.

``ScriptedResponder`` (the default responder) chooses each answer by the request's model name and a
script set at run time, so that a Celery worker in another process can be steered: each model has
a queue of steps, taken one per request, first in first out, and once its queue is empty the
``fallback`` responder answers (``DEFAULT_ANSWER``, no operations, without one). A step is a JSON
object:

* ``{"answer": "text"}``: answer that text (a JSON value instead of a string is answered as its
  JSON): a good answer, a malformed one, or a hostile one (operations naming another user's memory
  id, 10,000 operations, NUL characters: whatever the test writes);
* ``{"status": 500, "message": "..."}``: fail with that HTTP status (400 to 599);
* ``{"sleep": 30}``: wait that many seconds, then answer as the fallback does (with ``answer`` or
  ``status`` beside it: then answer that), so a client with a shorter timeout gives up;
* ``"times": K`` on any step: the same for the next K requests of the model (default 1).

The script is set in the process (``responder.script(model, steps)``) or from any process through
the same server: ``POST /script`` with ``{"model": "...", "steps": [...]}`` replaces that model's
queue (``script_set(url, model=, steps=)`` sends it); ``GET /script`` answers the steps left per
model, ``GET /requests`` the recorded bodies (``?model=`` narrows them). A step that does not read
is refused with 400 naming what is wrong, and the model's queue is left as it was.

The command serves until Ctrl-C and prints its URL; ``--locomo PATH`` makes the fallback the LoCoMo
responder (``benchmarks.extraction.locomo_responder``), the stand-in for a good extracting model:

    .venv/bin/python -m benchmarks.model_server [--port 8765] [--locomo PATH/TO/locomo10-dev.json]

No Django for chat: ``conversations.tokens`` counts with tiktoken alone, so the server runs anywhere the
repository's packages are installed. Embeddings load the service's model, with the service's settings
(``memoryproject.settings.local`` unless ``DJANGO_SETTINGS_MODULE`` says otherwise) on the first request.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib import request as urllib_request
from urllib.parse import parse_qs, urlsplit

from conversations import tokens

# What the extraction pipeline is answered when nothing else is asked for: nothing to remember.
DEFAULT_ANSWER = '{"operations": []}'
SCRIPTED_MODEL = "scripted"
# OpenAI's chat format: each message costs its content and about 3 tokens more, the reply 3.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_REPLY = 3
MAX_BODY_BYTES = 64 * 1024 * 1024

# The answer's text for the request's messages and model; raises ModelError to answer an HTTP error.
Responder = Callable[[list[dict[str, Any]], str], str]


class ModelError(Exception):
    """Answered as an HTTP error of ``status`` with an OpenAI error body holding ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# --- The script ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One scripted behaviour, for the next ``times`` requests of a model."""

    answer: str | None = None
    status: int | None = None
    message: str = "The scripted model server failed, as its script says."
    sleep: float = 0.0
    times: int = 1
    # Embeddings: a failing step's Retry-After header (seconds), and vectors of the wrong length.
    retry_after: float | None = None
    dimensions: int | None = None

    @classmethod
    def read(cls, value: Any) -> Step:
        """A step from its JSON form, or ValueError naming what is wrong."""
        if not isinstance(value, Mapping):
            raise ValueError(f"A step is a JSON object, not {value!r}.")
        unknown = set(value) - {"answer", "status", "message", "sleep", "times", "retry_after", "dimensions"}
        if unknown:
            raise ValueError(
                f"Unknown keys {sorted(unknown)} in step {dict(value)!r}: a step has answer, status, message, sleep, times."
            )
        if "answer" in value and "status" in value:
            raise ValueError(f"A step answers or fails, not both: {dict(value)!r}.")
        answer = value.get("answer")
        if answer is not None and not isinstance(answer, str):
            answer = json.dumps(answer)
        status = value.get("status")
        if status is not None and (isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599):
            raise ValueError(f"A step's status is an HTTP error status (400 to 599), not {status!r}.")
        sleep = value.get("sleep", 0.0)
        if isinstance(sleep, bool) or not isinstance(sleep, int | float) or sleep < 0:
            raise ValueError(f"A step's sleep is a number of seconds, not {sleep!r}.")
        times = value.get("times", 1)
        if isinstance(times, bool) or not isinstance(times, int) or times < 1:
            raise ValueError(f"A step's times is a positive count, not {times!r}.")
        message = value.get("message", cls.message)
        if not isinstance(message, str):
            raise ValueError(f"A step's message is text, not {message!r}.")
        retry_after = value.get("retry_after")
        if retry_after is not None and (
            isinstance(retry_after, bool) or not isinstance(retry_after, int | float) or retry_after < 0
        ):
            raise ValueError(f"A step's retry_after is a number of seconds, not {retry_after!r}.")
        dimensions = value.get("dimensions")
        if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1):
            raise ValueError(f"A step's dimensions is a vector length (a positive whole number), not {dimensions!r}.")
        return cls(
            answer=answer,
            status=status,
            message=message,
            sleep=float(sleep),
            times=times,
            retry_after=None if retry_after is None else float(retry_after),
            dimensions=dimensions,
        )

    def json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"times": self.times}
        if self.sleep:
            shown["sleep"] = self.sleep
        if self.status is not None:
            shown |= {"status": self.status, "message": self.message}
        if self.answer is not None:
            shown["answer"] = self.answer
        if self.retry_after is not None:
            shown["retry_after"] = self.retry_after
        if self.dimensions is not None:
            shown["dimensions"] = self.dimensions
        return shown


class ScriptedResponder:
    """Answers by the model's script, one step per request, then by ``fallback`` (see the module)."""

    def __init__(self, fallback: Responder | None = None) -> None:
        self.fallback = fallback
        self._queues: dict[str, deque[Step]] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def script(self, model: str, steps: Sequence[Any]) -> None:
        """Replace ``model``'s queue with ``steps`` (``Step``s or their JSON form); ValueError, and
        nothing changed, when one does not read."""
        read = [step if isinstance(step, Step) else Step.read(step) for step in steps]
        with self._lock:
            self._queues[model] = deque(read)

    def scripts(self) -> dict[str, list[dict[str, Any]]]:
        """The steps left, per model."""
        with self._lock:
            return {model: [step.json() for step in queue] for model, queue in self._queues.items() if queue}

    def close(self) -> None:
        """Wake every sleeping step now, and answer later ones without sleeping (the server stops)."""
        self._closed.set()

    def _next(self, model: str) -> Step | None:
        with self._lock:
            queue = self._queues.get(model)
            if not queue:
                return None
            step = queue[0]
            if step.times > 1:
                queue[0] = replace(step, times=step.times - 1)
            else:
                queue.popleft()
            return step

    def __call__(self, messages: list[dict[str, Any]], model: str) -> str:
        step = self._next(model)
        if step is not None:
            if step.sleep:
                self._closed.wait(step.sleep)
            if step.status is not None:
                raise ModelError(step.status, step.message)
            if step.answer is not None:
                return step.answer
        return self.fallback(messages, model) if self.fallback is not None else DEFAULT_ANSWER


def script_set(url: str, *, model: str, steps: Sequence[Mapping[str, Any]], timeout: float = 10.0) -> None:
    """Set ``model``'s script on the server at ``url`` (its base URL, with or without ``/v1``) from
    any process; ValueError with the server's reason when it refuses the script."""
    control = url.rstrip("/").removesuffix("/v1") + "/script"
    body = json.dumps({"model": model, "steps": list(steps)}).encode()
    sent = urllib_request.Request(control, data=body, method="POST", headers={"Content-Type": "application/json"})  # noqa: S310 - a URL the caller gives
    try:
        with urllib_request.urlopen(sent, timeout=timeout):  # noqa: S310
            return
    except urllib_request.HTTPError as error:
        raise ValueError(f"{control} refused the script: {error.read().decode(errors='replace')}") from None


# --- Embeddings ----------------------------------------------------------------------------------

LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
LOCAL_EMBEDDING_DIMENSIONS = 384
_encoder_lock = threading.Lock()


def local_embeddings(texts: list[str]) -> list[list[float]]:
    """The service's own local model's vectors of ``texts`` (``search.embeddings``): a server of the same
    model as the embedded default, so vectors fetched over HTTP are the ones computed in process."""
    with _encoder_lock:
        from django.apps import apps

        if not apps.ready:  # the command: the model reads its settings (threads) from the service's
            import os

            import django

            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.local")
            django.setup()
        from search import embeddings

        return embeddings.embed_documents(embeddings.LOCAL_MODEL, texts).tolist()


# --- Reranking -----------------------------------------------------------------------------------

# The name a rerank request is scripted and counted under when it names no model (TEI's format never does).
RERANK_MODEL = "rerank"
_WORD = re.compile(r"\w+")


def overlap_scores(query: str, texts: Sequence[str]) -> list[float]:
    """A deterministic stand-in for a cross-encoder: the share of the query's distinct words (case aside)
    that each text holds, between 0 and 1."""
    asked = {word.lower() for word in _WORD.findall(query)}
    if not asked:
        return [0.0 for _ in texts]
    return [round(len(asked & {word.lower() for word in _WORD.findall(text)}) / len(asked), 6) for text in texts]


# --- Counting -------------------------------------------------------------------------------------


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def usage_of(messages: Sequence[Mapping[str, Any]], answer: str) -> dict[str, int]:
    prompt = sum(tokens.count(_text(message.get("content"))) + TOKENS_PER_MESSAGE for message in messages) + TOKENS_PER_REPLY
    completion = tokens.count(answer)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass
class Served:
    """What one model was asked and answered."""

    calls: int = 0
    errors: int = 0  # answered with an HTTP error (a ModelError, or a request that did not read)
    prompt_tokens: int = 0
    completion_tokens: int = 0


# --- The server -----------------------------------------------------------------------------------


class ModelServer:
    """The server (see the module): ``with ModelServer(responder) as server: ... server.url``."""

    def __init__(self, responder: Responder | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.responder: Responder = responder if responder is not None else ScriptedResponder()
        self._requests: list[dict[str, Any]] = []
        self._served: dict[str, Served] = {}
        self._lock = threading.Lock()
        self._counter = 0
        self._http = ThreadingHTTPServer((host, port), _handler(self))
        self._http.daemon_threads = True  # a sleeping answer does not hold stop() up
        self._thread = threading.Thread(target=self._http.serve_forever, name="model-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    def served(self) -> dict[str, Served]:
        with self._lock:
            return {model: Served(**asdict(counts)) for model, counts in self._served.items()}

    def stop(self) -> None:
        close = getattr(self.responder, "close", None)
        if callable(close):
            close()
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # Called by the handler's threads.

    def _record(self, body: dict[str, Any]) -> str:
        with self._lock:
            self._requests.append(body)
            self._counter += 1
            return f"chatcmpl-{self._counter}"

    def _count(self, model: str, usage: dict[str, int] | None) -> None:
        with self._lock:
            served = self._served.setdefault(model, Served())
            served.calls += 1
            if usage is None:
                served.errors += 1
            else:
                served.prompt_tokens += usage["prompt_tokens"]
                served.completion_tokens += usage["completion_tokens"]


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "ScriptedModelServer/1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def do_GET(self) -> None:
            path, query = self._route()
            if path == "/v1/models":
                scripted = server.responder.scripts() if isinstance(server.responder, ScriptedResponder) else {}
                names = sorted({SCRIPTED_MODEL, *scripted})
                listed = [{"id": name, "object": "model", "created": 0, "owned_by": "benchmarks"} for name in names]
                return self._json(200, {"object": "list", "data": listed})
            if path == "/script" and isinstance(server.responder, ScriptedResponder):
                return self._json(200, {"models": server.responder.scripts()})
            if path == "/requests":
                model = (query.get("model") or [None])[0]
                recorded = [body for body in server.requests if model is None or body.get("model") == model]
                return self._json(200, {"requests": recorded})
            self._error(404, f"No route GET {path}.", "invalid_request_error")

        def do_POST(self) -> None:
            path, _ = self._route()
            try:
                body = self._body()
            except ValueError as error:
                return self._error(400, str(error), "invalid_request_error")
            if path == "/v1/chat/completions":
                return self._complete(body)
            if path == "/v1/embeddings":
                return self._embed(body)
            if path in ("/rerank", "/v1/rerank"):
                return self._rerank(body, path=path)
            if path == "/script" and isinstance(server.responder, ScriptedResponder):
                model, steps = body.get("model"), body.get("steps")
                if not isinstance(model, str) or not model or not isinstance(steps, list):
                    return self._error(400, 'Send {"model": "<name>", "steps": [...]}.', "invalid_request_error")
                try:
                    server.responder.script(model, steps)
                except ValueError as error:
                    return self._error(400, str(error), "invalid_request_error")
                return self._json(200, {"model": model, "steps": server.responder.scripts().get(model, [])})
            self._error(404, f"No route POST {path}.", "invalid_request_error")

        def _route(self) -> tuple[str, dict[str, list[str]]]:
            parts = urlsplit(self.path)
            return parts.path.rstrip("/") or "/", parse_qs(parts.query)

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                raise ValueError(f"The request body is {length} bytes; at most {MAX_BODY_BYTES}.")
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                raise ValueError("The request body is not JSON.") from None
            if not isinstance(body, dict):
                raise ValueError("The request body is not a JSON object.")
            return body

        def _complete(self, body: dict[str, Any]) -> None:
            completion_id = server._record(body)
            model = str(body.get("model") or SCRIPTED_MODEL)
            messages = body.get("messages")
            if not isinstance(messages, list) or not all(isinstance(message, dict) for message in messages):
                server._count(model, None)
                return self._error(400, "messages must be a list of objects with role and content.", "invalid_request_error")
            try:
                answer = server.responder(messages, model)
            except ModelError as error:
                server._count(model, None)
                return self._error(
                    error.status, error.message, "server_error" if error.status >= 500 else "invalid_request_error"
                )
            usage = usage_of(messages, answer)
            server._count(model, usage)
            head = {"id": completion_id, "created": int(time.time()), "model": model, "system_fingerprint": None}
            if body.get("stream"):
                return self._stream(head, answer, usage if (body.get("stream_options") or {}).get("include_usage") else None)
            choice = {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop", "logprobs": None}
            self._json(200, head | {"object": "chat.completion", "choices": [choice], "usage": usage})

        def _embed(self, body: dict[str, Any]) -> None:
            server._record(body | {"authorization": self.headers.get("Authorization", "")})
            model = str(body.get("model") or LOCAL_EMBEDDING_MODEL)
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
                server._count(model, None)
                return self._error(400, "input must be a text or a non-empty list of texts.", "invalid_request_error")
            step = server.responder._next(model) if isinstance(server.responder, ScriptedResponder) else None
            if step is not None and step.sleep:
                server.responder._closed.wait(step.sleep)
            if step is not None and step.status is not None:
                server._count(model, None)
                headers = {"Retry-After": f"{step.retry_after:g}"} if step.retry_after is not None else {}
                kind = "server_error" if step.status >= 500 else "invalid_request_error"
                return self._error(step.status, step.message, kind, headers=headers)
            if step is not None and step.answer is not None:  # whatever the script says, as the body
                server._count(model, {"prompt_tokens": 0, "completion_tokens": 0})
                return self._send(200, step.answer.encode(), "application/json")
            asked = body.get("dimensions")
            if asked is not None and asked != LOCAL_EMBEDDING_DIMENSIONS and (step is None or step.dimensions is None):
                server._count(model, None)
                message = (
                    f"{model} answers vectors of {LOCAL_EMBEDDING_DIMENSIONS} dimensions; it cannot shorten them to {asked}."
                )
                return self._error(400, message, "invalid_request_error")
            vectors = local_embeddings(texts)
            if step is not None and step.dimensions is not None:  # the wrong length, as the script says
                vectors = [(vector * (step.dimensions // len(vector) + 1))[: step.dimensions] for vector in vectors]
            used = sum(tokens.count(text) for text in texts)
            server._count(model, {"prompt_tokens": used, "completion_tokens": 0})
            data = [{"object": "embedding", "index": index, "embedding": vector} for index, vector in enumerate(vectors)]
            usage = {"prompt_tokens": used, "total_tokens": used}
            self._json(200, {"object": "list", "data": data, "model": model, "usage": usage})

        def _rerank(self, body: dict[str, Any], *, path: str) -> None:
            """TEI's ``/rerank`` or the Cohere-style ``/v1/rerank``: scores by the script, else by word overlap."""
            server._record(body | {"path": path, "authorization": self.headers.get("Authorization", "")})
            tei = path == "/rerank"
            model = RERANK_MODEL if tei else str(body.get("model") or RERANK_MODEL)
            query, texts = body.get("query"), body.get("texts" if tei else "documents")
            if not isinstance(query, str) or not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
                server._count(model, None)
                field = "texts" if tei else "documents"
                return self._error(400, f"Send a query and {field}, a list of texts.", "invalid_request_error")
            step = server.responder._next(model) if isinstance(server.responder, ScriptedResponder) else None
            if step is not None and step.sleep:
                server.responder._closed.wait(step.sleep)
            if step is not None and step.status is not None:
                server._count(model, None)
                return self._error(step.status, step.message, "server_error" if step.status >= 500 else "invalid_request_error")
            server._count(model, {"prompt_tokens": 0, "completion_tokens": 0})
            if step is not None and step.answer is not None:  # a fixed order, or garbage: the script's body
                return self._send(200, step.answer.encode(), "application/json")
            scores = overlap_scores(query, texts)
            order = sorted(range(len(texts)), key=lambda index: (-scores[index], index))
            if tei:
                return self._send(200, json.dumps([{"index": i, "score": scores[i]} for i in order]).encode(), "application/json")
            top_n = body.get("top_n")
            kept = order[:top_n] if isinstance(top_n, int) and not isinstance(top_n, bool) and top_n > 0 else order
            results = [{"index": index, "relevance_score": scores[index]} for index in kept]
            self._json(200, {"id": f"rerank-{len(server.requests)}", "results": results})

        def _stream(self, head: dict[str, Any], answer: str, usage: dict[str, int] | None) -> None:
            chunk = head | {"object": "chat.completion.chunk"}
            events = [
                chunk | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": answer}, "finish_reason": None}]},
                chunk | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
            if usage is not None:
                events.append(chunk | {"choices": [], "usage": usage})
            payload = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
            self._send(200, payload.encode(), "text/event-stream")

        def _error(self, status: int, message: str, kind: str, *, headers: Mapping[str, str] | None = None) -> None:
            error = {"error": {"message": message, "type": kind, "param": None, "code": None}}
            self._send(status, json.dumps(error).encode(), "application/json", headers=headers)

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            self._send(status, json.dumps(payload).encode(), "application/json")

        def _send(self, status: int, data: bytes, content_type: str, *, headers: Mapping[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except ConnectionError:  # the client gave up (its timeout) before the answer
                pass

    return Handler


# --- The command ---------------------------------------------------------------------------------


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.model_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="the port (0: a free one; default 8765)")
    parser.add_argument(
        "--locomo", type=Path, default=None, help="a LoCoMo file: answer extraction prompts with its observations"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    options = arguments(argv)
    fallback: Responder | None = None
    if options.locomo is not None:
        from benchmarks.extraction.locomo_responder import LocomoResponder
        from benchmarks.retrieval.locomo import LocomoMissing

        try:
            fallback = LocomoResponder.from_path(options.locomo)
        except LocomoMissing as error:
            raise SystemExit(str(error)) from None
    server = ModelServer(ScriptedResponder(fallback), host=options.host, port=options.port)
    answers = f"the observations of {options.locomo}" if fallback is not None else DEFAULT_ANSWER
    print(f"Serving {server.url} (unscripted models answer {answers}; POST /script to steer). Ctrl-C stops it.", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
