"""A Redis Cluster of our own: three primaries with one replica each, on free loopback ports.

``PrivateRedisCluster`` stands in for ``PrivateRedis`` (``url``, ``start``, ``pause``, ``resume``,
``close``) and adds what a cluster can suffer: ``kill_primary`` SIGKILLs the primary of some slots,
waits until its replica has taken them over (``cluster_state:ok`` everywhere), then starts the killed
node again, which rejoins as the new primary's replica. ``lag_replica`` and ``kill_primary_behind``
make the partial rollback a failover can cause happen on purpose: the replica stops applying the
primary's writes, the primary dies, the replica is promoted holding only what it had applied.

Every node keeps an append-only file (``appendonly yes``), so a node that is restarted comes back
with what it had applied; a node's cluster state is in its own ``nodes.conf``.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

import redis

from torture.processes import free_port, wait_until

NODE_TIMEOUT_MS = 1500  # cluster-node-timeout: how long a silent primary is given before its replica takes over
PRIMARIES = 3


def _cluster_ok(connection: redis.Redis) -> bool:
    info = connection.execute_command("CLUSTER INFO")
    if isinstance(info, bytes | str):
        return "cluster_state:ok" in (info.decode() if isinstance(info, bytes) else info)
    return info.get("cluster_state") == "ok"


@dataclass
class Node:
    port: int
    bus_port: int
    directory: str
    process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def client(self, timeout: float = 1.0) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=timeout, socket_connect_timeout=timeout)

    def info(self, section: str) -> dict:
        with self.client() as connection:
            return connection.info(section)

    def answers(self) -> bool:
        try:
            with self.client(0.3) as connection:
                return bool(connection.ping())
        except redis.RedisError:
            return False


@dataclass
class PrivateRedisCluster:
    """Six redis-server processes forming one cluster (3 primaries, 1 replica each)."""

    node_timeout_ms: int = NODE_TIMEOUT_MS
    nodes: list[Node] = field(default_factory=list)
    binary: str = field(default_factory=lambda: shutil.which("redis-server") or "redis-server")
    root: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="memtest-rcluster-"))

    def __post_init__(self) -> None:
        if not self.nodes:
            for index in range(PRIMARIES * 2):
                directory = os.path.join(self.root, f"node-{index}")
                os.makedirs(directory, exist_ok=True)
                self.nodes.append(Node(port=free_port(), bus_port=free_port(), directory=directory))

    # --- What the service and the harness use ---------------------------------------------------

    @property
    def url(self) -> str:
        """Every node as a startup node (``REDIS_URL`` with ``MEMORY_REDIS_CLUSTER``)."""
        return ",".join(f"redis://{node.address}/0" for node in self.nodes)

    def service_env(self) -> dict[str, str]:
        return {"REDIS_URL": self.url, "MEMORY_REDIS_CLUSTER": "true"}

    @property
    def process(self) -> subprocess.Popen | None:
        """A running node (None when none runs), for code written against ``PrivateRedis``."""
        return next((node.process for node in self.nodes if node.alive), None)

    def start(self) -> None:
        created = os.path.exists(os.path.join(self.nodes[0].directory, "created"))
        for node in self.nodes:
            if created:
                self._start_node(node)  # a node of the cluster keeps its ports: the others know it by them
            else:
                self._start_new_node(node)
        if not created:
            subprocess.run(
                [
                    shutil.which("redis-cli") or "redis-cli",
                    "--cluster",
                    "create",
                    *[node.address for node in self.nodes],
                    "--cluster-replicas",
                    "1",
                    "--cluster-yes",
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=60,
            )
            open(os.path.join(self.nodes[0].directory, "created"), "w").close()
        wait_until(self.healthy, timeout=60, message="the private Redis Cluster to be ok, with a replica per primary")

    def _start_new_node(self, node: Node, *, attempts: int = 3) -> None:
        """Start a node not yet in the cluster; one whose port another process took between
        ``free_port`` and its start (an outgoing connection's ephemeral port) exits at once, and
        starts again on other ports."""
        for attempt in range(attempts):
            try:
                self._start_node(node)
                return
            except AssertionError:
                if node.process is None or node.process.poll() is None or attempt == attempts - 1:
                    raise
                node.port, node.bus_port = free_port(), free_port()

    def _start_node(self, node: Node) -> None:
        if node.alive:
            return
        node.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(node.port),
                "--cluster-port",
                str(node.bus_port),
                "--bind",
                "127.0.0.1",
                "--dir",
                node.directory,
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                str(self.node_timeout_ms),
                # A replica takes over however long it was cut off from its primary (the default
                # refuses after a long partition, leaving the slots down).
                "--cluster-replica-validity-factor",
                "0",
                # The slots of the other primaries stay served while one primary is being replaced.
                "--cluster-require-full-coverage",
                "no",
                "--appendonly",
                "yes",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def started() -> bool:
            if not node.alive:
                raise AssertionError(f"redis node {node.address} exited with {node.process.returncode}")
            return node.answers()

        wait_until(started, timeout=10, message=f"redis node {node.address} to answer")

    def healthy(self) -> bool:
        """Every node up, the cluster ok on each, three primaries each with a replica in sync."""
        try:
            if not all(node.alive for node in self.nodes):
                return False
            for node in self.nodes:
                with node.client() as connection:
                    if not _cluster_ok(connection):
                        return False
            primaries = self.primaries()
            if len(primaries) != PRIMARIES:
                return False
            for primary in primaries:
                replica = self.replica_of(primary)
                if replica is None or replica.info("replication").get("master_link_status") != "up":
                    return False
            return True
        except redis.RedisError:
            return False

    def topology(self) -> list[dict]:
        """CLUSTER NODES as a live node sees it: id, address, role, master id, flags, one dict each."""
        for node in self.nodes:
            if not node.alive:
                continue
            try:
                with node.client() as connection:
                    described = connection.execute_command("CLUSTER NODES")  # parsed: address -> fields
            except redis.RedisError:
                continue
            found = []
            for address, fields in described.items():
                flags = set(fields["flags"].split(","))
                found.append(
                    {
                        "id": fields["node_id"],
                        "port": int(address.rsplit(":", 1)[1]),
                        "primary": "master" in flags,
                        "master_id": fields["master_id"],
                        "failed": bool(flags & {"fail", "fail?"}),
                    }
                )
            return found
        return []

    def _node(self, port: int) -> Node:
        return next(node for node in self.nodes if node.port == port)

    def primaries(self) -> list[Node]:
        return [self._node(entry["port"]) for entry in self.topology() if entry["primary"] and not entry["failed"]]

    def replica_of(self, primary: Node) -> Node | None:
        entries = self.topology()
        primary_id = next((entry["id"] for entry in entries if entry["port"] == primary.port), None)
        return next(
            (self._node(entry["port"]) for entry in entries if entry["master_id"] == primary_id and not entry["failed"]),
            None,
        )

    def primary_of(self, key: str) -> Node:
        """The node serving ``key``'s slot now."""
        live = next(node for node in self.nodes if node.alive)
        with live.client() as connection:
            slot = int(connection.execute_command("CLUSTER KEYSLOT", key))
            for start, end, owner, *_ in connection.execute_command("CLUSTER SLOTS"):
                if start <= slot <= end:
                    return self._node(int(owner[1]))
        raise LookupError(f"no node serves the slot of {key}")

    # --- Faults ---------------------------------------------------------------------------------

    def kill_primary(self, rng: random.Random, primary: Node | None = None) -> str:
        """SIGKILL a primary; wait until its replica serves its slots and the cluster is ok; start the
        killed node again and wait until it is the new primary's replica, in sync."""
        primary = primary or rng.choice(self.primaries())
        replica = self.replica_of(primary)
        if replica is None:
            raise RuntimeError(f"primary {primary.address} has no replica to promote; heal() the cluster first")
        started = time.monotonic()
        primary.process.kill()
        primary.process.wait(timeout=10)
        self._promoted(replica)
        promoted = time.monotonic() - started
        self._start_node(primary)
        wait_until(self.healthy, timeout=60, message=f"{primary.address} to rejoin as a replica of {replica.address}")
        return (
            f"SIGKILL Redis primary {primary.address}; replica {replica.address} promoted in {promoted:.1f} s; "
            f"the killed node rejoined as its replica ({time.monotonic() - started:.1f} s in all)"
        )

    def _promoted(self, replica: Node, timeout: float = 20.0) -> None:
        """Wait until ``replica`` is a primary and the cluster is ok; if the election has not happened
        by half the time (slow machine), the replica takes over by itself (CLUSTER FAILOVER TAKEOVER)."""

        def promoted() -> bool:
            try:
                with replica.client() as connection:
                    if connection.info("replication").get("role") != "master":
                        return False
                    return _cluster_ok(connection)
            except redis.RedisError:
                return False

        try:
            wait_until(promoted, timeout=timeout / 2, message=f"{replica.address} to be promoted")
        except AssertionError:
            with replica.client() as connection:
                connection.execute_command("CLUSTER FAILOVER", "TAKEOVER")
            wait_until(promoted, timeout=timeout / 2, message=f"{replica.address} to take over")

    def lag_replica(self, primary: Node) -> Node:
        """Stop the replica of ``primary`` applying its writes (SIGSTOP): what the primary writes from
        now on reaches no replica, as with a replica lagging behind."""
        replica = self.replica_of(primary)
        os.kill(replica.process.pid, signal.SIGSTOP)
        return replica

    def kill_primary_behind(self, primary: Node, replica: Node) -> None:
        """``primary`` dies while ``replica`` lags (``lag_replica``): the replica restarts holding only
        what it had applied (the writes in flight to it are lost, as they would be on the wire) and
        takes the slots over. The killed primary starts again and rejoins as its replica, dropping the
        writes no one else holds."""
        primary.process.kill()
        primary.process.wait(timeout=10)
        os.kill(replica.process.pid, signal.SIGKILL)
        replica.process.wait(timeout=10)
        replica.process = None
        self._start_node(replica)

        def taken_over() -> bool:
            try:
                with replica.client() as connection:
                    if connection.info("replication").get("role") != "master":
                        connection.execute_command("CLUSTER FAILOVER", "TAKEOVER")
                        return False
                    return _cluster_ok(connection)
            except redis.RedisError:
                return False

        wait_until(taken_over, timeout=30, message=f"{replica.address} to take over from {primary.address}")
        self._start_node(primary)
        wait_until(self.healthy, timeout=60, message=f"{primary.address} to rejoin as a replica")

    def restart_empty(self) -> None:
        raise NotImplementedError(
            "A Redis Cluster does not restart empty as a whole: use kill_primary (a failover), or the single "
            "topology for the restart-empty faults."
        )

    def pause(self) -> None:
        """SIGSTOP every node: Redis does not answer at all."""
        for node in self.nodes:
            if node.alive:
                os.kill(node.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        for node in self.nodes:
            if node.alive:
                os.kill(node.process.pid, signal.SIGCONT)

    def heal(self) -> None:
        """Every node running, none stopped, the cluster ok with a replica per primary (safe to call twice)."""
        self.resume()
        for node in self.nodes:
            self._start_node(node)
        wait_until(self.healthy, timeout=60, message="the private Redis Cluster to heal")

    def stop(self) -> None:
        for node in self.nodes:
            if node.alive:
                os.kill(node.process.pid, signal.SIGCONT)
                node.process.kill()
                node.process.wait(timeout=10)
            node.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
