"""Shared fixtures: the toy program compiled once, and helpers that run requests alone or together."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the tests run from a checkout, installed or not
    sys.path.insert(0, str(ROOT))

from omni_cli.api import load  # noqa: E402

# An xdist worker is given COLUMNS (80) for its own output; omni reads COLUMNS as a terminal's width
# (cli/fit.py), so the commands the tests run would fit 80 columns where a serial run's pipe gets one line per row
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)

# The runtime's tests run the toy card: the command line's default is the Piper voice (tests/piper/)
os.environ.setdefault("OMNI_CARD", "qwen2_5_omni_toy")

# What omni_cli builds once per machine (the DiT compiled ahead of time: backends/hf/dit_aot.py) goes to a cache
# of the tests' own, shared by the workers and kept between runs, not the user's ~/.cache/omni_cli
os.environ.setdefault("OMNI_CLI_CACHE", str(Path(tempfile.gettempdir()) / f"omni_cli-tests-{os.getuid()}"))


# pytest-xdist (`-n 2` in pyproject.toml) runs the suite in two worker processes. A worker takes whole files,
# so a module's fixtures are built once, and the files of a group below share one worker: those that start
# Ray (one local cluster, not two) and those that load real-width checkpoints (the 3B build once, and the 7B
# shape's 11 GB never beside another real-width load). xdist's own `--dist loadgroup` does not group under
# pytest 9 (it renames node ids through an attribute pytest 9 no longer reads), hence this scheduler.
WORKER_GROUPS = {
    "ray": ("tests/hf/test_hf_placement.py", "tests/placement/test_placement_bench.py",
            "tests/placement/test_placement_runs.py", "tests/placement/test_replicas.py",
            "tests/placement/test_library.py"),
    "real_width": ("tests/hf/test_hf_memory.py", "tests/hf/test_hf_realwidth.py", "tests/hf/test_hf_realwidth_7b.py"),
}
GROUP_FIXTURES = {"ray": ("ray_cluster", "executors"), "real_width": ("realwidth_checkpoint", "checkpoint_7b")}
GROUP_OF_FILE = {path: group for group, paths in WORKER_GROUPS.items() for path in paths}
# The units (files, groups) that take longest on 2 cores, longest first: the scheduler gives these out first.
# Ranked by a whole run's `python -m pytest --durations=80` (a unit's tests summed); units not named here follow.
# The doc tests come second: they need no tiny checkpoint, so one worker runs them while the other builds it.
# The two files that compile the tiny checkpoint's DiT and BigVGAN in a fresh cache of their own come before
# the Ray group, whose first file loads the shipped card: their files go into the run's cache
# (hf_cards.share_with_the_run), so on a machine that has none yet the card's loads find them there instead
# of compiling each a second time.
LONGEST_FIRST = (
    "tests/hf/test_hf_dit_ahead.py",
    "tests/docs/test_doc_commands.py",
    "tests/hf/test_hf_bigvgan_ahead.py",
    "ray",
    "real_width",
    "tests/hf/test_hf_dit_compile.py",
    "tests/cli/test_reliability_cli.py",
    "tests/cli/test_exit_codes.py",
    "tests/hf/test_hf_dit_blocks.py",
)


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class FilesAndGroups(LoadScopeScheduling):
        """A file is a unit of work, a group's files one unit together."""

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return GROUP_OF_FILE.get(path, path)

        def _assign_work_unit(self, node) -> None:
            # the longest units first (then xdist's order, most tests first): the last to start are short, so
            # the two workers finish together instead of one running a long file alone at the end
            if not getattr(self, "_longest_first", False):
                rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
                units = sorted(self.workqueue.items(), key=lambda item: rank.get(item[0], len(rank)))
                self.workqueue.clear()
                self.workqueue.update(units)
                self._longest_first = True
            super()._assign_work_unit(node)

    return FilesAndGroups(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A file that uses a group's fixture must be in WORKER_GROUPS (else two Ray clusters, or two
    real-width loads at once, could start), and LONGEST_FIRST names groups and files that exist: checked at every
    collection, serial or not."""
    unknown = [unit for unit in LONGEST_FIRST if unit not in WORKER_GROUPS and not (ROOT / unit).is_file()]
    if unknown:
        raise pytest.UsageError(f"LONGEST_FIRST in tests/conftest.py names no group or file: {unknown}")
    for item in items:
        path = item.path.relative_to(ROOT).as_posix()
        for group, fixtures in GROUP_FIXTURES.items():
            if set(getattr(item, "fixturenames", ())) & set(fixtures) and GROUP_OF_FILE.get(path) != group:
                raise pytest.UsageError(f"{path} uses {group}'s fixtures: add it to WORKER_GROUPS[{group!r}] "
                                        "in tests/conftest.py")


@pytest.fixture(scope="session")
def toy():
    """The default card and program, compiled once (components hold no per-request state)."""
    return load("qwen2_5_omni_toy")


@pytest.fixture(scope="session")
def ray_cluster():
    """Ray for real (the `ray` extra), not a mock: one local cluster for every test that asks for it
    (tests/placement, tests/hf/test_hf_placement.py), started on first use."""
    import logging

    import ray

    # logical CPUs: two replicas of the toy card's five 1-CPU components, and what a test placed before them is
    # still giving back, must fit on a 2-core CI machine (the actors mostly wait)
    ray.init(num_cpus=16, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    yield ray
    ray.shutdown()
