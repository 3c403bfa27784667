"""What every app builds on, below them all: it imports none of them.

* ``core.exceptions``: the errors services raise, each answered by the API as JSON with a stable ``code``.
* ``core.storable``: the one door into storage; a value PostgreSQL, Redis and JSON can all hold, or refused.
* ``core.forms``: the admin forms that pass that door before anything is saved.
* ``core.redis_client``: the strict Redis client, its error, and the timed, counted call every Redis
  operation goes through (the conversation cache's keys and scripts are ``conversations.cache``).
* ``core.metrics``: the figures every app counts in (Redis operations, degraded paths) and the registry
  ``/metrics`` reads.
"""
