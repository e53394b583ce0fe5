"""Replicas: N whole engines for a job bigger than one (worker processes, or Ray actors), as one pool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .pool import ReplicaPool, close_replicas
from .transports import ProcessReplica, RayReplica

__all__ = ["ReplicaPool", "start_replicas"]


def start_replicas(program: Any, make_engine: Callable[[], Any], count: int, *, policy: str,
                   ray=None, resources: dict[str, float] | None = None) -> ReplicaPool:
    """Start `count` replicas at once (Ray actors when `ray` is given, else spawned processes), wait
    until every engine is built, and pool them; stops the ones started if any fails to start."""
    replicas: list = []
    try:
        for index in range(count):
            replicas.append(RayReplica(index, make_engine, resources or {}, ray) if ray is not None
                            else ProcessReplica(index, make_engine))
        origins = [replica.wait_started() for replica in replicas]
    except BaseException:
        for replica in replicas:
            replica.kill()
        close_replicas(replicas)
        raise
    return ReplicaPool(program, replicas, origins, policy)
