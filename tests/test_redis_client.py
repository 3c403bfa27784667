"""``core.redis_client.Scripts``: each thread's client registers the scripts once, however the
threads take turns (a cold reader and the install thread it hands its install to)."""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis

from core.redis_client import Scripts


def test_two_threads_taking_turns_register_each_script_once_per_client(monkeypatch: Any):
    registered: list[str] = []
    register = redis.Redis.register_script

    def counted(self: redis.Redis, source: str) -> Any:
        registered.append(source)
        return register(self, source)

    monkeypatch.setattr(redis.Redis, "register_script", counted)
    scripts = Scripts(one="return 1", two="return 2")
    with ThreadPoolExecutor(max_workers=1) as install_thread:
        for _ in range(5):
            assert scripts.two(keys=[], args=[]) == 2
            assert install_thread.submit(lambda: scripts.one(keys=[], args=[])).result() == 1

    assert sorted(registered) == ["return 1", "return 1", "return 2", "return 2"]  # two clients, two scripts each
