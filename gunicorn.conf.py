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

Connections are kept open between requests for ``GUNICORN_KEEPALIVE`` seconds (75 by default, where
gunicorn's own default is 2). A load balancer or proxy in front reuses its connections to the web
processes until its own idle timeout (60 s for AWS's ALB and for nginx's upstream
``keepalive_timeout``): if gunicorn closed one sooner, a request the balancer sends on it as gunicorn
closes it is lost (a 502 for the client). The keep-alive must therefore be longer than the idle
timeout of whatever sits in front (above 600 s behind Google Cloud's load balancer). On gthread
workers an idle kept-alive connection holds a socket in the worker's poller, not a thread; a worker
keeps at most ``worker_connections`` (1000) connections, and once ``worker_connections - threads``
are kept alive it closes each further one after its response.

``--threads``, ``--worker-class`` and ``--keep-alive`` on the command line override these.
"""

import os
from typing import Any

limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
worker_class = "memoryproject.gunicorn_worker.ApiThreadWorker"  # gthread, with JSON refusals
threads = 8
# Longer than the idle timeout of the load balancer in front (see above).
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "75"))


def post_worker_init(worker: Any) -> None:
    from gunicorn.workers.gthread import ThreadWorker

    from chat import runs

    runs.process_threads_set(worker.cfg.threads if isinstance(worker, ThreadWorker) else 1)
