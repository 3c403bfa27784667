"""``python -m benchmarks.partitions``: the partitioning of messages measured with 10 million of them.

Each layout of ``conversation_messages`` (``store.LAYOUTS``: unpartitioned, the service's
``HASH (tenant_id)`` into 16 partitions, and 64) gets a benchmark database of its own, loaded in SQL
(``store``), then the service's cold window read is timed beside PostgreSQL's own indexed read
(``measure``). Each layout runs in a process of its own (Django is set up with its database).
"""
