"""The nemesis's schedule: each fault in the order given, round and round, a failed fault healed, and
the end of its first round told, which the workload waits for when a round outlasts ``--duration``."""

import random
import threading
import time
from types import SimpleNamespace

from torture import __main__ as harness
from torture.workload import History


def test_every_fault_runs_once_in_order_and_the_round_is_told(monkeypatch):
    ran, healed = [], []

    def fault(name, *, fails=False):
        def run(cluster, rng):
            ran.append(name)
            if fails:
                raise RuntimeError(f"{name} broke")
            return f"{name} done"

        return run

    monkeypatch.setattr(harness, "faults_of", lambda topology: {"a": fault("a"), "b": fault("b", fails=True), "c": fault("c")})
    cluster = SimpleNamespace(topology="single", heal=lambda: healed.append(True))
    stop, round_done, log = threading.Event(), threading.Event(), []
    chaos = threading.Thread(
        target=harness.nemesis,
        args=(cluster, ["a", "b", "c"], 0.01, stop, random.Random(1), History(), log, round_done),
        daemon=True,
    )
    chaos.start()
    assert round_done.wait(10)
    assert ran[:3] == ["a", "b", "c"]
    stop.set()
    chaos.join(5)
    assert [entry.split(" ")[1].rstrip(":") for entry in log[:3]] == ["a", "b", "c"]
    assert "failed: RuntimeError('b broke')" in log[1]
    assert healed  # the failed fault was healed before the next one


def test_the_round_is_not_told_before_the_last_fault_has_ended(monkeypatch):
    release = threading.Event()

    def slow(cluster, rng):
        release.wait(10)
        return "slow done"

    monkeypatch.setattr(harness, "faults_of", lambda topology: {"quick": lambda cluster, rng: "ok", "slow": slow})
    stop, round_done = threading.Event(), threading.Event()
    chaos = threading.Thread(
        target=harness.nemesis,
        args=(SimpleNamespace(topology="single", heal=lambda: None), ["quick", "slow"], 0.01, stop, random.Random(1))
        + (History(), [], round_done),
        daemon=True,
    )
    chaos.start()
    time.sleep(0.3)
    assert not round_done.is_set()
    release.set()
    assert round_done.wait(10)
    stop.set()
    chaos.join(5)
