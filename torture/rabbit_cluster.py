"""A three-node RabbitMQ cluster of our own on loopback, with quorum queues, for the torture
harness's cluster topology and the cluster tests.

Each node is a ``PrivateRabbit`` (the machine's ``rabbitmq-server``) with its own node name, AMQP
and distribution ports and data directory; all three share one Erlang cookie (written in each
node's HOME) and the second and third join the first (``rabbitmqctl join_cluster``). The service
reaches them through one failover URL listing the three (kombu tries them in turn), with
``MEMORY_QUEUE_TYPE=quorum``: the persist queue has a member on every node.

``kill_node`` is the fault: SIGKILL the persist queue's leader, or the node the workers consume
from, wait while the survivors elect a new leader and the clients move, then start the node again
and wait until it is back in the cluster and a member of every quorum queue again. The methods the
harness calls on a single ``PrivateRabbit`` (``queue_counts``, ``depth``, ``messages``, ``held``,
``refuse_publishes``, ``accept_publishes``, ``ctl``, ``pause``, ``resume``, ``stop_app``,
``start_app``) act on the cluster through a live node, or on every node where the fault is the
whole broker's (pause, stop and start).
"""

from __future__ import annotations

import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from torture.processes import PrivateRabbit, wait_until

NODES = 3
FAILOVER_SECONDS = 3.0  # seconds a killed node stays down: the survivors elect a leader, clients move
REJOIN_TIMEOUT = 120.0  # seconds a restarted node may take to be back in every quorum queue


