"""Where each component runs: the card's `placement` section and the command line's overrides."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from .errors import IssueList, SpecError, SpecIssue
from .schema import bounded

EXECUTORS = ("inline", "thread", "process", "ray")
_DEVICE = re.compile(r"cpu|cuda(:\d+)?")
_ADDRESS = re.compile(r"(?P<host>[A-Za-z0-9_.\-\[\]:]+):(?P<port>\d+)")


@dataclass
class PlacementSpec:
    """One component's place: which executor runs its WorkUnits, on which device, with what resources."""

    executor: Literal["inline", "thread", "process", "ray"] = "inline"
    device: str | None = None  # cpu | cuda | cuda:N; None: the backend's own setting
    num_cpus: float | None = bounded(None, min=0.0, max=4096.0, doc="ray: CPUs the actor reserves (default 1)")
    num_gpus: float | None = bounded(None, min=0.0, max=64.0, doc="ray: GPUs the actor reserves (default 0)")
    num_threads: int = bounded(0, min=0, max=4096, doc="process, ray: the worker's intra-op threads; 0 leaves "
                                                      "the libraries' choice")
    workers: int = bounded(1, min=1, max=64, doc="process: workers of the component, each with its own copy of "
                                                 "the weights; a batch is split by request over them")

    @property
    def is_remote(self) -> bool:
        """Runs in another process: its inputs, outputs and first states are pickled across."""
        return self.executor in ("process", "ray")


def check_placement(placement: dict[str, PlacementSpec], components: dict[str, str], issues: IssueList,
                    line) -> None:
    """Rules between keys: names a declared component; a device the backend can use; Ray keys on Ray.

    `components` maps each component name to its backend; `line(key)` gives a key's line in the card.
    """
    for name, spec in placement.items():
        key = f"placement.{name}"
        backend = components.get(name)
        if backend is None:
            if issues.was_dropped(f"components.{name}"):  # declared, but left out for its own issue
                continue
            issues.add(line(key), key, f"names undeclared component {name!r} (components: {', '.join(components)})")
            continue
        if spec.device is not None:
            if not _DEVICE.fullmatch(spec.device):
                issues.add(line(f"{key}.device"), f"{key}.device", f"expected cpu, cuda or cuda:N, got {spec.device!r}")
            elif backend == "numpy" and spec.device != "cpu":
                issues.add(line(f"{key}.device"), f"{key}.device", "the numpy backend runs on cpu only")
        for field_name in ("num_cpus", "num_gpus"):
            if getattr(spec, field_name) is not None and spec.executor != "ray":
                issues.add(line(f"{key}.{field_name}"), f"{key}.{field_name}",
                           f"a Ray resource: only with executor ray (this one is {spec.executor})")
        if spec.workers > 1 and spec.executor != "process":
            issues.add(line(f"{key}.workers"), f"{key}.workers",
                       f"needs executor process (this one is {spec.executor})")
        if spec.num_threads and not spec.is_remote:
            # torch's and BLAS's thread pools are per process: a thread executor cannot size its own
            issues.add(line(f"{key}.num_threads"), f"{key}.num_threads",
                       f"needs its own process: executor process or ray (this one is {spec.executor})")


def override_placement(placement: dict[str, PlacementSpec], text: str, components: list[str]) -> dict[str, PlacementSpec]:
    """Apply `--placement KIND` (every component) or `--placement NAME=KIND,NAME=KIND` to a card's placement.

    Only the executor changes (and `process:N` sets N `workers`); a component's device and resources
    stay as the card says.
    """
    out = {name: placement.get(name, PlacementSpec()) for name in components}
    text = text.strip()
    pairs = [p.strip() for p in text.split(",")] if "=" in text else [f"{n}={text}" for n in components]
    for pair in pairs:
        name, equals, kind = pair.partition("=")
        name, kind = name.strip(), kind.strip()
        if not equals:
            raise _cli_error(f"expected KIND or NAME=KIND,NAME=KIND, got {pair!r}")
        if name not in out:
            raise _cli_error(f"unknown component {name!r} (components: {', '.join(components)})")
        kind, colon, count = kind.partition(":")
        if kind not in EXECUTORS:
            raise _cli_error(f"unknown executor {kind!r} (known: {', '.join(EXECUTORS)})")
        if colon and (kind != "process" or not count.isdigit() or not 1 <= int(count) <= 64):
            raise _cli_error(f"expected process:N (N workers, 1 to 64), got {pair.strip()!r}")
        spec = out[name]
        if kind != "ray" and (spec.num_cpus is not None or spec.num_gpus is not None):
            spec = replace(spec, num_cpus=None, num_gpus=None)  # the card's Ray resources do not apply
        if kind not in ("process", "ray"):
            spec = replace(spec, num_threads=0)
        if kind != "process" or colon:
            spec = replace(spec, workers=int(count) if colon else 1)
        out[name] = replace(spec, executor=kind)
    return out


def check_ray_address(address: str) -> str:
    """`auto` (join the cluster this machine is part of) or HOST:PORT; anything else is a SpecError."""
    address = address.strip()
    match = _ADDRESS.fullmatch(address)
    if address == "auto" or (match and 0 < int(match["port"]) < 65536):
        return address
    raise _cli_error(f"expected auto or HOST:PORT, got {address!r}", key="ray_address")


def _cli_error(message: str, key: str = "placement") -> SpecError:
    return SpecError([SpecIssue("<command line>", None, f"--{key.replace('_', '-')}", message)])
