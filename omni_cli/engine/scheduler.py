"""Scheduling policies: in which order one tick runs its groups of plans."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..loops import WorkPlan

POLICIES = ("latency-first", "round-robin")


@dataclass
class Group:
    batch_key: tuple
    stage: int
    plans: list[WorkPlan] = field(default_factory=list)


def group_plans(plans: Sequence[tuple[WorkPlan, int]], max_batch: int) -> list[Group]:
    """Plans with equal batch keys form groups of at most `max_batch`, in first-seen order."""
    groups: dict[tuple, list[Group]] = {}
    ordered: list[Group] = []
    for plan, stage in plans:
        bucket = groups.setdefault(plan.batch_key, [])
        if not bucket or len(bucket[-1].plans) >= max_batch:
            bucket.append(Group(plan.batch_key, stage))
            ordered.append(bucket[-1])
        bucket[-1].plans.append(plan)
    return ordered


def order_groups(groups: list[Group], policy: str) -> list[Group]:
    """latency-first: the stage nearest the audio output first; round-robin: as the requests came."""
    if policy == "latency-first":
        return sorted(groups, key=lambda g: -g.stage)  # stable: ties keep request order
    if policy == "round-robin":
        return groups
    raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")