class ClusterNode(PrivateRabbit):
    """One node of the cluster: a ``PrivateRabbit`` with a name of its own and the cluster's cookie."""

    def __init__(self, *, index: int, cookie: str) -> None:
        super().__init__()
        self.index = index
        self.node = f"memtest{os.getpid()}n{index}@localhost"
        cookie_file = self.directory / ".erlang.cookie"  # HOME is the node's directory (start, ctl)
        cookie_file.write_text(cookie)
        cookie_file.chmod(0o400)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the node and every process of its group (beam, epmd's children, inet_gethost)."""
        if self.running:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None


class PrivateRabbitCluster:
    """Three RabbitMQ nodes clustered on loopback; see the module docstring."""

    def __init__(self, *, queues: tuple[str, ...] = ()) -> None:
        cookie = secrets.token_hex(16).upper()
        self.nodes = [ClusterNode(index=index, cookie=cookie) for index in range(NODES)]
        self.queues = queues  # the quorum queues whose members kill_node waits for (the persist queue first)

    # --- Lifecycle -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the three nodes and join the second and third to the first. Safe to call again:
        nodes already running are left alone, a stopped one is started (it rejoins by itself)."""
        fresh = not (self.nodes[0].directory / "mnesia").exists()
        self._each(lambda node: node.start(), [node for node in self.nodes if not node.running])
        if fresh:
            seed = self.nodes[0].node
            for node in self.nodes[1:]:
                node.ctl("stop_app")
                node.ctl("join_cluster", seed)
                node.ctl("start_app")
        wait_until(self._all_clustered, timeout=REJOIN_TIMEOUT, message="the three RabbitMQ nodes to be clustered")

    def heal(self) -> None:
        """Every node running, resumed, its application started, publishes accepted (twice is safe)."""
        for node in self.nodes:
            if node.running:
                node.resume()
        self.start()
        self._each(lambda node: node.start_app(), self.nodes)
        for queue in self.queues[:1]:
            self.accept_publishes(queue)

    def close(self) -> None:
        for node in self.nodes:
            node.resume()
            node.kill()
            shutil.rmtree(node.directory, ignore_errors=True)

    def service_env(self) -> dict[str, str]:
        """What the service's processes need: every node in one failover URL, and quorum queues."""
        return {"CELERY_BROKER_URL": self.url, "MEMORY_QUEUE_TYPE": "quorum"}

    @property
    def url(self) -> str:
        return ";".join(node.url for node in self.nodes)

    @staticmethod
    def available() -> bool:
        return PrivateRabbit.available()

    # --- The fault ------------------------------------------------------------------------------------

    def kill_node(self, rng: random.Random, *, target: str | None = None) -> str:
        """SIGKILL one node (``target``: "leader" of the persist queue, or "consumers", the node its
        consumers are connected to; by default either, at random), leave it down ``FAILOVER_SECONDS``,
        start it again and wait until it is back in the cluster and in every quorum queue."""
        self.start()  # a node left down by a fault that failed half-way: never take two of three
        target = target or rng.choice(("leader", "consumers"))
        victim = self.leader_node() if target == "leader" else self.consumers_node()
        if victim is None:
            victim = rng.choice([node for node in self.nodes if node.running])
            target = "any"
        started = time.monotonic()
        victim.kill()
        time.sleep(FAILOVER_SECONDS)
        new_leader = self.leader_node()
        victim.start()
        wait_until(self._all_clustered, timeout=REJOIN_TIMEOUT, message=f"{victim.node} to rejoin the cluster")
        wait_until(
            self._members_back, timeout=REJOIN_TIMEOUT, message=f"{victim.node} to be a member of every quorum queue again"
        )
        leader = f", leader now {new_leader.node.split('@')[0]}" if new_leader is not None else ""
        return (
            f"RabbitMQ node {victim.node.split('@')[0]} ({target}) SIGKILLed, restarted after {FAILOVER_SECONDS:.0f} s{leader}; "
            f"back in every quorum queue after {time.monotonic() - started:.0f} s"
        )

    def leader_node(self) -> ClusterNode | None:
        """The node leading the persist queue now (None if no live node can tell)."""
        if not self.queues:
            return None
        for name, leader, _members, _online in self._quorum_status():
            if name == self.queues[0]:
                return self._node_named(leader)
        return None

    def consumers_node(self) -> ClusterNode | None:
        """The node holding the connection of a consumer of the persist queue (None if none)."""
        if not self.queues:
            return None
        try:
            output = self.ctl("list_consumers", "--quiet", "--no-table-headers", "queue_name", "channel_pid")
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            return None
        for line in output.splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[0] == self.queues[0]:
                match = re.search(r"<([^.>]+@[^.>]+)\.", fields[1])
                if match:
                    return self._node_named(match.group(1))
        return None

    def _node_named(self, name: str) -> ClusterNode | None:
        return next((node for node in self.nodes if node.node == name and node.running), None)

    def _quorum_status(self) -> list[tuple[str, str, set[str], set[str]]]:
        """(queue, leader, members, online members) of every quorum queue, asked of a live node."""
        try:
            output = self.ctl("list_queues", "--quiet", "--no-table-headers", "name", "type", "leader", "members", "online")
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            return []
        status = []
        for line in output.splitlines():
            fields = line.split("\t")
            if len(fields) == 5 and fields[1] == "quorum":
                members = set(re.findall(r"[\w.-]+@[\w.-]+", fields[3]))
                online = set(re.findall(r"[\w.-]+@[\w.-]+", fields[4]))
                status.append((fields[0], fields[2], members, online))
        return status

    def _members_back(self) -> bool:
        """Every quorum queue of ours has all three nodes online among its members."""
        everyone = {node.node for node in self.nodes}
        status = {name: online for name, _leader, _members, online in self._quorum_status()}
        return all(status.get(queue, set()) >= everyone for queue in self.queues if queue in status) and bool(status)

    def _all_clustered(self) -> bool:
        try:
            output = self.ctl("cluster_status", "--formatter", "json", timeout=20)
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            return False
        running = set(re.findall(r'"running_nodes":\[([^\]]*)\]', output)[0].replace('"', "").split(","))
        return running >= {node.node for node in self.nodes}

    # --- What the harness calls on a PrivateRabbit -----------------------------------------------------

    def live_node(self) -> ClusterNode:
        """A node that answers AMQP now (the first such): where the harness's questions go."""
        for node in self.nodes:
            if node.running and node._answers():
                return node
        raise RuntimeError("no node of the RabbitMQ cluster answers")

    @property
    def process(self) -> subprocess.Popen | None:
        """The first node's process while every node runs, else None: ``Cluster.heal`` then calls
        ``start``, which starts the nodes that are down."""
        return self.nodes[0].process if all(node.running for node in self.nodes) else None

    def ctl(self, *arguments: str, timeout: float = 60.0) -> str:
        return self.live_node().ctl(*arguments, timeout=timeout)

    def queue_counts(self, names: tuple[str, ...]) -> dict[str, tuple[int, int]] | None:
        """(ready, unacknowledged) of each named queue that exists. A quorum queue's statistics lag
        by seconds (``list_queues``): its ready count is asked over AMQP, which is exact."""
        try:
            node = self.live_node()
        except RuntimeError:
            return None
        counts = node.queue_counts(names)
        if counts is None:
            return None
        for name, (ready, unacknowledged) in counts.items():
            depth = node.depth(name)
            counts[name] = (depth[0] if depth is not None else ready, unacknowledged)
        return counts

    def depth(self, queue: str) -> tuple[int, int] | None:
        try:
            return self.live_node().depth(queue)
        except RuntimeError:
            return None

    def messages(self, queues: tuple[str, ...]) -> list[tuple[bytes | str, dict[str, Any]]] | None:
        try:
            return self.live_node().messages(queues)
        except RuntimeError:
            return None

    def held(self, queue: str) -> str:
        return self.nodes[0].held(queue)

    def refuse_publishes(self, queue: str) -> None:
        """A cluster-wide policy (set through any node): the quorum queue refuses new publishes and
        keeps what it holds (quorum queues never drop their head for ``reject-publish``)."""
        self.live_node().refuse_publishes(queue)

    def accept_publishes(self, queue: str) -> tuple[int, int]:
        return self.live_node().accept_publishes(queue)

    def pause(self) -> None:
        """SIGSTOP every node: the whole broker stops answering, as the single node's pause does."""
        for node in self.nodes:
            node.pause()

    def resume(self) -> None:
        for node in self.nodes:
            node.resume()

    def stop(self) -> None:
        """Stop every node gracefully (the harness's broker restart); ``start`` brings them back."""
        self._each(lambda node: node.stop(), [node for node in self.nodes if node.running])

    def stop_app(self) -> None:
        self._each(lambda node: node.stop_app(), [node for node in self.nodes if node.running])

    def start_app(self) -> None:
        # Together: a node whose application starts waits for the others' tables.
        self._each(lambda node: node.start_app(), [node for node in self.nodes if node.running])

    @staticmethod
    def _each(action: Callable[[ClusterNode], None], nodes: list[ClusterNode]) -> None:
        """``action`` on every node at once (a RabbitMQ node starting waits for its peers); the first
        error is raised once all have finished."""
        errors: list[BaseException] = []

        def run(node: ClusterNode) -> None:
            try:
                action(node)
            except BaseException as error:  # noqa: BLE001 - raised below, in the caller's thread
                errors.append(error)

        threads = [threading.Thread(target=run, args=(node,), daemon=True) for node in nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
