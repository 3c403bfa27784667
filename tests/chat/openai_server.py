"""A local OpenAI-compatible chat server for the tests: ``POST /v1/chat/completions``, whole or
streamed (server-sent events, usage in a last chunk when asked), as the service's clients' own
model servers (vLLM, llama.cpp, a gateway) answer. It records each request's body and its
``Authorization`` and ``Host`` headers. The model name is the behaviour:

* ``stub-echo`` (or any other): ``stub heard <n> messages; the last: <content>``;
* ``stub-fail``: HTTP 500 with an OpenAI error body;
* ``stub-slow``: answers after ``SLOW_SECONDS``;
* ``stub-hang``: a model server that hangs: answers only once ``release()`` is called (or after
  ``HANG_SECONDS``); ``hanging`` counts the requests it holds.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLOW_SECONDS = 4.0
HANG_SECONDS = 60.0
USAGE = {"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28}


class OpenAICompatibleServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.hanging = 0
        self._released = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                server.requests.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "host": self.headers.get("Host"),
                        "body": body,
                    }
                )
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                model = body.get("model", "")
                if model == "stub-fail":
                    return self._json(500, {"error": {"message": "the stub model server failed", "type": "server_error"}})
                if model == "stub-slow":
                    time.sleep(SLOW_SECONDS)
                if model == "stub-hang":
                    server._hang()
                messages = body.get("messages") or []
                content = f"stub heard {len(messages)} messages; the last: {messages[-1]['content'] if messages else ''}"
                if body.get("stream"):
                    return self._stream(model, content, usage=bool((body.get("stream_options") or {}).get("include_usage")))
                self._json(
                    200,
                    {
                        "id": "chatcmpl-stub",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                        "usage": USAGE,
                    },
                )

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, model: str, content: str, *, usage: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
                words = content.split(" ")
                for index, word in enumerate(words):
                    piece = word if index == 0 else f" {word}"
                    delta = {"role": "assistant", "content": piece} if index == 0 else {"content": piece}
                    self._send(base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
                self._send(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                if usage:
                    self._send(base | {"choices": [], "usage": USAGE})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _send(self, chunk: dict[str, Any]) -> None:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="openai-stub", daemon=True)

    def _hang(self) -> None:
        with self._lock:
            self.hanging += 1
        try:
            self._released.wait(HANG_SECONDS)
        finally:
            with self._lock:
                self.hanging -= 1

    def release(self) -> None:
        """The hanging requests answer now, and later ones at once."""
        self._released.set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "OpenAICompatibleServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
