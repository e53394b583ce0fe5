"""Scheduling policies: in which order one tick runs its groups of plans."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..loops import WorkPlan

POLICIES = ("latency-first", "round-robin")


class Entry(NamedTuple):
    """A plan and whose it is: the request, the loop and the loop state it advances."""

    plan: WorkPlan
    stage: int
    request: Any
    loop: Any
    state: Any


@dataclass
class Group:
    batch_key: tuple
    stage: int
    entries: list[Entry] = field(default_factory=list)


def group_plans(entries: Sequence[Entry], max_batch: int) -> list[Group]:
    """Plans with equal batch keys form groups of at most `max_batch`, in first-seen order."""
    groups: dict[tuple, Group] = {}
    ordered: list[Group] = []
    for entry in entries:
        key = entry.plan.batch_key
        group = groups.get(key)
        if group is None or len(group.entries) >= max_batch:
            group = groups[key] = Group(key, entry.stage)
            ordered.append(group)
        group.entries.append(entry)
    return ordered


def order_groups(groups: list[Group], policy: str) -> list[Group]:
    """latency-first: the stage nearest the audio output first; round-robin: as the requests came."""
    if policy == "latency-first":
        if len(groups) < 2:
            return groups
        return sorted(groups, key=lambda g: -g.stage)  # stable: ties keep request order
    if policy == "round-robin":
        return groups
    raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")
