"""gunicorn's settings that the API's own bounds rely on (read from the working directory).

The request line may be as long as gunicorn allows (8190 bytes), above the API's MEMORY_MAX_URL_LENGTH:
a URI between the two is refused by the API with its JSON error (414 ``uri_too_long``, naming the
setting). What gunicorn refuses before Django sees it (a request line past 8,190 bytes, more than 100
headers or one past 8,190 bytes, bytes that are not HTTP) is answered by the worker class in the same
JSON error document (``memoryproject.gunicorn_worker``): 414, 431 or 400, never an HTML page.

Workers are gthread workers: a chat waits on its model for up to MEMORY_CHAT_TIMEOUT seconds, and
with one thread per worker a few slow models would hold every worker while other tenants' reads
queue. Each worker tells the chat endpoint how many threads it has, so that chats hold at most
MEMORY_CHAT_THREAD_SHARE of them and the rest stay free for everything else (``chat.runs``).
``--threads`` and ``--worker-class`` on the command line override these.
"""

from typing import Any

limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
worker_class = "memoryproject.gunicorn_worker.ApiThreadWorker"  # gthread, with JSON refusals
threads = 8


def post_worker_init(worker: Any) -> None:
    from gunicorn.workers.gthread import ThreadWorker

    from chat import runs

    runs.process_threads_set(worker.cfg.threads if isinstance(worker, ThreadWorker) else 1)
