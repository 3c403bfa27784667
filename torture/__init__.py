"""The list-append torture test of the write path's promises (``python -m torture``).

``processes`` starts and breaks real servers (gunicorn, Celery workers, a private Redis, PostgreSQL
and RabbitMQ); ``cluster`` is the system under test and its faults; ``workload`` the clients and
their history; ``checker`` compares that history with PostgreSQL and the cache.
"""
