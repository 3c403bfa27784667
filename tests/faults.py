"""The real processes fault tests start and break (they live in ``torture.processes``, shared with
the torture harness)."""

from torture.processes import (
    ARTIFACTS,
    ROOT,
    CeleryWorker,
    PrivateRedis,
    ServiceProcess,
    TcpProxy,
    WebServer,
    children,
    free_port,
    wait_until,
)

__all__ = [
    "ARTIFACTS",
    "ROOT",
    "CeleryWorker",
    "PrivateRedis",
    "ServiceProcess",
    "TcpProxy",
    "WebServer",
    "children",
    "free_port",
    "wait_until",
]
